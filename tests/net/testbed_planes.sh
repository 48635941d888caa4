#!/usr/bin/env bash
# Two planes: a plane failed mid-transfer is survived with no error seen by the
# application, traffic moving to the other plane; when it heals, its paths come back.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

testbed_start netplanes --spines 4 --planes 2 --rate 1000 --mtu 4200
server_start --addr "$(tb addr h2 0)" --addr "$(tb addr h2 1)"
(sleep 1.5 && tb fail plane 1 && sleep 2 && tb heal plane 1) &
chaos=$!
client plane --addr "$(tb addr h1 0)" --addr "$(tb addr h1 1)" -D 6 --interval 0.1 --check
wait "$chaos"
server_wait

conn='d["client"]["connections"][0]'
[[ $(json "$WORK/plane.json" "${conn}[\"planes\"]") == 2 ]] || fail "the connection does not use two planes"
failures=$(json "$WORK/plane.json" "${conn}[\"plane_failures\"]")
((failures >= 1)) || fail "plane 1 failed but no plane failure was counted"
events=$(json "$WORK/plane.json" '" ".join(e["kind"].replace(" ", "_") + ":" + str(e["plane"]) for e in d["client"]["events"])')
[[ $events == *plane_down:1* ]] || fail "no 'plane down' event for plane 1: $events"
[[ $events == *plane_up:1* ]] || fail "plane 1 did not come back after healing: $events"
active=$(json "$WORK/plane.json" "sum(1 for p in ${conn}[\"path_stats\"] if p[\"plane\"] == 1 and p[\"state\"] == \"active\")")
((active >= 1)) || fail "no path of plane 1 is active after healing"
during=$(json "$WORK/plane.json" 'sum(g for t, g in d["results"][0]["series"] if 2.5 <= t < 3.5)')
[[ $(python3 -c "print($during > 0)") == True ]] || fail "no goodput while plane 1 was down"
ok "plane 1 failed at 1.5 s and healed at 3.5 s: no error, $failures plane failure(s), $active plane-1 paths active again"
