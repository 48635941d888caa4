#!/usr/bin/env bash
# A run split over MPI ranks gives the same result as the same partitions on threads of
# one process: the JSON reports are compared, all but the simulator's own figures (wall
# time, peak memory). 2 and 4 ranks of one partition each, and 2 ranks of two threads;
# MetaRoCE with loss, and RoCEv2 with PFC frames crossing between ranks; WRITEs and SENDs.
#   tests/sim/mpi_matches_threads.sh MROCE_SIM MPIRUN
set -euo pipefail
sim=$1
mpirun=$2
launch=("$mpirun")
# Open MPI refuses root and more ranks than cores unless told (and as root, it says so
# even to --version).
version=$("$mpirun" --allow-run-as-root --version 2>&1 || true)
if [[ $version == *"Open MPI"* || $version == *"open-mpi.org"* || $version == *OpenRTE* ]]; then
  launch+=(--allow-run-as-root --oversubscribe)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
transports=(mroce)
grep -q '^roce ' <<<"$("$sim" transports)" && transports+=(roce)
compare() { # THREADS.json RANKS.json
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for doc in (a, b):
    for run in doc["runs"]:
        run.pop("simulator")
if a != b:
    for ra, rb in zip(a["runs"], b["runs"]):
        for k in ra:
            if ra[k] != rb[k]:
                print(f"  {k}: threads {str(ra[k])[:160]}\n  {k}: ranks   {str(rb[k])[:160]}")
    sys.exit(1)
PY
}
failed=0
for t in "${transports[@]}"; do
  for op in write send; do
    for cfg in "2 2" "4 4" "2 4"; do
      read -r ranks parts <<<"$cfg"
      args=(run htsim-perm --transport "$t" --set "partitions=$parts" --set "workload.0.op=$op"
        --set workload.0.bytes=256KB --set loss.rate=0.001 -q --no-progress)
      rm -f "$out/threads.json" "$out/ranks.json"
      "$sim" "${args[@]}" --json "$out/threads.json"
      "${launch[@]}" -np "$ranks" "$sim" "${args[@]}" --json "$out/ranks.json"
      if compare "$out/threads.json" "$out/ranks.json"; then
        echo "same: $t $op, $parts partitions over $ranks ranks"
      else
        echo "DIFFERENT: $t $op, $parts partitions over $ranks ranks"
        failed=1
      fi
    done
  done
done
exit $failed
