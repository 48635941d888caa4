#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the demonstration.
# Extra arguments go to mroce-demo (see mroce-demo --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release >/dev/null
exec build/tools/demo/mroce-demo "$@"
