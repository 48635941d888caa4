#!/usr/bin/env bash
# CE marking as a phantom queue: ECN-capable packets beyond the configured rate are
# marked CE, packets below it never are, and packets that are not ECN-capable never are.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# Without RPS each packet crosses the fabric within the sender's own send call, so the
# spine sees the sender's pacing; with RPS a busy CPU can hold packets back and release
# them as one burst, which a phantom queue rightly marks.
start tbce --no-rps
tb impair --all --ce-rate 2000 --ce-burst 100
port=40000
spine=$(tb spine-of h1 h2 "$port")

# Below the rate (1,000/s against 2,000/s): no mark at all. The probe paces without
# catching up after a stall, so it never bursts beyond the bucket.
out=$(probe h1 h2 --sport "$port" --pps 1000 --count 600)
[[ $(field received "$out") == 600 && $(field ce "$out") == 0 ]] || fail "below the rate: $out"
ok "1000/s against a 2000/s limit: none of 600 packets marked"

# Above the rate (5,000/s for one second). The bucket lets through at most
# 2000/s x duration + 100 packets, so at least the rest is marked; at most (5000 - 2000) /
# 5000 = 60% is, when the sender keeps its pace. On a busy machine the sender may be
# slower, which only lowers the share, so the duration measured bounds it from below.
check_marks() { # WHAT REPORT
  local ce secs low high
  ce=$(field ce "$2") secs=$(field rx_seconds "$2")
  [[ $(field received "$2") == 5000 ]] || fail "$1: packets lost: $2"
  low=$(awk -v s="$secs" 'BEGIN { v = 5000 - 2000 * s - 100; printf "%d", (v > 0 ? v : 0) - 150 }')
  high=$((3000 + 150))
  ((ce >= low && ce <= high)) || fail "$1 at 5000/s against 2000/s: $ce marked, expected $low..$high ($2)"
  ok "$1 at 5000/s against 2000/s: $ce of 5000 marked (expected $low..$high over ${secs}s)"
}
tb counters --reset
out=$(probe h1 h2 --sport "$port" --pps 5000 --count 5000)
check_marks "ECT(0)" "$out"
nft_ce=$(counter 0 "$spine" 'a>b' ce)
((nft_ce == $(field ce "$out"))) || fail "the probe saw $(field ce "$out") CE marks, spine $spine counted $nft_ce"
ok "the marks are spine $spine's"

check_marks "ECT(1)" "$(probe h1 h2 --sport "$port" --pps 5000 --count 5000 --ecn ect1)"

out=$(probe h1 h2 --sport "$port" --pps 5000 --count 5000 --ecn not-ect)
[[ $(field ce "$out") == 0 && $(field not_ect "$out") == 5000 ]] || fail "not-ECT packets were marked: $out"
ok "5000/s not ECN-capable: none marked"

tb heal
out=$(probe h1 h2 --sport "$port" --count 3000)
[[ $(field ce "$out") == 0 && $(field received "$out") == 3000 ]] || fail "marks after heal: $out"
ok "heal removes the marking"
