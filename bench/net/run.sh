#!/usr/bin/env bash
# bench/net/run.sh: the UDP stack's performance, measured side by side with its
# yardsticks in one run, written to docs/results/stack.md (quoted as ratios):
#   (a) loopback WRITE bandwidth at 64 KiB messages (mroce-perf, two processes) against
#       raw UDP of the same datagram size (mroce-udp-blaster: GSO sender, GRO receiver);
#   (b) 8-byte ping-pong latency against a raw UDP ping-pong, polling and sleeping;
#   (c) goodput on the 4-spine testbed (4 x 1 Gbit/s HTB, MTU 4200) at 0, 1 and 10%
#       loss: MetaRoCE, the RoCEv2 baseline, and tools/testbed/tcp-baseline.sh (TCP
#       cubic and bbr, one stream and -P4, MPTCP), alternating per loss rate;
#   (d) a spine black-holed mid-transfer: time until goodput is back to 3/4 of before.
# Needs root for the testbed (parts (c) and (d)); --no-testbed leaves them out.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
repeat=3
seconds=5
out=$root/docs/results/stack.md
name=netbench
testbed=1
ecn_pps=0
raw=""

usage() {
  cat <<'EOF'
usage: bench/net/run.sh [--build DIR] [--repeat N] [--seconds S] [--out FILE]
                        [--name NAME] [--ecn PPS] [--raw DIR] [--no-testbed]
  --build DIR    build tree with mroce-perf and mroce-udp-blaster (default: build)
  --repeat N     runs of each measurement, alternating with its yardstick (default 3)
  --seconds S    length of each bandwidth run (default 5)
  --out FILE     the report (default docs/results/stack.md)
  --name NAME    testbed instance to build and remove (default netbench)
  --ecn PPS      CE-mark ECN-capable packets beyond PPS per spine port (default 0: off)
  --raw DIR      also keep the raw results (JSON of every run, logs) in DIR
  --no-testbed   loopback parts only (no root needed)
EOF
}

die() {
  echo "run.sh: $*" >&2
  exit 2
}

while (($#)); do
  case $1 in
    --build | --repeat | --seconds | --out | --name | --ecn | --raw)
      (($# >= 2)) || die "option '$1' needs a value"
      case $1 in
        --build) build=$2 ;;
        --repeat) repeat=$2 ;;
        --seconds) seconds=$2 ;;
        --out) out=$2 ;;
        --name) name=$2 ;;
        --ecn) ecn_pps=$2 ;;
        --raw) raw=$2 ;;
      esac
      shift 2
      ;;
    --no-testbed) testbed=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive whole number"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive whole number"
[[ $ecn_pps =~ ^[0-9]+$ ]] || die "--ecn must be a whole number"
perf=$build/tools/perf/mroce-perf
blaster=$build/bench/net/mroce-udp-blaster
[[ -f $build/CMakeCache.txt ]] || die "no configured build tree in $build (scripts/build.sh makes one)"
# Always brought up to date: binaries left from other sources would measure them.
cmake --build "$build" --target mroce-perf mroce-udp-blaster >/dev/null ||
  die "could not build mroce-perf and mroce-udp-blaster in $build"
TESTBED=$root/tools/testbed/testbed
if ((testbed)); then
  (($(id -u) == 0)) || die "the testbed parts need root (or pass --no-testbed)"
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; fi
  if ((testbed)); then "$TESTBED" --name "$name" down >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "== $*" >&2; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
commands=()
note() { commands+=("$*"); }

{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"kernel\": \"$(uname -r)\","
  echo " \"cpus\": $(nproc), \"load_before\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
  echo " \"repeat\": $repeat, \"seconds\": $seconds, \"ecn_pps\": $ecn_pps}"
} >"$work/meta.json"

# loopback_pair FILE SERVER_ARGS... -- CLIENT_ARGS...: one mroce-perf run over loopback.
loopback_pair() {
  local file=$1 port
  shift
  local -a sargs=() cargs=()
  while [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@")
  port=$(free_port)
  "$perf" server --once --port 0 --tcp-port "$port" "${sargs[@]}" >/dev/null 2>&1 &
  server_pid=$!
  "$perf" client 127.0.0.1 --tcp-port "$port" --json "$file" "${cargs[@]}" >/dev/null
  wait "$server_pid"
  server_pid=""
}

# ---- (a) loopback bandwidth -------------------------------------------------------------
mtu=4096
size=$((mtu + 56))  # a WRITE datagram: 56 bytes of MetaRoCE headers, then the payload
for ((r = 1; r <= repeat; r++)); do
  log "(a) loopback WRITE bandwidth, run $r of $repeat"
  loopback_pair "$work/a-mroce-$r.json" --rate 100000 -- -s 65536 -D "$seconds" --rate 100000
  "$blaster" recv >"$work/a-raw-$r.out" &
  rx=$!
  for _ in $(seq 50); do [[ -s $work/a-raw-$r.out ]] && break; sleep 0.05; done
  "$blaster" send --to 127.0.0.1 --port "$(head -n 1 "$work/a-raw-$r.out")" --size "$size" \
    --gso 15 --seconds "$seconds" >/dev/null
  wait "$rx"
  tail -n 1 "$work/a-raw-$r.out" >"$work/a-raw-$r.json"
done
note "mroce-perf server --once --port 0 --tcp-port PORT --rate 100000"
note "mroce-perf client 127.0.0.1 --tcp-port PORT -s 65536 -D $seconds --rate 100000 --json FILE"
note "mroce-udp-blaster recv   # prints its port"
note "mroce-udp-blaster send --to 127.0.0.1 --port PORT --size $size --gso 15 --seconds $seconds"

# ---- (b) latency ------------------------------------------------------------------------
for ((r = 1; r <= repeat; r++)); do
  log "(b) 8-byte ping-pong latency, run $r of $repeat"
  loopback_pair "$work/b-manual-$r.json" --progress manual -- --lat -s 8 -n 20000 --progress manual
  "$blaster" lat --size 8 --iters 20000 --busy >"$work/b-rawbusy-$r.json"
  loopback_pair "$work/b-thread-$r.json" --progress thread -- --lat --test send -s 8 -n 20000 \
    --progress thread
  "$blaster" lat --size 8 --iters 20000 >"$work/b-rawblock-$r.json"
done
note "mroce-perf server --once --port 0 --tcp-port PORT --progress manual"
note "mroce-perf client 127.0.0.1 --tcp-port PORT --lat -s 8 -n 20000 --progress manual --json FILE"
note "mroce-udp-blaster lat --size 8 --iters 20000 --busy"
note "mroce-perf server --once --port 0 --tcp-port PORT --progress thread"
note "mroce-perf client 127.0.0.1 --tcp-port PORT --lat --test send -s 8 -n 20000 --progress thread --json FILE"
note "mroce-udp-blaster lat --size 8 --iters 20000"

if ((testbed)); then
  tb() { "$TESTBED" --name "$name" "$@"; }
  tb down >/dev/null
  tb up --spines 4 --rate 1000 --mtu 4200 >/dev/null
  note "testbed --name $name up --spines 4 --rate 1000 --mtu 4200"
  if ((ecn_pps > 0)); then
    tb impair --all --ce-rate "$ecn_pps" >/dev/null
    note "testbed --name $name impair --all --ce-rate $ecn_pps"
  fi
  h1=$(tb addr h1)
  h2=$(tb addr h2)

  # fabric_run FILE [client args]: mroce-perf from h1 to h2 across the spines.
  fabric_run() {
    local file=$1
    shift
    tb exec h2 -- "$perf" server --once >/dev/null 2>&1 &
    server_pid=$!
    sleep 0.3
    tb exec h1 -- "$perf" client "$h2" --addr "$h1" --json "$file" "$@" >"$file.log" 2>&1 ||
      echo "run.sh: a client run failed: $(tail -1 "$file.log")" >&2
    wait "$server_pid" || true
    server_pid=""
  }

  # ---- (c) goodput under loss ------------------------------------------------------------
  # The RoCEv2 baseline runs at the port rate of the fabric (1 Gbit/s): its one path
  # crosses one spine, and a RoCE NIC paces to its link; unpaced, it overruns the shaper.
  for loss in 0 1 10; do
    tb impair --all --loss "$loss" >/dev/null
    for ((r = 1; r <= repeat; r++)); do
      log "(c) testbed, $loss% loss: MetaRoCE run $r of $repeat"
      fabric_run "$work/c-mroce-$loss-$r.json" -s 65536 -D "$seconds"
    done
    log "(c) testbed, $loss% loss: RoCEv2 baseline"
    fabric_run "$work/c-roce-$loss.json" --transport roce --rate 1000 -s 65536 -D "$seconds"
  done
  # TCP for all three loss rates in one call: one set of iperf3 servers and MPTCP
  # endpoints serves them all.
  log "(c) testbed, 0, 1 and 10% loss: TCP baselines"
  "$root/tools/testbed/tcp-baseline.sh" --name "$name" --seconds "$seconds" --losses "0 1 10" \
    --json "$work/c-tcp.json" >"$work/c-tcp.log" 2>&1 ||
    echo "run.sh: tcp-baseline.sh failed: $(tail -1 "$work/c-tcp.log")" >&2
  tb impair --all --loss 0 >/dev/null
  note "testbed --name $name impair --all --loss LOSS      # LOSS in 0 1 10"
  note "testbed --name $name exec h2 -- mroce-perf server --once"
  note "testbed --name $name exec h1 -- mroce-perf client $h2 --addr $h1 -s 65536 -D $seconds --json FILE"
  note "testbed --name $name exec h1 -- mroce-perf client $h2 --addr $h1 --transport roce --rate 1000 -s 65536 -D $seconds --json FILE"
  note "tools/testbed/tcp-baseline.sh --name $name --seconds $seconds --losses '0 1 10' --json FILE"

  # ---- (d) a spine black-holed mid-transfer ---------------------------------------------
  # 16 paths on 16 known ports: the spine that carries most of them goes black.
  ports=$(seq 42000 42015 | tr '\n' ' ')
  # shellcheck disable=SC2086 # one port per word
  victim=$(tb spine-of h1 h2 $ports | sort | uniq -c | sort -k1,1nr | awk 'NR == 1 {print $2}')
  # shellcheck disable=SC2086
  share=$(tb spine-of h1 h2 $ports | grep -c "^$victim\$")
  for ((r = 1; r <= repeat; r++)); do
    log "(d) spine $victim black-holed mid-transfer, run $r of $repeat"
    tb exec h2 -- "$perf" server --once >/dev/null 2>&1 &
    server_pid=$!
    sleep 0.3
    file=$work/d-$r.json
    tb exec h1 -- "$perf" client "$h2" --addr "$h1" --json "$file" -s 65536 -D 6 \
      --interval 0.05 --paths 16 --src-ports 16 --src-port-base 42000 >"$file.log" 2>&1 &
    client=$!
    # Black-hole the spine 2 s into the measurement (40 samples printed), heal it 3 s
    # later, before the end, so that the side channel (TCP, same fabric) can finish.
    for _ in $(seq 400); do
      (($(grep -c ' Gb/s$' "$file.log" || true) >= 40)) && break
      sleep 0.025
    done
    tb fail spine "$victim" >/dev/null
    date +%s.%N >"$work/d-$r.failed"
    sleep 3
    tb heal spine "$victim" >/dev/null
    wait "$client" || echo "run.sh: the black-hole client failed: $(tail -1 "$file.log")" >&2
    wait "$server_pid" || true
    server_pid=""
  done
  echo "{\"victim\": $victim, \"paths_on_victim\": $share}" >"$work/d-meta.json"
  note "testbed --name $name exec h1 -- mroce-perf client $h2 --addr $h1 -s 65536 -D 6 --interval 0.05 --paths 16 --src-ports 16 --src-port-base 42000 --json FILE"
  note "testbed --name $name fail spine $victim   # 2 s into the run; heal spine $victim 3 s later"
fi

printf '%s\n' "${commands[@]}" >"$work/commands.txt"
mkdir -p "$(dirname "$out")"
python3 "$here/report.py" "$work" >"$out"
if [[ -n $raw ]]; then
  mkdir -p "$raw"
  cp -r "$work"/. "$raw"/
fi
log "written to $out"
