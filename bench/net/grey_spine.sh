#!/usr/bin/env bash
# bench/net/grey_spine.sh: is a grey spine's remaining capacity worth using? On the
# 4-spine testbed (4 x 1 Gbit/s HTB, MTU 4200), one spine drops LOSS% (default 30) of
# what crosses it both ways, the others nothing. Three WRITE transfers of S seconds each,
# alternating, REPEAT times (16 paths on 16 source ports): "healthy" (no loss, the
# reference), "used" (the grey spine as the stack treats it) and "abandoned" (the same
# spine black-holed instead: its paths fail within milliseconds and move to the three
# clean spines, which is what leaving the grey spine would give). Prints a markdown
# table: goodput median and range, retransmits, path failures and re-entropies.
#   bench/net/grey_spine.sh [--build DIR] [--loss PCT] [--seconds S] [--repeat N]
# Needs root (network namespaces).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
loss=30
seconds=8
repeat=3
while (($#)); do
  case $1 in
    --build) build=$2 ;;
    --loss) loss=$2 ;;
    --seconds) seconds=$2 ;;
    --repeat) repeat=$2 ;;
    *)
      echo "grey_spine.sh: unknown option '$1' (--build, --loss, --seconds, --repeat)" >&2
      exit 2
      ;;
  esac
  shift 2 || { echo "grey_spine.sh: $1 needs a value" >&2; exit 2; }
done
perf=$build/tools/perf/mroce-perf
testbed=$root/tools/testbed/testbed
[[ -x $perf ]] || { echo "grey_spine.sh: $perf is not built (target mroce-perf)" >&2; exit 2; }
(($(id -u) == 0)) || { echo "grey_spine.sh: needs root (network namespaces)" >&2; exit 2; }
name_tb=greyspine
tb() { "$testbed" --name "$name_tb" "$@"; }
work=$(mktemp -d)
trap 'tb down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
tb down >/dev/null 2>&1 || true
tb up --spines 4 --rate 1000 --mtu 4200 >/dev/null
h1=$(tb addr h1) h2=$(tb addr h2)
grey=1
base=41000
mapfile -t map < <(paste -d' ' <(seq "$base" $((base + 15))) <(tb spine-of h1 h2 $(seq "$base" $((base + 15)))))
spine_json=$(printf '%s\n' "${map[@]}" | awk '{printf "%s\"%s\": %s", sep, $1, $2; sep=", "} BEGIN {printf "{"} END {print "}"}')
echo "grey_spine.sh: paths per spine at set-up: $(printf '%s\n' "${map[@]}" | awk '{n[$2]++} END {for (s in n) printf "%s:%s ", s, n[s]}')" >&2

run() { # NAME: one transfer
  local name=$1
  tb exec h2 -- "$perf" server --once >"$work/$name.server" 2>&1 &
  local server=$!
  sleep 0.3
  timeout 120 "$testbed" --name "$name_tb" exec h1 -- "$perf" client "$h2" --addr "$h1" \
    --paths 16 --src-ports 16 --src-port-base "$base" -D "$seconds" --interval 0.5 \
    --json "$work/$name.json" >"$work/$name.log" 2>&1
  wait "$server"
}
for ((r = 0; r < repeat; r++)); do
  tb heal all
  run "healthy-$r"
  tb impair --spine "$grey" --loss "$loss"
  run "used-$r"
  tb heal all
  # Black-holed from 0.5 s until 1 s before the end, so that the side channel (TCP over
  # the same fabric) can report.
  (sleep 0.5 && tb fail spine "$grey" && sleep $((seconds - 2)) && tb heal spine "$grey") &
  run "abandoned-$r"
  wait
done
tb heal all
python3 - "$work" "$repeat" "$grey" "$spine_json" "$loss" "$seconds" <<'PY'
import json, statistics, sys
work, repeat, grey, spine, loss = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
seconds = float(sys.argv[6])
print(f"| case ({loss}% loss on spine {grey}) | goodput Gbit/s from 1 s to {seconds - 1:g} s, median (range) | retransmits, median | path failures, all runs | re-entropies, all runs |")
print("|---|---|---|---|---|")
for case in ("healthy", "used", "abandoned"):
    runs = [json.load(open(f"{work}/{case}-{r}.json")) for r in range(repeat)]
    # The mean over [1 s, S - 1 s): the grey or black-holed part of every run.
    g = [statistics.mean(x for t, x in d["results"][0]["series"] if 1 <= t < seconds - 1)
         for d in runs]
    c = [d["client"]["connections"][0] for d in runs]
    retx = [d["client"]["counters"]["tx_retransmits"] for d in runs]
    print(f"| {case} | {statistics.median(g):.2f} ({min(g):.2f} - {max(g):.2f}) | "
          f"{int(statistics.median(retx)):,} | {sum(x['path_failures'] for x in c)} | "
          f"{sum(x['reentropies'] for x in c)} |")
PY
