#!/usr/bin/env bash
# Runs htsim's benchmark scenario (128 hosts, k=8 fat-tree, 100 Gbit/s, 1 us hops,
# one-BDP queues, permutation of 32 MB flows) and reports what the simulator costs:
# data packets and events per wall-clock second, and peak resident memory.
#
#   bench/sim/run_perf.sh [BUILD_DIR] [TRANSPORT...]
#   bench/sim/run_perf.sh --htsim DIR [BUILD_DIR]
#
# BUILD_DIR defaults to build-sim; transports default to every one built in (gbn, the
# test-only go-back-N transport, is always there). Extra mroce-sim arguments can be
# passed through PERF_ARGS, e.g. PERF_ARGS='--set workload.0.bytes=4MB'. Every transport
# runs twice: on one thread, and split over PARTITIONS threads (scenario key
# `partitions`) where it can be.
#
# --htsim DIR: DIR is a build of htsim (github.com/ultraethernet/uet-htsim: its checkout,
# with htsim_uec built anywhere below it). Runs htsim_uec on its own shipped 128-node
# permutation and fat-tree files with the flows scaled to 32 MB, beside mroce-sim's
# htsim-perm with MetaRoCE on one thread and on PARTITIONS partitions (and on each
# number of MPI ranks in RANKS, e.g. RANKS='2 4', when the build has MPI), alternating
# for ROUNDS rounds (default 2), and writes the side-by-side table into
# docs/SIMULATOR.md (between the htsim-table markers) as well as printing it. The table
# also carries each run's flow completion times (every flow starts at 0 in both), the
# same in every round (the runs are deterministic) and the same on N ranks as on N
# partitions; the event order, and so the figures, differ between partition counts.
# HOSTS=1024 runs the same at htsim's 1,024-node scale instead: its k=16 fat-tree and
# its shipped permutation of 2 MB flows, beside htsim-perm at k=16 with 2 MB flows and,
# as in htsim's file, 200 Gbit/s between switches (markers htsim-table-1024); HOSTS=8192
# its 8,192-node fat-tree and permutation of 1 MB flows beside htsim-perm at k=32
# (markers htsim-table-8192); HOSTS=11664 a k=36 fat-tree written in the form of that
# file, with a permutation of 1 MB flows from htsim's own gen_permutation.py (markers
# htsim-table-11664).
set -euo pipefail
cd "$(dirname "$0")/../.."
htsim=
if [ "${1:-}" = --htsim ]; then
  htsim=${2:?--htsim needs the directory of an htsim build}
  shift 2
fi
build=${1:-build-sim}
shift || true
# Always brought up to date: a binary left from other sources would measure them.
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
parts=${PARTITIONS:-$(nproc)}
((parts >= 2)) || parts=2

# One mroce-sim run: LABEL SIM TRANSPORT [ARGS...]; a line of figures into $out/rows.
run() {
  local label=$1 sim=$2 t=$3
  shift 3
  rm -f "$out/run.json"
  # shellcheck disable=SC2086
  if ! /usr/bin/time -v -o "$out/time.txt" "$@" "$sim" run htsim-perm --transport "$t" \
    --no-progress -q --json "$out/run.json" ${SCALE_ARGS:-} ${PERF_ARGS:-} ${SIM_ARGS:-} \
    2>"$out/err.txt"; then
    printf '%-10s %s\n' "$label" "not run: $(grep -m1 -i 'error\|failed' "$out/err.txt")"
    return
  fi
  python3 - "$out/run.json" "$label" <<'PY' | tee -a "$out/rows"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
s = run["simulator"]
f = run["fct"]
print(f'{sys.argv[2]:<10} {s["wall_seconds"]:10.2f} {s["events"]:12d} '
      f'{s["events_per_second"]:14.0f} {s["data_packets_sent"]:12d} '
      f'{s["data_packets_per_second"]:14.0f} {s["peak_rss_bytes"] / 2**20:10.1f} {run["complete"]} '
      f'{f["p50_us"]:9.1f} {f["p99_us"]:9.1f} {f["max_us"]:9.1f}')
PY
}

if [ -z "$htsim" ]; then
  cmake --build "$build" --target mroce-sim-gbn -j 2 >/dev/null
  sim="$build/bench/sim/mroce-sim-gbn"
  transports=("$@")
  if [ ${#transports[@]} -eq 0 ]; then
    mapfile -t transports < <("$sim" transports | awk '{print $1}')
  fi
  printf '%-10s %10s %12s %14s %12s %14s %10s %s %9s %9s %9s\n' run wall_s events events/s \
    data_pkts data_pkts/s rss_MB complete fct_p50 fct_p99 fct_max
  for t in "${transports[@]}"; do run "$t" "$sim" "$t"; done
  for t in "${transports[@]}"; do SIM_ARGS="--set partitions=$parts" run "$t/$parts" "$sim" "$t"; done
  exit 0
fi

# Side by side with htsim_uec.
[ -d "$htsim" ] || {
  echo "run_perf.sh: --htsim $htsim: no such directory" >&2
  exit 2
}
hosts=${HOSTS:-128}
case $hosts in
  128)
    cm_name=perm_128n_128c_2MB.cm topo_name=fat_tree_128_1os.topo
    flow_bytes=32000000 marker="htsim-table"
    ;;
  1024)
    cm_name=perm_1024n_1024c_0u_2000000b.cm topo_name=fat_tree_1024_1os.topo
    flow_bytes=2000000 marker="htsim-table-1024"
    # htsim's fat_tree_1024_1os.topo runs its switch-to-switch links at 200 Gbit/s (the
    # hosts send at 100): the same here, or the two fabrics differ by half their core.
    SCALE_ARGS="--set topology.k=16 --set topology.fabric_link_rate=200Gbps"
    SCALE_ARGS+=" --set workload.0.bytes=$flow_bytes"
    ;;
  8192)
    # fat_tree_8192_1os.topo: 100 Gbit/s everywhere, as a k=32 fat-tree.
    cm_name=perm_8192n_8192c_1MB.cm topo_name=fat_tree_8192_1os.topo
    flow_bytes=1000000 marker="htsim-table-8192"
    SCALE_ARGS="--set topology.k=32 --set workload.0.bytes=$flow_bytes"
    ;;
  11664)
    # htsim ships no file at this scale: a k=36 fat-tree in the form of its 8,192-node
    # one, and a permutation from its own generator (seed 1), written below.
    cm_name=gen_permutation.py topo_name=fat_tree_8192_1os.topo
    flow_bytes=1000000 marker="htsim-table-11664"
    SCALE_ARGS="--set topology.k=36 --set workload.0.bytes=$flow_bytes"
    ;;
  *)
    echo "run_perf.sh: HOSTS=$hosts: 128, 1024, 8192 or 11664" >&2
    exit 2
    ;;
esac
uec=$(find "$htsim" -type f -name htsim_uec -perm -u+x -print -quit)
cm=$(find "$htsim" -type f -name "$cm_name" -print -quit)
topo=$(find "$htsim" -type f -name "$topo_name" -print -quit)
for f in uec cm topo; do
  if [ -z "${!f}" ]; then
    echo "run_perf.sh: --htsim $htsim: no htsim_uec binary, $cm_name or $topo_name below it" >&2
    exit 2
  fi
done
uec=$(realpath "$uec")
topo=$(realpath "$topo")
# htsim stops when every flow is done or at -end (us; its default, 1 ms, is too soon).
# htsim's own permutation, its flows set to mroce-sim's size (10^6 bytes per MB).
if ((hosts == 11664)); then
  python3 "$cm" "$out/perm.cm" 11664 11664 "$flow_bytes" 0 1 >/dev/null
  topo="$out/fat_tree_11664_1os.topo"
  tier() {  # TIER DOWN [UP]
    printf '\nTier %s\n' "$1"
    (($# > 2)) && printf 'Oversubscribed 1\n'
    printf 'Downlink_speed_Gbps 100\nRadix_Down %s\n' "$2"
    (($# > 2)) && printf 'Radix_Up %s\n' "$3"
    printf 'Downlink_Latency_ns 1000\nSwitch_Latency_ns 0\n'
    (($1 > 0)) && printf 'Bundle 1\n'
    return 0
  }
  { printf 'Nodes 11664\nTiers 3\nPodsize 324\n'; tier 0 18 18; tier 1 18 18; tier 2 36; } >"$topo"
else
  sed -E "s/size [0-9]+/size $flow_bytes/" "$cm" >"$out/perm.cm"
fi
cmake --build "$build" --target mroce-sim -j 2 >/dev/null
sim="$build/tools/sim/mroce-sim"
mpirun=$(command -v mpirun || true)
launch=()
if [ -n "$mpirun" ]; then
  launch=("$mpirun")
  version=$("$mpirun" --allow-run-as-root --version 2>&1 || true)
  if [[ $version == *OpenRTE* || $version == *"Open MPI"* || $version == *open-mpi.org* ]]; then
    launch+=(--allow-run-as-root --oversubscribe)
  fi
fi

# One htsim_uec run, in a directory of its own (it writes its log into the current one).
run_htsim() {
  mkdir -p "$out/htsim"
  if ! (cd "$out/htsim" && /usr/bin/time -v -o "$out/htime.txt" "$uec" \
    -tm "$out/perm.cm" -topo "$topo" -end 1000000 >"$out/hout.txt" 2>&1); then
    echo "run_perf.sh: htsim_uec failed: $(tail -1 "$out/hout.txt")" >&2
    exit 1
  fi
  python3 - "$out/hout.txt" "$out/htime.txt" "$hosts" <<'PY' | tee -a "$out/rows"
import re, sys
text = open(sys.argv[1]).read()
tm = open(sys.argv[2]).read()
m = re.search(r"New: (\d+) Rtx: (\d+)", text)
data = int(m.group(1)) + int(m.group(2))
# Every flow of htsim's permutation files starts at 0: its finish time is its FCT (us).
fcts = sorted(float(t) for t in re.findall(r"^Flow .* finished at ([\d.]+)", text, re.M))
flows = len(fcts)
pct = lambda q: fcts[min(len(fcts) - 1, int(q * len(fcts)))]
w = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", tm)
wall = int(w.group(1) or 0) * 3600 + int(w.group(2)) * 60 + float(w.group(3))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tm).group(1))
print(f'{"htsim_uec":<10} {wall:10.2f} {"-":>12} {"-":>14} {data:12d} '
      f'{data / wall:14.0f} {rss / 1024:10.1f} {flows == int(sys.argv[3])} '
      f'{pct(0.5):9.1f} {pct(0.99):9.1f} {fcts[-1]:9.1f}')
PY
}

rounds=${ROUNDS:-2}
printf '%-10s %10s %12s %14s %12s %14s %10s %s %9s %9s %9s\n' run wall_s events events/s \
  data_pkts data_pkts/s rss_MB complete fct_p50 fct_p99 fct_max
for ((i = 0; i < rounds; ++i)); do
  run_htsim
  run mroce "$sim" mroce
  SIM_ARGS="--set partitions=$parts" run "mroce/$parts" "$sim" mroce
  for n in ${RANKS:-}; do
    if [ ${#launch[@]} -eq 0 ]; then
      echo "run_perf.sh: RANKS given but no mpirun" >&2
      break
    fi
    SIM_ARGS="--set partitions=$n" run "mroce/${n}r" "$sim" mroce "${launch[@]}" -np "$n"
  done
done

# The table: ranges over the rounds, and each run's ratio to htsim's run of its round.
python3 - "$out/rows" "$rounds" "$parts" "${RANKS:-}" <<'PY' >"$out/table.md"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rounds, parts, ranks = int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
per_round = len(rows) // rounds
by_label, ratio = {}, {}
for r in range(rounds):
    chunk = rows[r * per_round:(r + 1) * per_round]
    h = next(c for c in chunk if c[0] == "htsim_uec")
    for c in chunk:
        by_label.setdefault(c[0], []).append(c)
        ratio.setdefault(c[0], []).append(float(c[5]) / float(h[5]))
def rng(vals, fmt):
    lo, hi = min(vals), max(vals)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}–{fmt(hi)}"
names = {"htsim_uec": "htsim_uec (UET, 1 thread)", "mroce": "mroce-sim, MetaRoCE, 1 thread",
         f"mroce/{parts}": f"mroce-sim, MetaRoCE, {parts} partitions"}
for n in ranks:
    names[f"mroce/{n}r"] = f"mroce-sim, MetaRoCE, {n} MPI ranks"
print("| run | wall s | events | data packets | data packets / wall s | x htsim | peak RSS MB | complete "
      "| FCT p50 / p99 / max us | FCT max / htsim's |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
h_max = float(by_label["htsim_uec"][0][10])
for label, runs in by_label.items():
    col = lambda i: [float(x[i]) for x in runs]
    events = "–" if runs[0][2] == "-" else rng(col(2), lambda v: f"{v / 1e6:.2f} M")
    print(f"| {names.get(label, label)} | {rng(col(1), lambda v: f'{v:.2f}')} | {events} | "
          f"{rng(col(4), lambda v: f'{v / 1e6:.3f} M')} | {rng(col(5), lambda v: f'{v / 1e3:.0f}k')} | "
          f"{rng(ratio[label], lambda v: f'{v:.2f}')} | {rng(col(6), lambda v: f'{v:.0f}')} | "
          f"{'yes' if all(x[7] == 'True' for x in runs) else 'no'} | "
          f"{rng(col(8), lambda v: f'{v:.0f}')} / {rng(col(9), lambda v: f'{v:.0f}')} / "
          f"{rng(col(10), lambda v: f'{v:.0f}')} | {rng([v / h_max for v in col(10)], lambda v: f'{v:.2f}')} |")
PY
echo
cat "$out/table.md"
doc=docs/SIMULATOR.md
if grep -q "<!-- $marker begin -->" "$doc"; then
  python3 - "$doc" "$out/table.md" "$marker" <<'PY'
import sys
doc, table, marker = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
text = open(doc).read()
a = text.index(f"<!-- {marker} begin -->") + len(f"<!-- {marker} begin -->\n")
b = text.index(f"<!-- {marker} end -->")
open(doc, "w").write(text[:a] + table + text[b:])
PY
  echo "(written into $doc)"
fi
