#!/usr/bin/env bash
# rdma_cm programs, unmodified, between two processes on one address (loopback): rping
# with data verification (also with its own QPs, -q), ucmatose (several connections),
# rdma_server/rdma_client (the synchronous calls and rdma_verbs.h helpers), ib_write_bw
# -R; a connect to a port nobody listens on (REJECTED within a second), a client started
# before its server, and a peer that never answers (UNREACHABLE once the connect timeout
# has passed, not before).
# shellcheck source-path=SCRIPTDIR source=../verbs/lib.sh
source "$(dirname "$0")/../verbs/lib.sh"
# shellcheck source-path=SCRIPTDIR source=cm_lib.sh
source "$(dirname "$0")/cm_lib.sh"

for program in rping ucmatose rdma_server rdma_client python3; do
  command -v "$program" >/dev/null || fail "$program is missing: install rdmacm-utils"
done

PORT=${MROCE_PORT:?}
CM=$((PORT + 10))
SERVER_OPTS=(--planes 127.0.0.1)
CLIENT_OPTS=(--planes 127.0.0.1)

cm_pair rping - - "$CM" rping -s -a 127.0.0.1 -p "$CM" -C 100 -V -- \
  rping -c -a 127.0.0.1 -p "$CM" -C 100 -V -v
rping_check "$WORK/rping.client" 100
ok "rping: 100 pings verified"

# -q: rping makes its own QPs and moves them with rdma_init_qp_attr; the client gets
# CONNECT_RESPONSE and calls rdma_establish.
CM=$((CM + 1))
cm_pair rping_q - - "$CM" rping -s -q -a 127.0.0.1 -p "$CM" -C 20 -V -- \
  rping -c -q -a 127.0.0.1 -p "$CM" -C 20 -V -v
rping_check "$WORK/rping_q.client" 20
ok "rping -q: 20 pings verified"

CM=$((CM + 1))
cm_pair ucmatose - - "$CM" ucmatose -p "$CM" -c 4 -C 50 -S 4096 -- \
  ucmatose -s 127.0.0.1 -p "$CM" -c 4 -C 50 -S 4096
status_check "$WORK/ucmatose.server"
status_check "$WORK/ucmatose.client"
ok "ucmatose: 4 connections x 50 messages of 4096 bytes"

CM=$((CM + 1))
cm_pair rdma_server - - "$CM" rdma_server -p "$CM" -- rdma_client -s 127.0.0.1 -p "$CM"
grep -qx 'rdma_server: end 0' "$WORK/rdma_server.server" || fail "rdma_server did not end 0"
grep -qx 'rdma_client: end 0' "$WORK/rdma_server.client" || fail "rdma_client did not end 0"
ok "rdma_server/rdma_client"

CM=$((CM + 1))
cm_pair write_bw_cm - - "$CM" ib_write_bw -R -p "$CM" -s 65536 -n 1000 -- \
  ib_write_bw -R -p "$CM" -s 65536 -n 1000 127.0.0.1
bw_check "$WORK/write_bw_cm.server" 65536 1000 >/dev/null
ok "ib_write_bw -R: $(bw_check "$WORK/write_bw_cm.client" 65536 1000) MB/s"

CM=$((CM + 1))
ok "refused: REJECTED after $(refused - 127.0.0.1 "$CM") ms"

# A client a moment early (perftest's second connection often is): refused connects are
# tried again for a while, so it connects once the server listens.
CM=$((CM + 1))
verbs - "$WORK/early.client" "${CLIENT_OPTS[@]}" -- rping -c -a 127.0.0.1 -p "$CM" -C 10 -V -v &
early=$!
sleep 0.1
status=0
verbs - "$WORK/early.server" "${SERVER_OPTS[@]}" -- rping -s -a 127.0.0.1 -p "$CM" -C 10 -V || status=$?
wait "$early" || { cat "$WORK/early.client" >&2; fail "an early rping client failed"; }
((status == 0)) || { cat "$WORK/early.server" >&2; fail "the late rping server failed"; }
rping_check "$WORK/early.client" 10
ok "a client 100 ms early connects"

# A peer that accepts the connection and never answers.
CM=$((CM + 1))
python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
c, _ = s.accept()
time.sleep(30)' "$CM" &
silent=$!
CLEANUPS+=("kill $silent")
wait_listen - "$CM" || fail "the silent peer never listened"
start=$(date +%s%N)
status=0
MROCE_CM_TIMEOUT_MS=1500 verbs - "$WORK/silent" "${CLIENT_OPTS[@]}" -- \
  rping -c -a 127.0.0.1 -p "$CM" -C 1 || status=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
((status != 0)) || fail "rping to a silent peer exited 0"
grep -q 'RDMA_CM_EVENT_UNREACHABLE, error -110' "$WORK/silent" ||
  { cat "$WORK/silent" >&2; fail "rping to a silent peer: no UNREACHABLE (-ETIMEDOUT)"; }
((elapsed >= 1500 && elapsed < 4000)) || fail "UNREACHABLE after $elapsed ms, expected 1.5 s"
ok "silent peer: UNREACHABLE after $elapsed ms (timeout 1500 ms)"
