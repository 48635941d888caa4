#!/usr/bin/env bash
# The stack on the 4-spine testbed (1 Gbit/s per spine port, MTU 4200): a transfer at 1%
# loss completes byte-exact, one at 2% fails no path; a spine black-holed mid-transfer is survived without the
# application seeing an error, the counters showing the re-entropy; CE marks on one
# spine move traffic off its paths.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

testbed_start nettransfer --spines 4 --rate 1000 --mtu 4200
h1=$(tb addr h1)
# 16 paths on exactly 16 known source ports, so we know which spine each one crosses.
paths=(--paths 16 --src-ports 16 --src-port-base 41000)

tb impair --all --loss 1
server_start
client loss --addr "$h1" "${paths[@]}" -D 3 --check
server_wait
[[ $(json "$WORK/loss.json" 'd["check_passed"]') == True ]] || fail "1% loss: bytes differ"
retx=$(json "$WORK/loss.json" 'd["client"]["counters"]["tx_retransmits"]')
((retx > 0)) || fail "1% loss but no retransmission"
ok "1% loss on every spine: WRITE for 3 s, byte-exact, $retx retransmits"
server_start
client loss-send --addr "$h1" "${paths[@]}" --test send -s 100000 -n 2000 --check
server_wait
ok "1% loss: SEND byte-exact"

# 2% random loss on every spine and nothing black-holed: every path loses alike, so no
# path may be failed (a new port would lose the same).
tb impair --all --loss 2
server_start
client loss2 --addr "$h1" "${paths[@]}" -D 5 --check
server_wait
[[ $(json "$WORK/loss2.json" 'd["check_passed"]') == True ]] || fail "2% loss: bytes differ"
failures=$(json "$WORK/loss2.json" 'd["client"]["connections"][0]["path_failures"]')
reent=$(json "$WORK/loss2.json" 'd["client"]["connections"][0]["reentropies"]')
# Under a sanitizer the stack is slow enough for three timeouts in a row now and then
# (seen once: 1 path failure); a release build must have none.
allowed=0
[[ ${SANITIZED:-0} == 1 ]] && allowed=1
((failures <= allowed)) || fail "2% random loss on every spine: $failures path failures ($reent re-entropies)"
ok "2% loss on every spine: WRITE for 5 s, byte-exact, $failures path failures ($reent re-entropies)"
tb impair --all --loss 0

# The spine carrying most of our paths goes black mid-transfer, from 1.5 s to 4.5 s (it
# is healed before the end so that the side channel, TCP over the same fabric, can
# report the results).
read -r victim count < <(spine_ports 41000 16 | awk '{n[$2]++} END {for (s in n) print s, n[s]}' |
  sort -k2,2nr | head -1)
server_start
(sleep 1.5 && tb fail spine "$victim" && sleep 3 && tb heal spine "$victim") &
failer=$!
client blackhole --addr "$h1" "${paths[@]}" -D 5 --interval 0.1 --check
wait "$failer"
server_wait
tb heal all
failures=$(json "$WORK/blackhole.json" 'd["client"]["connections"][0]["path_failures"]')
reent=$(json "$WORK/blackhole.json" 'd["client"]["connections"][0]["reentropies"]')
((failures >= 1 && reent >= 1)) || fail "spine $victim black-holed: path failures $failures, re-entropies $reent"
# Goodput in the last second of the black hole, against the second before it.
before=$(json "$WORK/blackhole.json" 'round(sum(g for t, g in d["results"][0]["series"] if 0.5 <= t < 1.5) / 10, 2)')
after=$(json "$WORK/blackhole.json" 'round(sum(g for t, g in d["results"][0]["series"] if 3.5 <= t < 4.5) / 10, 2)')
[[ $(python3 -c "print($after >= 0.25 * $before)") == True ]] ||
  fail "goodput did not come back after the black hole: $after vs $before (Gb/s, mean of 0.1 s samples)"
ok "spine $victim ($count of 16 paths) black-holed 1.5-4.5 s: no error, $failures path failures, $reent re-entropies, goodput $after Gb/s against $before Gb/s before"

# CE marks on one spine: its paths should carry less than the others. A window cut
# steers traffic only where windows bind, so the spines run at 100 Mbit/s here: a
# sanitized sender on a loaded machine moves about 0.5 Gbit/s, and at 1 Gbit/s a spine
# its windows seldom filled (its marked paths then kept 0.81-0.87 of the others' share).
tb impair --all --rate 100
tb impair --spine "$victim" --ce-rate 500 --ce-burst 4
server_start --rx-ecn-threshold 0
client ce --addr "$h1" "${paths[@]}" -D 3
server_wait
tb impair --spine "$victim" --ce-rate 0
tb impair --all --rate 1000
mapfile -t map < <(spine_ports 41000 16)
spine_of_json=$(printf '%s\n' "${map[@]}" | awk '{printf "%s\"%s\": %s", sep, $1, $2; sep=", "} BEGIN {printf "{"} END {print "}"}')
verdict=$(python3 - "$WORK/ce.json" "$victim" "$spine_of_json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); victim = int(sys.argv[2]); spine = json.loads(sys.argv[3])
bound = 0.6
paths = d["client"]["connections"][0]["path_stats"]
marked = [p for p in paths if spine.get(str(p["src_port"])) == victim]
clear = [p for p in paths if spine.get(str(p["src_port"])) != victim]
avg = lambda ps: sum(p["tx_packets"] for p in ps) / max(len(ps), 1)
ce = sum(p["ce_packets"] for p in marked)
ok = marked and clear and ce > 0 and avg(marked) < bound * avg(clear)
print(f"{'ok' if ok else 'bad'} marked paths {len(marked)} avg {avg(marked):.0f} packets, "
      f"others {len(clear)} avg {avg(clear):.0f}, CE reported {ce}")
PY
)
[[ $verdict == ok* ]] || fail "CE on spine $victim: $verdict"
ok "CE marks on spine $victim: ${verdict#ok }"
