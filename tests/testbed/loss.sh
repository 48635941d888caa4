#!/usr/bin/env bash
# Random loss per spine: ~1% and ~10% measured end to end, within a tolerance of about
# five standard deviations, and matching what the spines counted as dropped; loss on one spine and one direction touches only the ports hashed onto it.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# Without RPS each packet crosses the fabric within the sender's own send call, so no
# kernel backlog queue (1000 packets per CPU, shared with whatever else the machine runs)
# can overflow and add losses of its own; pacing leaves room for a busy machine too.
start tbloss --no-rps
ports=40000-40015 # 16 ports

softnet_drops() { # packets the kernel dropped because a CPU's backlog queue was full
  local _ dropped sum=0
  while read -r _ dropped _; do sum=$((sum + 16#$dropped)); done </proc/net/softnet_stat
  echo "$sum"
}

measure() { # PCT PACKETS_PER_PORT LOW HIGH: measured loss (percent) within [LOW, HIGH]
  local out sent received lost nft_lost k pct backlog
  tb impair --all --loss "$1"
  tb counters --reset
  backlog=$(softnet_drops)
  out=$(probe h1 h2 --sport "$ports" --count "$2" --pps 10000)
  backlog=$(($(softnet_drops) - backlog))
  sent=$(field sent "$out") received=$(field received "$out")
  lost=$((sent - received))
  pct=$(awk -v l="$lost" -v s="$sent" 'BEGIN { printf "%.3f", 100 * l / s }')
  within "$pct" "$3" "$4" ||
    fail "loss $1%: measured $pct% ($lost of $sent), outside [$3, $4]; kernel backlog drops meanwhile: $backlog"
  nft_lost=0
  for k in 1 2 3 4; do nft_lost=$((nft_lost + $(counter 0 "$k" 'a>b' lost))); done
  # Every lost packet must be one the loss rule dropped (a few more may die in host
  # queues on a busy machine, hence the slack of 0.1% of the packets).
  ((lost >= nft_lost && lost - nft_lost <= sent / 1000)) ||
    fail "loss $1%: the probe lost $lost packets, the spines dropped $nft_lost, kernel backlog $backlog"
  ok "loss $1%: measured $pct% ($lost of $sent), spines dropped $nft_lost"
}

# 20,000 packets at 1% (sd 0.07%) and 8,000 at 10% (sd 0.34%): about 5 sd either side.
measure 1 1250 0.6 1.4
measure 10 500 8.4 11.6

# 50% on spine 2, from leaf a to leaf b only: ports on other spines lose nothing, and
# nothing is lost the other way.
tb heal
tb impair --spine 2 --dir a2b --loss 50
mapfile -t on2 < <(tb ports h1 h2 2 --count 2)
mapfile -t off2 < <(tb ports h1 h2 3 --count 2)
out=$(probe h1 h2 --sport "$(IFS=,; echo "${on2[*]},${off2[*]}")" --count 400 --per-port)
for port in "${on2[@]}"; do
  within "$(port_received "$port" "$out")" 140 260 || fail "port $port via spine 2 at 50% loss: $out"
done
for port in "${off2[@]}"; do
  [[ $(port_received "$port" "$out") == 400 ]] || fail "port $port via spine 3 lost packets: $out"
done
out=$(probe h2 h1 --sport 41000-41015 --count 50)
[[ $(field lost "$out") == 0 ]] || fail "loss set for a->b hit b->a: $out"
ok "loss on one spine and direction hits only the ports hashed onto it, one way"

tb heal
out=$(probe h1 h2 --sport "$ports" --count 250)
[[ $(field lost "$out") == 0 ]] || fail "loss after heal: $out"
ok "heal removes the loss"
