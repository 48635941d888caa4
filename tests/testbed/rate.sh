#!/usr/bin/env bash
# The HTB bottleneck: a spine's port delivers its rate and no more; lifting the rate of
# that spine lifts the limit. MTU: a large MTU carries large datagrams unfragmented, and a
# per-spine MTU lands on both ends of that spine's links.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

start tbrate --rate 10 --queue 50 --mtu 4200
port=40000
spine=$(tb spine-of h1 h2 "$port")

# 1,200-byte payloads (1,228 bytes with headers) at 3,000/s offer 29.5 Mbit/s for one
# second against 10 Mbit/s: a low rate, so that even a busy machine offers well above it.
out=$(probe h1 h2 --sport "$port" --size 1200 --pps 3000 --count 3000)
mbit=$(field rx_mbit_s "$out")
within "$mbit" 8.5 11.5 || fail "10 Mbit/s bottleneck delivered $mbit Mbit/s: $out"
(($(field lost "$out") > 0)) || fail "nothing was dropped beyond the 50-packet queue: $out"
ok "10 Mbit/s per spine port: received $mbit Mbit/s of up to 29.5 offered, $(field lost "$out") dropped"

tb impair --spine "$spine" --rate 0
out=$(probe h1 h2 --sport "$port" --size 1200 --pps 3000 --count 3000)
mbit=$(field rx_mbit_s "$out")
# A busy machine may pace the sender below its 29.5 Mbit/s (it never catches up after a
# stall), so the check is that the spine now carries more than the limited run's ceiling
# and loses nothing, not that the whole offer arrives.
within "$mbit" 12 40 || fail "without the limit on spine $spine: $mbit Mbit/s ($out)"
[[ $(field lost "$out") == 0 ]] || fail "packets lost without a limit: $out"
ok "rate lifted on spine $spine: received $mbit Mbit/s, nothing lost"

# MTU 4200: 4,100-byte datagrams cross whole (one packet each at the spine).
tb counters --reset
out=$(probe h1 h2 --sport "$port" --size 4100 --count 100)
[[ $(field received "$out") == 100 ]] || fail "4100-byte datagrams at MTU 4200: $out"
[[ $(counter 0 "$spine" 'a>b' in) == 100 ]] || fail "4100-byte datagrams were fragmented"
ok "MTU 4200 carries 4100-byte datagrams whole"

tb impair --spine "$spine" --mtu 1500
mtu() { tb exec "$1" cat "/sys/class/net/$2/mtu"; } # NODE DEV
for node in "p0-la s$spine" "p0-s$spine la" "p0-s$spine lb" "p0-lb s$spine"; do
  read -r n dev <<<"$node"
  [[ $(mtu "$n" "$dev") == 1500 ]] || fail "$n $dev has not MTU 1500"
done
[[ $(mtu p0-la "s$((spine % 4 + 1))") == 4200 ]] || fail "another spine's MTU changed"
tb heal spine "$spine"
[[ $(mtu p0-la "s$spine") == 4200 ]] || fail "heal did not restore the MTU"
ok "per-spine MTU set on both ends of its links, and healed"
