#!/usr/bin/env bash
# Installs dependencies, builds the release and the ASan+UBSan trees, and runs every
# test not labelled slow in both. Extra arguments go to ctest (e.g. -L engine).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
scripts/build.sh asan
status=0
echo "== release tests"
ctest --test-dir build --output-on-failure -LE slow -j "$(nproc)" "$@" || status=1
echo "== asan+ubsan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -LE slow -j "$(nproc)" "$@" || status=1
exit $status
