#!/usr/bin/env bash
# UD queue pairs, through unmodified programs: ibv_ud_pingpong (with and without a GID,
# up to the port MTU) and perftest's ib_send_bw -c UD (one and four QPs, small and
# MTU-sized messages), udaddy (rdma_cm's UDP port space) and UCX's ud_verbs (ucx_info -d,
# ucx_perftest tag_bw) between two processes on one address, then both between two hosts
# of the namespace testbed when run as root (without root that part fails: the testbed
# needs network namespaces). Each checks the exit status of both sides and the sizes,
# iterations and rates they print. UD is unreliable: no loss runs (a lost datagram
# stalls these programs, as it would on a NIC).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
command -v ibv_ud_pingpong >/dev/null || fail "ibv_ud_pingpong is missing: install ibverbs-utils"

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
next_tcp() { TCP=$((TCP + 1)); }

# ud_pingpong LABEL SNS CNS ADDR SIZE ITERS [options]
ud_pingpong() {
  local label=$1 sns=$2 cns=$3 addr=$4 size=$5 iters=$6
  shift 6
  pair "$label" "$sns" "$cns" "$addr" "$TCP" -- ibv_ud_pingpong -s "$size" -n "$iters" "$@"
  pingpong_check "$WORK/$label.server" "$size" "$iters" >/dev/null
  ok "$label: $iters x $size bytes, $(pingpong_check "$WORK/$label.client" "$size" "$iters") Mbit/s"
  next_tcp
}

# send_bw LABEL SNS CNS ADDR SIZE ITERS QPS
send_bw() {
  local label=$1 sns=$2 cns=$3 addr=$4 size=$5 iters=$6 qps=$7
  pair "$label" "$sns" "$cns" "$addr" "$TCP" -- ib_send_bw -c UD -s "$size" -n "$iters" -q "$qps"
  local server client
  server=$(bw_check "$WORK/$label.server" "$size" $((iters * qps)))
  client=$(bw_check "$WORK/$label.client" "$size" $((iters * qps)))
  grep -q 'Connection type : UD' "$WORK/$label.client" || fail "$label: not a UD run"
  ok "$label: $iters x $size bytes x $qps QPs, $client MB/s (server reports $server)"
  next_tcp
}

# udaddy SNS CNS SERVER_ADDR CLIENT_ADDR LABEL: rdma_cm's UDP port space (the stand-in
# librdmacm), 4 connections of 50 messages of 1 KB each; both sides must report success.
udaddy_pair() {
  local sns=$1 cns=$2 saddr=$3 caddr=$4 label=$5 args=(-c 4 -C 50 -S 1024)
  verbs "$sns" "$WORK/$label.server" --planes "$saddr" -- udaddy -b "$saddr" "${args[@]}" &
  local server=$! server_status=0 client_status=0 i
  for ((i = 0; i < 200; i++)); do
    grep -q 'receiving data transfers' "$WORK/$label.server" 2>/dev/null && break
    sleep 0.05
  done
  verbs "$cns" "$WORK/$label.client" --planes "$caddr" -- udaddy -s "$saddr" -b "$caddr" "${args[@]}" ||
    client_status=$?
  wait "$server" || server_status=$?
  local side
  for side in server client; do
    if ((server_status != 0 || client_status != 0)) || ! grep -q '^test complete' "$WORK/$label.$side"; then
      cat "$WORK/$label.server" "$WORK/$label.client" >&2
      fail "$label: exit status server $server_status, client $client_status"
    fi
  done
  ok "$label: 4 connections x 50 messages of 1 KB each way"
}

SERVER_OPTS=(--planes 127.0.0.1)
CLIENT_OPTS=(--planes 127.0.0.1)
udaddy_pair - - 127.0.0.1 127.0.0.1 udaddy
ud_pingpong ud_pingpong - - 127.0.0.1 2048 1000 -g 0
ud_pingpong ud_pingpong_mtu - - 127.0.0.1 4096 500 -g 0
ud_pingpong ud_pingpong_small - - 127.0.0.1 1 1000
send_bw send_bw_ud - - 127.0.0.1 4096 2000 1
send_bw send_bw_ud_small - - 127.0.0.1 64 2000 4

# UCX's ud_verbs transport on the stand-in's device (its device files from mroce-run):
# ucx_info -d lists it and ucx_perftest tag_bw moves 2000 x 64 KB over it.
command -v ucx_perftest >/dev/null || fail "ucx_perftest is missing: install ucx-utils"
ucx() { # NS OUT ADDR PROGRAM ARGS
  local ns=$1 out=$2 addr=$3
  shift 3
  verbs "$ns" "$out" --planes "$addr" --device-files -- \
    env UCX_TLS=ud_verbs UCX_NET_DEVICES=mroce0:1 "$@"
}
ucx - "$WORK/ucx_info" 127.0.0.1 ucx_info -d || { cat "$WORK/ucx_info" >&2; fail "ucx_info -d failed"; }
awk '/Transport: ud_verbs/ { t = 1; next } t && /Device: mroce0:1/ { found = 1 } /Transport:/ { t = 0 }
  END { exit !found }' "$WORK/ucx_info" || { cat "$WORK/ucx_info" >&2; fail "ucx_info -d lists no ud_verbs on mroce0:1"; }
ok "ucx_info -d: ud_verbs on mroce0:1"

# ucx_tag_bw LABEL SNS CNS SADDR CADDR: both sides exit 0 and the client's final row shows
# 2000 iterations at a positive bandwidth.
ucx_tag_bw() {
  local label=$1 sns=$2 cns=$3 saddr=$4 caddr=$5 server client_status=0 server_status=0
  ucx "$sns" "$WORK/$label.server" "$saddr" ucx_perftest -p "$TCP" &
  server=$!
  wait_listen "$sns" "$TCP" || { wait "$server" || true; cat "$WORK/$label.server" >&2; fail "$label: no server"; }
  ucx "$cns" "$WORK/$label.client" "$caddr" ucx_perftest "$saddr" -p "$TCP" -t tag_bw -s 65536 -n 2000 ||
    client_status=$?
  wait "$server" || server_status=$?
  if ((client_status != 0 || server_status != 0)); then
    cat "$WORK/$label.server" "$WORK/$label.client" >&2
    fail "$label: exit status server $server_status, client $client_status"
  fi
  local row
  row=$(awk '$1 == "Final:" { print $2, $6 }' "$WORK/$label.client")
  read -r n mbs <<<"$row"
  [[ $n == 2000 ]] || { cat "$WORK/$label.client" >&2; fail "$label: ${n:-no} iterations, expected 2000"; }
  positive "$mbs" || fail "$label: bandwidth $mbs MB/s"
  ok "$label: 2000 x 64 KB tagged sends, $mbs MB/s"
  next_tcp
}
ucx_tag_bw ucx_tag_bw - - 127.0.0.1 127.0.0.1

# A message above the port MTU is refused, as a NIC's UD QP refuses it.
verbs - "$WORK/too_big" --planes 127.0.0.1 -- ibv_ud_pingpong -s 8192 -g 0 && fail "8 KB UD pingpong ran"
grep -q 'larger than port MTU' "$WORK/too_big" || { cat "$WORK/too_big" >&2; fail "8 KB UD pingpong: no MTU refusal"; }
ok "ud_pingpong: 8 KB refused (above the 4096-byte MTU)"

[[ -n ${TESTBED:-} && -x $TESTBED ]] || fail "TESTBED is not set to tools/testbed/testbed"
(($(id -u) == 0)) || fail "the testbed part needs root (network namespaces): run ctest as root"
TB=vu$$
tb() { "$TESTBED" --name "$TB" "$@"; }
tb down >/dev/null
CLEANUPS+=("tb down >/dev/null 2>&1")
tb up --planes 1 --mtu 4200 >/dev/null || fail "testbed up failed"
H1=$(tb ns h1)
H2=$(tb ns h2)
A1=$(tb addr h1 0)
A2=$(tb addr h2 0)
SERVER_OPTS=(--planes "$A2")
CLIENT_OPTS=(--planes "$A1")
ud_pingpong testbed_ud_pingpong "$H2" "$H1" "$A2" 4096 500 -g 0
send_bw testbed_send_bw_ud "$H2" "$H1" "$A2" 4096 2000 1
udaddy_pair "$H2" "$H1" "$A2" "$A1" testbed_udaddy
ucx_tag_bw testbed_ucx_tag_bw "$H2" "$H1" "$A2" "$A1"
