#!/usr/bin/env bash
# Runs the experiments E1 to E5 in the simulator with both transports (MetaRoCE and the
# RoCEv2 baseline, same fabric, workload and seed) and writes docs/results/simulator.md
# with tables and plots (docs/results/img/sim-*.png, rendered with gnuplot).
#
#   bench/sim/results.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build-sim (configured if new; mroce-sim is always brought up to
# date). The raw outputs (JSON, CSV) go to a temporary directory, kept when RESULTS_KEEP=DIR
# names one.
# QUICK=1 shrinks the sweeps (for trying the script, not for the document).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-sim}
sim="$build/tools/sim/mroce-sim"
# Always brought up to date: a binary left from other sources would measure them.
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target mroce-sim -j 2 >/dev/null
if [ -n "${RESULTS_KEEP:-}" ]; then
  out=$RESULTS_KEEP
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
: >"$out/runs.tsv"

# run ID SCENARIO [--set key=value ...]: both transports, JSON and CSV into $out/ID.
run() {
  local id=$1 scenario=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  "$sim" run "$scenario" --transport "${transport:-both}" --no-progress -q \
    --json "$out/$id.json" --csv "$out/$id" "$@"
  end=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$id" "$scenario" "$*" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" >>"$out/runs.tsv"
  echo "results: $id done" >&2
}

losses=(0 0.001 0.01 0.05 0.1)
planes=(1 2 4 8)
incast=(16 128 1000)
seeds=(2 3 4 5) # E2 again with other seeds (MetaRoCE alone): the slowest flow varies
if [ -n "${QUICK:-}" ]; then
  losses=(0 0.01 0.1)
  seeds=(2)
  planes=(1 2)
  incast=(16 128)
fi

total_start=$(date +%s)
run e1-allreduce e1-allreduce
run e1-alltoall e1-alltoall
# Both engines' retransmission timers default to 1 ms, long for a fabric of 8 us round
# trips; the "fast" runs scale them to 100 us (MetaRoCE min_rto, RoCE ack_timeout).
fast=(--set transport.mroce.min_rto=100us --set transport.roce.ack_timeout=100us)
for l in "${losses[@]}"; do run "e2-loss-$l" e2-loss --set "loss.rate=$l"; done
for l in 0 0.01 0.1; do run "e2-fast-$l" e2-loss --set "loss.rate=$l" "${fast[@]}"; done
for l in "${losses[@]}"; do
  for s in "${seeds[@]}"; do
    transport=mroce run "e2-seed-$l-$s" e2-loss --set "loss.rate=$l" --set "seed=$s"
  done
done
for p in "${planes[@]}"; do run "e3-planes-$p" e3-multiplane --set "topology.planes=$p"; done
# E3's scaling again with other seeds (MetaRoCE alone): its start and tail vary with them.
for s in "${seeds[@]}"; do
  for p in 1 "${planes[-1]}"; do
    transport=mroce run "e3-seed-$p-$s" e3-multiplane --set "topology.planes=$p" --set "seed=$s"
  done
done
run e4-plane-failure e4-plane-failure
run e4-fast e4-plane-failure "${fast[@]}"
for n in "${incast[@]}"; do run "e5-incast-$n" e5-incast --set "workload.0.senders=$n"; done
total_end=$(date +%s)

python3 bench/sim/results_report.py "$out" docs/results \
  --sim-version "$(git describe --always --dirty 2>/dev/null || echo unknown)" \
  --total-wall "$((total_end - total_start))"
echo "results: wrote docs/results/simulator.md and docs/results/img/sim-*.png" >&2
