#!/usr/bin/env bash
# bench/net/run.sh: the UDP stack's performance, measured side by side with its
# yardsticks in one run, written to docs/results/stack.md (quoted as ratios):
#   (a) loopback WRITE bandwidth at 64 KiB messages (mroce-perf, two processes) against
#       raw UDP of the same datagram size (mroce-udp-blaster: GSO sender, GRO receiver);
#       and against iperf3 TCP (one stream), with the CPU time of each end per byte
#       (perf stat task-clock) and every system call of each end per datagram (perf
#       stat raw_syscalls:sys_enter); the stack again with its io_uring rings
#       (--rx-uring 1 --tx-uring 1);
#   (b) 8-byte ping-pong latency against a raw UDP ping-pong, polling and sleeping, and
#       against sockperf ping-pong;
#   (c) goodput on the 4-spine testbed (4 x 1 Gbit/s HTB, MTU 4200) at 0, 1 and 10%
#       loss: MetaRoCE, the RoCEv2 baseline, and tools/testbed/tcp-baseline.sh (TCP
#       cubic and bbr, one stream and -P4, MPTCP), alternating per loss rate;
#   (d) a spine black-holed mid-transfer: time until goodput is back to 3/4 of before;
#   (e) perftest (ib_write_bw, ib_write_lat) over the stand-in Verbs library against
#       mroce-perf with the same settings (loopback);
#   (f) the receiver's placement into final memory, raw UDP: a copy after a GRO read,
#       against reading the header first (MSG_PEEK) and the payload straight into place.
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
run_verbs=$build/tools/verbs/mroce-run
for tool in iperf3 sockperf ib_write_bw ib_write_lat perf; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done
[[ -f $build/CMakeCache.txt ]] || die "no configured build tree in $build (scripts/build.sh makes one)"
# Always brought up to date: binaries left from other sources would measure them.
cmake --build "$build" --target mroce-perf mroce-udp-blaster mroce_verbs mroce-run >/dev/null ||
  die "could not build mroce-perf, mroce-udp-blaster and the Verbs stand-in in $build"
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

# cpu FILE COMMAND...: runs COMMAND, writing the CPU time it took (all its threads, user
# and kernel; perf stat task-clock, milliseconds) and, where the kernel's tracepoint is
# readable, the system calls it made (raw_syscalls:sys_enter) to FILE. This machine's
# perf has no cycle counter (a VM), so CPU time stands for cycles.
events=(-e task-clock)
perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true 2>/dev/null &&
  events+=(-e raw_syscalls:sys_enter)
cpu() {
  local file=$1
  shift
  perf stat -x, "${events[@]}" -o "$file" -- "$@"
}

# loopback_pair FILE SERVER_ARGS... -- CLIENT_ARGS...: one mroce-perf run over loopback;
# the CPU time of each end goes to FILE.server-cpu and FILE.client-cpu.
loopback_pair() {
  local file=$1 port
  shift
  local -a sargs=() cargs=()
  while [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@")
  port=$(free_port)
  cpu "$file.server-cpu" "$perf" server --once --port 0 --tcp-port "$port" "${sargs[@]}" \
    >/dev/null 2>&1 &
  server_pid=$!
  cpu "$file.client-cpu" "$perf" client 127.0.0.1 --tcp-port "$port" --json "$file" \
    "${cargs[@]}" >/dev/null
  wait "$server_pid"
  server_pid=""
}

# wait_listen t|u PORT: until a TCP or UDP socket listens on PORT (at most 5 s).
wait_listen() {
  local kind=$1 port=$2
  for _ in $(seq 100); do
    ss -Hln"$kind" "sport = :$port" | grep -q . && return 0
    sleep 0.05
  done
  return 1
}

# verbs_pair FILE PERFTEST_ARGS...: a perftest program between two processes over the
# stand-in Verbs library; the client's output goes to FILE.
verbs_pair() {
  local file=$1 port base
  shift
  port=$(free_port)
  # Both ends must share the base UDP port: each finds its peer's port from it.
  base=$((20000 + RANDOM % 20000))
  MROCE_PORT=$base timeout $((seconds * 4 + 60)) "$run_verbs" --planes 127.0.0.1 "${verbs_opts[@]}" -- \
    "$@" -p "$port" >"$file.server" 2>&1 &
  server_pid=$!
  wait_listen t "$port" || echo "run.sh: the perftest server did not listen" >&2
  MROCE_PORT=$base timeout $((seconds * 4 + 60)) "$run_verbs" --planes 127.0.0.1 "${verbs_opts[@]}" -- \
    "$@" -p "$port" 127.0.0.1 >"$file" 2>&1 || echo "run.sh: perftest failed: $(tail -1 "$file")" >&2
  wait "$server_pid" || true
  server_pid=""
}

# ---- (a) loopback bandwidth -------------------------------------------------------------
mtu=4096
size=$((mtu + 56))  # a WRITE datagram: 56 bytes of MetaRoCE headers, then the payload
for ((r = 1; r <= repeat; r++)); do
  log "(a) loopback WRITE bandwidth, run $r of $repeat"
  loopback_pair "$work/a-mroce-$r.json" --rate 100000 -- -s 65536 -D "$seconds" --rate 100000
  loopback_pair "$work/a-ring-$r.json" --rate 100000 --rx-uring 1 --tx-uring 1 -- \
    -s 65536 -D "$seconds" --rate 100000 --rx-uring 1 --tx-uring 1
  cpu "$work/a-raw-$r.recv-cpu" "$blaster" recv >"$work/a-raw-$r.out" &
  rx=$!
  for _ in $(seq 50); do [[ -s $work/a-raw-$r.out ]] && break; sleep 0.05; done
  cpu "$work/a-raw-$r.send-cpu" "$blaster" send --to 127.0.0.1 \
    --port "$(head -n 1 "$work/a-raw-$r.out")" --size "$size" --gso 15 --seconds "$seconds" >/dev/null
  wait "$rx"
  tail -n 1 "$work/a-raw-$r.out" >"$work/a-raw-$r.json"
  port=$(free_port)
  cpu "$work/a-tcp-$r.server-cpu" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
  server_pid=$!
  wait_listen t "$port" || echo "run.sh: iperf3 did not listen" >&2
  cpu "$work/a-tcp-$r.client-cpu" iperf3 -c 127.0.0.1 -p "$port" -t "$seconds" -J \
    >"$work/a-tcp-$r.json" || echo "run.sh: iperf3 failed" >&2
  wait "$server_pid" || true
  server_pid=""
done
note "mroce-perf server --once --port 0 --tcp-port PORT --rate 100000"
note "mroce-perf client 127.0.0.1 --tcp-port PORT -s 65536 -D $seconds --rate 100000 --json FILE"
note "the same with --rx-uring 1 --tx-uring 1 at both ends (the io_uring rings)"
note "mroce-udp-blaster recv   # prints its port"
note "mroce-udp-blaster send --to 127.0.0.1 --port PORT --size $size --gso 15 --seconds $seconds"
note "iperf3 -s -1 -p PORT; iperf3 -c 127.0.0.1 -p PORT -t $seconds -J"
note "perf stat -x, -e task-clock -e raw_syscalls:sys_enter -o FILE -- COMMAND   # every process of (a), both ends"

# ---- (b) latency ------------------------------------------------------------------------
for ((r = 1; r <= repeat; r++)); do
  log "(b) 8-byte ping-pong latency, run $r of $repeat"
  loopback_pair "$work/b-manual-$r.json" --progress manual -- --lat -s 8 -n 20000 --progress manual
  "$blaster" lat --size 8 --iters 20000 --busy >"$work/b-rawbusy-$r.json"
  loopback_pair "$work/b-thread-$r.json" --progress thread -- --lat --test send -s 8 -n 20000 \
    --progress thread
  "$blaster" lat --size 8 --iters 20000 >"$work/b-rawblock-$r.json"
  loopback_pair "$work/b-busy-$r.json" --progress busy -- --lat -s 8 -n 20000 --progress busy
  # sockperf's smallest message is 14 bytes; blocking reads (its default) at both ends.
  port=$(free_port)
  sockperf server -i 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  server_pid=$!
  wait_listen u "$port" || echo "run.sh: sockperf did not listen" >&2
  sockperf ping-pong -i 127.0.0.1 -p "$port" -m 14 -t 3 >"$work/b-sockperf-$r.out" 2>&1 ||
    echo "run.sh: sockperf failed" >&2
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
done
note "mroce-perf server --once --port 0 --tcp-port PORT --progress manual"
note "mroce-perf client 127.0.0.1 --tcp-port PORT --lat -s 8 -n 20000 --progress manual --json FILE"
note "mroce-udp-blaster lat --size 8 --iters 20000 --busy"
note "mroce-perf server --once --port 0 --tcp-port PORT --progress thread"
note "mroce-perf client 127.0.0.1 --tcp-port PORT --lat --test send -s 8 -n 20000 --progress thread --json FILE"
note "mroce-udp-blaster lat --size 8 --iters 20000"
note "mroce-perf server --once --port 0 --tcp-port PORT --progress busy"
note "mroce-perf client 127.0.0.1 --tcp-port PORT --lat -s 8 -n 20000 --progress busy --json FILE"
note "sockperf server -i 127.0.0.1 -p PORT; sockperf ping-pong -i 127.0.0.1 -p PORT -m 14 -t 3"

# ---- (e) perftest over the stand-in Verbs library ----------------------------------------
# Against mroce-perf's runs of (a) and (b) with the same settings, alternating with them.
for ((r = 1; r <= repeat; r++)); do
  log "(e) ib_write_bw and ib_write_lat over the stand-in, run $r of $repeat"
  verbs_opts=(--rate 100000)
  verbs_pair "$work/e-bw-$r.out" ib_write_bw -s 65536 -D "$seconds" --report_gbits
  loopback_pair "$work/e-mroce-bw-$r.json" --rate 100000 -- -s 65536 -D "$seconds" --rate 100000
  verbs_opts=(--progress busy)
  verbs_pair "$work/e-lat-$r.out" ib_write_lat -s 8 -n 20000
  loopback_pair "$work/e-mroce-lat-$r.json" --progress busy -- --lat -s 8 -n 20000 --progress busy
  # With progress threads both programs only spin on memory: the same work on each side.
  verbs_opts=(--progress thread)
  verbs_pair "$work/e-lat-thread-$r.out" ib_write_lat -s 8 -n 20000
  loopback_pair "$work/e-mroce-lat-thread-$r.json" --progress thread -- --lat -s 8 -n 20000 \
    --progress thread
done
note "mroce-run --planes 127.0.0.1 --rate 100000 -- ib_write_bw -s 65536 -D $seconds --report_gbits -p PORT [127.0.0.1]"
note "mroce-run --planes 127.0.0.1 --progress busy -- ib_write_lat -s 8 -n 20000 -p PORT [127.0.0.1]"
note "mroce-run --planes 127.0.0.1 --progress thread -- ib_write_lat -s 8 -n 20000 -p PORT [127.0.0.1]"

# ---- (f) placement into final memory ----------------------------------------------------
for ((r = 1; r <= repeat; r++)); do
  for place in copy peek scatter; do
    log "(f) raw UDP receiver, --place $place, run $r of $repeat"
    f=$work/f-$place-$r
    cpu "$f.recv-cpu" "$blaster" recv --place "$place" --size "$size" >"$f.out" &
    rx=$!
    for _ in $(seq 50); do [[ -s $f.out ]] && break; sleep 0.05; done
    "$blaster" send --to 127.0.0.1 --port "$(head -n 1 "$f.out")" --size "$size" --gso 15 \
      --seconds "$seconds" >/dev/null
    wait "$rx"
    tail -n 1 "$f.out" >"$f.json"
  done
done
note "mroce-udp-blaster recv --place copy|peek|scatter --size $size   # with perf stat -e task-clock"

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
python3 "$here/report.py" "$work" "$out" >"$work/report.md"
mv "$work/report.md" "$out"
if [[ -n $raw ]]; then
  mkdir -p "$raw"
  cp -r "$work"/. "$raw"/
fi
log "written to $out"
