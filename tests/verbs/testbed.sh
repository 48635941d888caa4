#!/usr/bin/env bash
# Unmodified Verbs programs between two hosts of the namespace testbed (4 spines, two
# planes, MTU 4200): ibv_rc_pingpong with and without a GID and with the ibv_wr_* API (-N),
# ibv_srq_pingpong (16 QPs on one SRQ), the perftest bandwidth and
# latency tests, the bandwidth tests again with 1% random loss on every spine (the spines'
# counters must show the drops), and ib_write_bw over both planes of one device.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

[[ -n ${TESTBED:-} && -x $TESTBED ]] || fail "TESTBED is not set to tools/testbed/testbed"
(($(id -u) == 0)) || fail "the testbed needs root (network namespaces): run ctest as root"

TB=vb$$
tb() { "$TESTBED" --name "$TB" "$@"; }
tb down >/dev/null
CLEANUPS+=("tb down >/dev/null 2>&1")
tb up --planes 2 --mtu 4200 >/dev/null || fail "testbed up failed"
H1=$(tb ns h1)
H2=$(tb ns h2)
A1=$(tb addr h1 0)
A2=$(tb addr h2 0)
B1=$(tb addr h1 1)
B2=$(tb addr h2 1)

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
next_tcp() { TCP=$((TCP + 1)); }
# Each host's device is its plane-0 interface, unless a test says otherwise.
SERVER_OPTS=(--planes "$A2")
CLIENT_OPTS=(--planes "$A1")

pingpong() { # LABEL [ibv_rc_pingpong options]
  local label=$1
  shift
  pair "$label" "$H2" "$H1" "$A2" "$TCP" -- ibv_rc_pingpong -n 200 -s 4096 "$@"
  ok "$label: $(pingpong_check "$WORK/$label.client" 4096 200) Mbit/s"
  next_tcp
}

bw() { # LABEL PROGRAM [options]; QPS queue pairs (1)
  local label=$1 program=$2 qps=${QPS:-1}
  shift 2
  pair "$label" "$H2" "$H1" "$A2" "$TCP" -- "$program" -s 65536 -n 2000 -q "$qps" "$@"
  bw_check "$WORK/$label.server" 65536 $((2000 * qps)) >/dev/null
  ok "$label: $(bw_check "$WORK/$label.client" 65536 $((2000 * qps))) MB/s"
  next_tcp
}

srq_pingpong() { # LABEL
  local label=$1
  pair "$label" "$H2" "$H1" "$A2" "$TCP" -- ibv_srq_pingpong -g 0 -n 200 -s 4096
  pingpong_check "$WORK/$label.server" 4096 200 >/dev/null
  ok "$label: $(pingpong_check "$WORK/$label.client" 4096 200) Mbit/s"
  next_tcp
}

lost_packets() { tb counters | awk 'NR > 1 { lost += $5 } END { print lost + 0 }'; }

pingpong pingpong_gid -g 0
pingpong pingpong_new_send_api -g 0 -N
srq_pingpong srq_pingpong
# Without a GID each side names its peer's address.
SERVER_OPTS=(--planes "$A2" --peer "$A1")
CLIENT_OPTS=(--planes "$A1" --peer "$A2")
pingpong pingpong_peer
SERVER_OPTS=(--planes "$A2")
CLIENT_OPTS=(--planes "$A1")

bw write_bw ib_write_bw
bw send_bw ib_send_bw
QPS=4 bw send_bw_srq ib_send_bw --use-srq
bw read_bw ib_read_bw
pair write_lat "$H2" "$H1" "$A2" "$TCP" -- ib_write_lat -s 8 -n 500
ok "write_lat: typical $(lat_check "$WORK/write_lat.client" 8 500) usec"
next_tcp

tb impair --all --loss 1 >/dev/null
tb counters --reset
bw write_bw_loss ib_write_bw
bw send_bw_loss ib_send_bw
bw read_bw_loss ib_read_bw
srq_pingpong srq_pingpong_loss
QPS=4 bw send_bw_srq_loss ib_send_bw --use-srq
lost=$(lost_packets)
((lost > 0)) || fail "the spines dropped nothing: the loss runs did not meet loss"
ok "1% loss: the spines dropped $lost packets and every transfer completed"
tb heal all >/dev/null

SERVER_OPTS=(--planes "$A2,$B2")
CLIENT_OPTS=(--planes "$A1,$B1")
tb counters --reset
bw write_bw_planes ib_write_bw
plane1=$(tb counters --plane 1 | awk 'NR > 1 { n += $4 } END { print n + 0 }')
((plane1 > 0)) || fail "no packet crossed plane 1"
ok "two planes: $plane1 packets crossed plane 1"
