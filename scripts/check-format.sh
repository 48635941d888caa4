#!/usr/bin/env bash
# Fails, naming the files, when a C++ source differs from what clang-format makes of it
# with the project's .clang-format. Fix with: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || {
  echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
}
bad=()
while IFS= read -r -d '' f; do
  clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
done < <(find src include tests tools bench \( -name '*.cc' -o -name '*.h' \) -print0 | sort -z)
if ((${#bad[@]})); then
  printf 'not formatted: %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: every source is formatted"
