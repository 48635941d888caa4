#!/usr/bin/env bash
# Runs htsim's benchmark scenario (128 hosts, k=8 fat-tree, 100 Gbit/s, 1 us hops,
# one-BDP queues, permutation of 32 MB flows) and reports what the simulator costs:
# data packets and events per wall-clock second, and peak resident memory.
#
#   bench/sim/run_perf.sh [BUILD_DIR] [TRANSPORT...]
#
# BUILD_DIR defaults to build-sim; transports default to every one built in (gbn, the
# test-only go-back-N transport, is always there). Extra mroce-sim arguments can be
# passed through PERF_ARGS, e.g. PERF_ARGS='--set workload.0.bytes=4MB'. Every transport
# runs twice: on one thread, and split over PARTITIONS threads (scenario key
# `partitions`) where it can be.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-sim}
shift || true
# Always brought up to date: a binary left from other sources would measure them.
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target mroce-sim-gbn -j 2 >/dev/null
sim="$build/bench/sim/mroce-sim-gbn"
transports=("$@")
if [ ${#transports[@]} -eq 0 ]; then
  mapfile -t transports < <("$sim" transports | awk '{print $1}')
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Each transport on one partition, then split over PARTITIONS threads (default: the
# machine's cores, at least 2) where the transport allows it (not with PFC).
parts=${PARTITIONS:-$(nproc)}
((parts >= 2)) || parts=2
printf '%-10s %10s %12s %14s %14s %10s %s\n' run wall_s events events/s data_pkts/s rss_MB complete
run() { # LABEL TRANSPORT [ARGS...]
  local label=$1 t=$2
  shift 2
  # shellcheck disable=SC2086
  if ! /usr/bin/time -v -o "$out/time.txt" "$sim" run htsim-perm --transport "$t" --no-progress -q \
    --json "$out/$t.json" ${PERF_ARGS:-} "$@" 2>"$out/err.txt"; then
    printf '%-10s %s\n' "$label" "not run: $(grep -m1 'error' "$out/err.txt")"
    return
  fi
  rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$out/time.txt")
  python3 - "$out/$t.json" "$rss_kb" "$label" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
s = run["simulator"]
print(f'{sys.argv[3]:<10} {s["wall_seconds"]:10.2f} {s["events"]:12d} '
      f'{s["events_per_second"]:14.0f} {s["data_packets_per_second"]:14.0f} '
      f'{int(sys.argv[2]) / 1024:10.1f} {run["complete"]}')
PY
}
for t in "${transports[@]}"; do run "$t" "$t"; done
for t in "${transports[@]}"; do run "$t/$parts" "$t" --set "partitions=$parts"; done
echo "reference: htsim needs 8-15 s and ~56 MB for this scenario (~100,000 data packets/s)"
