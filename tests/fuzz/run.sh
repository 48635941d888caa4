#!/bin/sh
# Runs one fuzz target for a few seconds from a scratch copy of its seed corpus (the
# tree is never written), prints the coverage libFuzzer reached and fails below a floor.
#   run.sh TARGET SEED_DIR SCRATCH_DIR SECONDS MIN_EDGES
set -eu
if [ $# -ne 5 ]; then
  echo "usage: run.sh TARGET SEED_DIR SCRATCH_DIR SECONDS MIN_EDGES" >&2
  exit 2
fi
target=$1 seeds=$2 scratch=$3 seconds=$4 floor=$5
rm -rf "$scratch"
mkdir -p "$scratch"
if [ -d "$seeds" ]; then
  cp "$seeds"/* "$scratch"/ 2>/dev/null || true
fi
log=$scratch.log
status=0
"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$scratch" >"$log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 60 "$log"
  echo "$(basename "$target"): fuzzer exited with status $status" >&2
  exit 1
fi
# libFuzzer's last status line: "#N DONE cov: E ft: F corp: ..."
final=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
edges=$(echo "$final" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
features=$(echo "$final" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
if [ -z "$edges" ]; then
  tail -n 20 "$log"
  echo "$(basename "$target"): no final coverage line in the fuzzer's output" >&2
  exit 1
fi
echo "$(basename "$target"): coverage: $edges edges, $features features ($final)"
if [ "$edges" -lt "$floor" ]; then
  echo "$(basename "$target"): coverage $edges edges is below the floor of $floor" >&2
  exit 1
fi
