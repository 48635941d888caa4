#!/usr/bin/env bash
# Installs dependencies, builds the release and the ASan+UBSan trees, and runs every
# test not labelled slow in both; then the net, verbs and sim tests (the code with
# threads) in the ThreadSanitizer tree. Extra arguments go to ctest (e.g. -L engine).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
scripts/build.sh asan
scripts/build.sh tsan
status=0
failed=()
echo "== release tests"
ctest --test-dir build --output-on-failure -LE slow -j "$(nproc)" "$@" || failed+=(build)
echo "== asan+ubsan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -LE slow -j "$(nproc)" "$@" || failed+=(build-asan)
echo "== tsan tests (net, verbs, sim)"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -L '^(net|verbs|sim)$' -LE slow \
  -j "$(nproc)" "$@" || failed+=(build-tsan)
# The last lines of a long run are what a reader sees first: name every failure there.
for tree in "${failed[@]}"; do
  status=1
  echo "== FAILED in $tree:"
  sed 's/^/   /' "$tree/Testing/Temporary/LastTestsFailed.log" 2>/dev/null || echo "   (no test list)"
done
[ "$status" -eq 0 ] && echo "== all three trees passed"
exit $status
