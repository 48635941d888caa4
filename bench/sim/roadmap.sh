#!/usr/bin/env bash
# Runs the roadmap scenarios (scale-across, scale-across-a2a, kv-cache) with both
# transports side by side, and a single flow between the data centers at several path
# counts and per-path windows, and prints the tables of
# docs/results/simulator-roadmap.md (Markdown, on stdout) and renders its FCT plots into
# docs/results/img (gnuplot).
#
#   bench/sim/roadmap.sh [BUILD_DIR]      (default build; mroce-sim is brought up to date)
#
# RESULTS_KEEP=DIR keeps the raw JSON and CSV. Each run is niced; they run one at a time.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
sim="$build/tools/sim/mroce-sim"
cmake --build "$build" --target mroce-sim -j 2 >/dev/null
if [ -n "${RESULTS_KEEP:-}" ]; then
  out=$RESULTS_KEEP
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi

# run ID TRANSPORTS SCENARIO [--set key=value ...]
run() {
  local id=$1 transports=$2 scenario=$3
  shift 3
  nice -n 5 "$sim" run "$scenario" --transport "$transports" --no-progress -q \
    --json "$out/$id.json" --csv "$out/$id" "$@"
  echo "roadmap: $id done" >&2
}

run sa-1ms both scale-across
run sa-10ms both scale-across --set topology.long_haul_delay=10ms
run sa-1ms-iw16m both scale-across --set transport.mroce.initial_window=16MiB
# The same rings started once every connection is up, as a collective's first step is.
run sa-1ms-up both scale-across --set workload.0.start=5ms
run sa-10ms-up both scale-across --set topology.long_haul_delay=10ms --set workload.0.start=25ms
# And with the paths fixed at 16 (max_paths as in the other scenarios).
run sa-1ms-up-16 both scale-across --set workload.0.start=5ms --set transport.mroce.max_paths=0
run sa-10ms-up-16 both scale-across --set topology.long_haul_delay=10ms \
  --set workload.0.start=25ms --set transport.mroce.max_paths=0
run a2a-1ms both scale-across-a2a
run kv both kv-cache
# One 256 MiB WRITE from dc0 to dc1 (4 hosts, 2 per data center), the connection window
# started at 64 MiB so that slow start does not hide the per-path limit.
one=(--set topology.hosts=4 --set workload.0.kind=incast --set workload.0.receiver=2
  --set workload.0.senders=1 --set workload.0.bytes=256MiB)
for d in 1ms 10ms; do
  run "one-$d-roce" roce scale-across-a2a "${one[@]}" --set "topology.long_haul_delay=$d"
  for pw in 16:128 16:256 64:256 256:256; do
    run "one-$d-mroce-${pw/:/-}" mroce scale-across-a2a "${one[@]}" \
      --set "topology.long_haul_delay=$d" --set transport.mroce.initial_window=64MiB \
      --set "transport.mroce.paths=${pw%:*}" --set "transport.mroce.path_window_packets=${pw#*:}" \
      --set transport.mroce.max_paths=0
  done
  # 16 paths opening more as the window needs (the scenario's max_paths = 256).
  run "one-$d-mroce-grow" mroce scale-across-a2a "${one[@]}" \
    --set "topology.long_haul_delay=$d" --set transport.mroce.initial_window=64MiB
done

python3 bench/sim/roadmap_report.py "$out" docs/results/img
