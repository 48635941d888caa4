#!/usr/bin/env bash
# Under mroce-run --device-files the device's counters are sysfs hw_counters files, one
# per counter (decimal value and a newline), that a program reads while the traffic runs:
# an ibv_rc_pingpong server started in the namespace, read there before the client starts
# and again while they exchange packets, shows rx_packets and tx_packets grown; the names
# are the device counters of mroce-stat.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
ITERS=5000 # long enough to be read twice while it runs
SIZE=4096
export HW_WORK=$WORK HW_TCP=$TCP HW_ITERS=$ITERS HW_SIZE=$SIZE

# Runs in the namespace: the server, and the reads of its counter files.
# shellcheck disable=SC2016 # expanded by the inner shell
inner='
d=/sys/class/infiniband/mroce0/ports/1/hw_counters
ibv_rc_pingpong -n "$HW_ITERS" -s "$HW_SIZE" -p "$HW_TCP" >"$HW_WORK/server" 2>&1 &
server=$!
for _ in $(seq 200); do [ -f "$d/rx_packets" ] && break; sleep 0.05; done
[ -f "$d/rx_packets" ] || { echo "no $d/rx_packets"; exit 1; }
ls "$d" >"$HW_WORK/names"
echo "$(cat "$d/rx_packets") $(cat "$d/tx_packets")" >"$HW_WORK/before"
touch "$HW_WORK/ready"
for _ in $(seq 100); do
  [ "$(cat "$d/rx_packets")" -gt 1000 ] && break
  sleep 0.05
done
echo "$(cat "$d/rx_packets") $(cat "$d/tx_packets")" >"$HW_WORK/during"
kill -0 "$server" && echo running >"$HW_WORK/alive"
od -c "$d/rx_packets" | head -1 >"$HW_WORK/format"
wait "$server"'

verbs - "$WORK/inner" --planes 127.0.0.1 --device-files -- bash -c "$inner" &
inner_pid=$!
for ((i = 0; i < 200; i++)); do
  [[ -e $WORK/ready ]] && break
  kill -0 "$inner_pid" 2>/dev/null || break
  sleep 0.05
done
[[ -e $WORK/ready ]] || { cat "$WORK/inner" >&2; fail "the counter files never appeared"; }
wait_listen - "$TCP" || fail "the server never listened on port $TCP"
verbs - "$WORK/client" --planes 127.0.0.1 -- ibv_rc_pingpong -n "$ITERS" -s "$SIZE" -p "$TCP" 127.0.0.1 ||
  fail "client: $(cat "$WORK/client")"
wait "$inner_pid" || fail "server side: $(cat "$WORK/inner" "$WORK/server" 2>/dev/null)"
pingpong_check "$WORK/server" "$SIZE" "$ITERS" >/dev/null

read -r rx0 tx0 <"$WORK/before"
read -r rx1 tx1 <"$WORK/during"
[[ -e $WORK/alive ]] || fail "the server had ended before the second read: ITERS too small"
((rx1 > rx0 && tx1 > tx0)) || fail "counters did not grow: rx $rx0 -> $rx1, tx $tx0 -> $tx1"
ok "read live: rx_packets $rx0 -> $rx1, tx_packets $tx0 -> $tx1"
grep -q '\\n' "$WORK/format" || fail "a counter file is not a decimal value and a newline: $(cat "$WORK/format")"
for name in rx_packets tx_bytes tx_retransmits drop_malformed drop_unknown_connection; do
  grep -qx "$name" "$WORK/names" || fail "no hw_counters/$name: $(tr '\n' ' ' <"$WORK/names")"
done
ok "$(wc -l <"$WORK/names") counter files, names as mroce-stat's"
