#!/usr/bin/env bash
# The fabric comes up with the namespaces, addresses and settings asked for, carries
# traffic between hosts on every plane, and goes away completely; 'down' is idempotent
# and a failed 'up' leaves nothing behind.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

TB=tbupdown
tb down >/dev/null || fail "'down' of an instance that is not up must succeed"
trap 'tb down >/dev/null 2>&1 || true' EXIT

# A failure in the middle of 'up' removes what was built.
if MROCE_TESTBED_FAIL_UP=1 tb up >/dev/null 2>&1; then fail "'up' with an injected failure succeeded"; fi
[[ -z $(ip netns list | grep "^$TB-" || true) ]] || fail "a failed 'up' left namespaces behind"
tb status >/dev/null 2>&1 && fail "a failed 'up' left a state behind"
ok "a failed up cleans up after itself"

start tbupdown --hosts 3 --spines 2 --planes 2
count=$(ip netns list | grep -c "^$TB-")
((count == 3 + 2 * (2 + 2))) || fail "expected 11 namespaces, found $count"
ok "3 hosts + 2 planes x (2 leaves + 2 spines) = $count namespaces"

[[ $(tb addr h1) == 10.77.0.1 && $(tb addr h2) == 10.77.1.2 && $(tb addr h3) == 10.77.0.3 ]] ||
  fail "plane 0 addresses: $(tb addr h1) $(tb addr h2) $(tb addr h3)"
[[ $(tb addr h1 1) == 10.77.16.1 && $(tb addr h2 1) == 10.77.17.2 ]] || fail "plane 1 addresses"
ip -4 addr show | grep -q '10\.77\.' && fail "an address was configured in the root namespace"
ok "addresses, none in the root namespace"

status=$(tb status) || fail "'status' of an instance that is up exits non-zero"
grep -q "h2  leaf b" <<<"$status" || fail "status does not list the hosts: $status"
grep -q "$TB-p1-s2" <<<"$status" || fail "status does not list the routers: $status"
ok "status"

# Traffic crosses the spines of each plane (h1, h3 on leaf a; h2 on leaf b) and stays on
# the leaf between h1 and h3.
for pair in "h1 h2 0" "h2 h1 0" "h1 h2 1" "h3 h2 1" "h1 h3 0"; do
  read -r src dst plane <<<"$pair"
  out=$(probe "$src" "$dst" --plane "$plane" --sport 40000-40007 --count 25)
  [[ $(field received "$out") == 200 ]] || fail "$src -> $dst on plane $plane: $out"
done
ok "every host reaches every other on each plane"

# The hosts' segmentation offloads are off and RPS is on, unless asked otherwise.
grep -q 'generic-segmentation-offload: off' <<<"$(tb exec h1 -- ethtool -k eth0)" || fail "GSO is on on h1"
mask=$(tb exec h1 -- cat /sys/class/net/eth0/queues/rx-0/rps_cpus)
[[ $mask =~ [1-9a-f] ]] || fail "RPS is off on h1 eth0 ($mask)"
ok "offloads off, RPS on"

if tb up >/dev/null 2>&1; then fail "a second 'up' of the same instance succeeded"; fi
ok "a second up is refused"

# 'down' ends what still runs inside and removes every namespace and the state.
tb exec h2 -- sleep 60 2>/dev/null &
sleeper=$!
disown
sleep 0.3
tb down >/dev/null
[[ -z $(ip netns list | grep "^$TB-" || true) ]] || fail "'down' left namespaces behind"
for _ in 1 2 3 4 5 6 7 8 9 10; do
  kill -0 "$sleeper" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$sleeper" 2>/dev/null && fail "'down' left a process running in a namespace"
if tb status >/dev/null; then fail "'status' after 'down' exits 0"; else rc=$?; fi
((rc == 3)) || fail "'status' after 'down' exits $rc, not 3"
tb down >/dev/null || fail "a second 'down' failed"
ok "down removes everything and is idempotent"
