#!/usr/bin/env bash
# bench/net/resend.sh: the SACK-to-resend delay of the UDP stack at 1% loss, from a
# capture at the sender (bench/net/resend_delay.py): from the first ACK whose SACK shows a
# PSN missing to that PSN leaving again.
#   loopback: mroce-perf in a network namespace of its own; nftables drops 1% of the DATA
#             at the receiver's input (after the capture point, as a network would);
#   testbed:  the 4-spine testbed (4 x 1 Gbit/s, MTU 4200), 1% loss on every spine, the
#             capture on the sender's interface.
# Each run is made twice in a row: with the default progress thread, and with it at
# real-time priority (mroce-perf --progress-rt on both ends).
# Prints one line per run: where, the variant, then the analyser's JSON. Needs root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
repeat=3
seconds=3
testbed=1
name=resendbench

usage() {
  cat <<'EOF'
usage: bench/net/resend.sh [--build DIR] [--repeat N] [--seconds S] [--no-testbed]
  --build DIR    build tree with mroce-perf (default: build)
  --repeat N     runs of each (default 3)
  --seconds S    length of each 64 KiB WRITE stream (default 3)
  --no-testbed   loopback only
EOF
}

die() {
  echo "resend.sh: $*" >&2
  exit 2
}

while (($#)); do
  case $1 in
    --build | --repeat | --seconds)
      (($# >= 2)) || die "option '$1' needs a value"
      case $1 in
        --build) build=$2 ;;
        --repeat) repeat=$2 ;;
        --seconds) seconds=$2 ;;
      esac
      shift 2
      ;;
    --no-testbed) testbed=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive whole number"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive whole number"
(($(id -u) == 0)) || die "needs root (network namespaces, nftables, captures)"
command -v dumpcap >/dev/null || die "needs dumpcap (Debian: tshark)"
perf=$build/tools/perf/mroce-perf
[[ -x $perf ]] || die "no $perf (build the mroce-perf target)"
analyse="/usr/bin/python3 $here/resend_delay.py"

work=$(mktemp -d)
ns=mroce-resend-$$
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
  if ((testbed)); then "$root/tools/testbed/testbed" --name "$name" down >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# capture NS IFACE FILE: starts dumpcap in NS, returns once it writes.
capture() {
  local where=$1 iface=$2 file=$3
  ip netns exec "$where" dumpcap -q -P -i "$iface" -s 128 -f udp -w "$file" 2>"$file.log" &
  pids+=("$!")
  for _ in $(seq 50); do
    [[ -s $file ]] && return 0
    sleep 0.1
  done
  die "dumpcap did not start: $(tail -1 "$file.log")"
}

stop_capture() {
  local pid=${pids[-1]}
  sleep 0.2
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset 'pids[-1]'
}

# ---- loopback ------------------------------------------------------------------------
port=4793
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" nft -f - <<EOF
table inet resend {
  chain input {
    type filter hook input priority 0;
    udp dport $port numgen random mod 100 == 0 drop
  }
}
EOF
for ((r = 1; r <= repeat; r++)); do
  for variant in default rt; do
    rt=()
    [[ $variant == rt ]] && rt=(--progress-rt)
    cap=$work/lo-$r-$variant.pcap
    capture "$ns" lo "$cap"
    ip netns exec "$ns" "$perf" server --once --port "$port" --tcp-port 18515 \
      --rate 100000 "${rt[@]}" >"$work/lo-server.log" 2>&1 &
    pids+=("$!")
    sleep 0.3
    ip netns exec "$ns" "$perf" client 127.0.0.1 --tcp-port 18515 -s 65536 \
      -D "$seconds" --rate 100000 "${rt[@]}" >"$work/lo-client.log" 2>&1 ||
      echo "resend.sh: loopback client run $r failed: $(tail -1 "$work/lo-client.log")" >&2
    wait "${pids[-1]}" 2>/dev/null || true
    unset 'pids[-1]'
    stop_capture
    echo "loopback $variant $r $($analyse "$cap" --port "$port")"
  done
done
ip netns del "$ns"

# ---- testbed --------------------------------------------------------------------------
if ((testbed)); then
  tb() { "$root/tools/testbed/testbed" --name "$name" "$@"; }
  tb down >/dev/null
  tb up --spines 4 --rate 1000 --mtu 4200 >/dev/null
  tb impair --all --loss 1 >/dev/null
  h1=$(tb addr h1)
  h2=$(tb addr h2)
  h1ns=$(tb ns h1)
  for ((r = 1; r <= repeat; r++)); do
    for variant in default rt; do
      rt=()
      [[ $variant == rt ]] && rt=(--progress-rt)
      cap=$work/tb-$r-$variant.pcap
      capture "$h1ns" eth0 "$cap"
      tb exec h2 -- "$perf" server --once "${rt[@]}" >"$work/tb-server.log" 2>&1 &
      pids+=("$!")
      sleep 0.3
      tb exec h1 -- "$perf" client "$h2" --addr "$h1" -s 65536 -D "$seconds" "${rt[@]}" \
        >"$work/tb-client.log" 2>&1 ||
        echo "resend.sh: testbed client run $r failed: $(tail -1 "$work/tb-client.log")" >&2
      wait "${pids[-1]}" 2>/dev/null || true
      unset 'pids[-1]'
      stop_capture
      echo "testbed $variant $r $($analyse "$cap" --port 4793)"
    done
  done
fi
