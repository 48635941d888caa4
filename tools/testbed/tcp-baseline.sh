#!/usr/bin/env bash
# tcp-baseline.sh: TCP goodput on the testbed fabric at several loss rates, the baseline
# MetaRoCE is compared with. Runs iperf3 from h1 (leaf a) to h2 (leaf b) for each case:
# cubic and bbr with one stream and with four (-P4), and MPTCP (cubic, one subflow per
# announced server port) when mptcpize is installed. Loss is random loss on every spine,
# both directions (so ACKs are lost too).
#
# If the instance (--name) is already up it is used as it is and left up; otherwise one
# is built with 4 spines x 1000 Mbit/s HTB, MTU 4200, RPS on and host offloads off, and
# removed at the end. Run as root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# Beside this script in the source tree, or installed as mroce-testbed.
if [[ -z ${TESTBED:-} ]]; then
  TESTBED=$here/testbed
  [[ -x $TESTBED ]] || TESTBED=$here/mroce-testbed
fi
name=tcpbase seconds=5 losses="0 1 10" json="" subflows=4
cases="cubic bbr cubic-p4 bbr-p4 mptcp"

usage() {
  cat <<'EOF'
usage: tcp-baseline.sh [--name NAME] [--seconds N] [--losses "0 1 10"] [--cases LIST]
                       [--subflows N] [--json FILE]
  --name NAME     testbed instance to use (built and removed if not up; default tcpbase)
  --seconds N     length of each iperf3 run (default 5)
  --losses LIST   loss percentages to measure at (default "0 1 10")
  --cases LIST    any of: cubic bbr cubic-p4 bbr-p4 mptcp (default: all)
  --subflows N    extra MPTCP subflows (server ports announced; default 4, so 5 in all)
  --json FILE     also write the results as JSON
EOF
}

die() {
  echo "tcp-baseline: $*" >&2
  exit 1
}

while (($#)); do
  case $1 in
    --name | --seconds | --losses | --cases | --subflows | --json)
      (($# >= 2)) || die "option '$1' needs a value"
      case $1 in
        --name) name=$2 ;;
        --seconds) seconds=$2 ;;
        --losses) losses=$2 ;;
        --cases) cases=$2 ;;
        --subflows) subflows=$2 ;;
        --json) json=$2 ;;
      esac
      shift 2
      ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive whole number"
[[ $subflows =~ ^[0-9]$ ]] || die "--subflows must be 0..9"
for c in $cases; do
  [[ " cubic bbr cubic-p4 bbr-p4 mptcp " == *" $c "* ]] || die "unknown case '$c'"
done
for l in $losses; do
  [[ $l =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad loss '$l'"
done
(($(id -u) == 0)) || die "must run as root"
command -v iperf3 >/dev/null || die "iperf3 not found (run scripts/install-deps.sh)"

tb() { "$TESTBED" --name "$name" "$@"; }

built=0
if tb status >/dev/null 2>&1; then
  echo "using testbed '$name' as it is"
else
  tb up --spines 4 --rate 1000 --mtu 4200 >/dev/null
  built=1
fi
src=h1 dst=h2
dst_addr=$(tb addr "$dst")
servers=()

cleanup() {
  local pid
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  if ((built)); then
    tb down >/dev/null 2>&1 || true
  else
    tb impair --all --loss 0 >/dev/null 2>&1 || true
    tb exec "$src" ip mptcp endpoint flush 2>/dev/null || true
    tb exec "$dst" ip mptcp endpoint flush 2>/dev/null || true
  fi
}
trap cleanup EXIT

# Plain TCP server on 5201; an MPTCP one on 5202 that announces extra ports, to each of
# which the client opens one more subflow (a new 5-tuple, so possibly another spine).
"$TESTBED" --name "$name" exec "$dst" iperf3 -s -B "$dst_addr" -p 5201 >/dev/null 2>&1 &
servers+=($!)
mptcp=0
if [[ " $cases " == *" mptcp "* ]] && command -v mptcpize >/dev/null; then
  for h in "$src" "$dst"; do tb exec "$h" ip mptcp limits set subflows 8 add_addr_accepted 8; done
  tb exec "$dst" ip mptcp endpoint flush
  # The kernel listens on each announced port without SO_REUSEADDR, so a port that a
  # previous run's subflows left in TIME-WAIT (for a minute) cannot be announced again:
  # take the first block of ports no socket of the server host holds.
  in_use=" $(tb exec "$dst" ss -Htan | awk '{n = split($4, a, ":"); printf "%s ", a[n]}')"
  base=5300
  for ((i = 1; i <= subflows; i++)); do
    if [[ $in_use == *" $((base + i)) "* ]]; then
      base=$((base + 10)) i=0
      ((base < 6000)) || die "no free block of ports to announce in 5301..5999"
    fi
  done
  for ((i = 1; i <= subflows; i++)); do
    tb exec "$dst" ip mptcp endpoint add "$dst_addr" port $((base + i)) signal
  done
  "$TESTBED" --name "$name" exec "$dst" mptcpize run iperf3 -s -B "$dst_addr" -p 5202 >/dev/null 2>&1 &
  servers+=($!)
  mptcp=1
elif [[ " $cases " == *" mptcp "* ]]; then
  echo "mptcpize not found: MPTCP left out (install the mptcpize package)"
fi
sleep 0.5

# Which spines a run's TCP connections crossed (from iperf3's own port report).
spines_of() { # JSON-FILE
  local ports
  ports=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(c["local_port"]) for c in d.get("start", {}).get("connected", [])))' "$1")
  [[ -n $ports ]] || return 0
  # shellcheck disable=SC2086 # one port per word
  tb spine-of "$src" "$dst" $ports --proto tcp --dport 5201 | paste -sd, -
}

# run CASE: prints "gbit retransmits spines" for one iperf3 run.
run_case() {
  local c=$1 algo=${1%%-*} args=() prefix=() out gbit retr spines="-"
  args=(-c "$dst_addr" -t "$seconds" -J --connect-timeout 3000)
  case $c in
    cubic | bbr) args+=(-p 5201 -C "$algo") ;;
    cubic-p4 | bbr-p4) args+=(-p 5201 -C "$algo" -P 4) ;;
    mptcp) args+=(-p 5202 -C cubic) prefix=(mptcpize run) ;;
  esac
  out=$(mktemp)
  timeout $((seconds + 30)) "$TESTBED" --name "$name" exec "$src" "${prefix[@]}" iperf3 "${args[@]}" >"$out" 2>/dev/null || true
  read -r gbit retr < <(python3 -c 'import json, sys
try:
    e = json.load(open(sys.argv[1]))["end"]
    print("%.3f %d" % (e["sum_received"]["bits_per_second"] / 1e9, e["sum_sent"].get("retransmits", 0)))
except Exception:
    print("0.000 -1")' "$out")
  [[ $c == mptcp ]] || spines=$(spines_of "$out" 2>/dev/null || echo "-")
  rm -f "$out"
  echo "$gbit $retr ${spines:--}"
}

label() {
  case $1 in
    cubic) echo "TCP cubic x1" ;;
    bbr) echo "TCP bbr x1" ;;
    cubic-p4) echo "TCP cubic -P4" ;;
    bbr-p4) echo "TCP bbr -P4" ;;
    mptcp) echo "MPTCP cubic, $((subflows + 1)) subflows" ;;
  esac
}

declare -A result=()
entries=()
for loss in $losses; do
  tb impair --all --loss "$loss" >/dev/null
  for c in $cases; do
    [[ $c != mptcp ]] || ((mptcp)) || continue
    read -r gbit retr spines < <(run_case "$c")
    result[$c,$loss]=$gbit
    echo "  $(label "$c") at $loss% loss: $gbit Gbit/s (retransmits $retr, spines $spines)" >&2
    entries+=("{\"case\": \"$c\", \"label\": \"$(label "$c")\", \"loss_pct\": $loss, \"gbit_s\": $gbit, \"retransmits\": $retr, \"spines\": \"$spines\"}")
    sleep 0.3
  done
done

status=$(tb status)
mtu=$(sed -n 's/.*, mtu \([0-9]*\),.*/\1/p' <<<"$status" | head -n 1)
spines=$(sed -n 's/.*, spines \([0-9]*\),.*/\1/p' <<<"$status" | head -n 1)
rate=$(sed -n 's/.*, rate \([0-9]*\) Mbit.*/\1/p' <<<"$status" | head -n 1)
rate=${rate:-0} # 0: unlimited
rps=false offload=false
grep -q 'rps on' <<<"$status" && rps=true
grep -q 'host offloads on' <<<"$status" && offload=true
echo
echo "TCP goodput h1 -> h2, Gbit/s: $spines spines x $rate Mbit/s (0: unlimited), MTU $mtu, RPS $rps, host offloads $offload, $seconds s per run"
printf '%-26s' "case"
for loss in $losses; do printf '%10s' "$loss%"; done
echo
for c in $cases; do
  [[ $c != mptcp ]] || ((mptcp)) || continue
  printf '%-26s' "$(label "$c")"
  for loss in $losses; do printf '%10s' "${result[$c,$loss]}"; done
  echo
done

if [[ -n $json ]]; then
  {
    echo "{\"fabric\": {\"spines\": $spines, \"rate_mbit\": $rate, \"mtu\": $mtu, \"rps\": $rps, \"host_offloads\": $offload},"
    echo " \"seconds\": $seconds, \"mptcp_subflows\": $((mptcp ? subflows + 1 : 0)),"
    echo " \"results\": ["
    for i in "${!entries[@]}"; do
      sep=","
      ((i == ${#entries[@]} - 1)) && sep=""
      echo "  ${entries[$i]}$sep"
    done
    echo " ]}"
  } >"$json"
  echo "results written to $json"
fi
