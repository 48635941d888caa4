#!/usr/bin/env bash
# Runs clang-tidy with the project's .clang-tidy on C++ sources and fails on any finding.
#   scripts/tidy.sh             the .cc files changed against main (committed or not); a
#                               changed header brings in the .cc file beside it
#   scripts/tidy.sh FILE...     those files
#   scripts/tidy.sh --all       every source of the build
# Uses BUILD_DIR/compile_commands.json (BUILD_DIR defaults to build; scripts/build.sh
# makes it). JOBS sets the parallel runs (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
db=$build/compile_commands.json
command -v clang-tidy >/dev/null || {
  echo "tidy: clang-tidy is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
}
[[ -f $db ]] || {
  echo "tidy: $db is missing; run scripts/build.sh first" >&2
  exit 2
}

# The sources the build knows, relative to the repository.
root=$(pwd)
mapfile -t known < <(python3 -c '
import json, os, sys
for e in json.load(open(sys.argv[1])):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if f.startswith(sys.argv[2] + "/"): print(os.path.relpath(f, sys.argv[2]))
' "$db" "$root" | sort -u)

if [[ ${1:-} == --all ]]; then
  files=("${known[@]}")
elif (($#)); then
  files=("$@")
else
  base=$(git merge-base main HEAD)
  mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" -- '*.cc' '*.h' '*.c')
  files=()
  for f in "${changed[@]}"; do
    [[ $f == *.h ]] && f=${f%.h}.cc
    files+=("$f")
  done
fi

# Keep the files the build compiles; say which others are left out.
declare -A compiled=()
for f in "${known[@]}"; do compiled[$f]=1; done
targets=()
for f in "${files[@]}"; do
  if [[ -n ${compiled[$f]:-} ]]; then
    targets+=("$f")
  elif [[ -e $f && $f != *.h ]]; then
    echo "tidy: $f is not in $db, skipped" >&2
  fi
done
if ((${#targets[@]} == 0)); then
  echo "tidy: no sources to check"
  exit 0
fi

echo "tidy: checking ${#targets[@]} file(s)"
if printf '%s\0' "${targets[@]}" |
  xargs -0 -n 1 -P "${JOBS:-$(nproc)}" clang-tidy -p "$build" --quiet \
    2> >(grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' >&2); then
  echo "tidy: no findings"
else
  echo "tidy: findings above" >&2
  exit 1
fi
