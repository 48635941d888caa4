#!/usr/bin/env bash
# mroce-perf between two processes over loopback: every test, byte-exact (--check), both
# transports, several queue pairs, two planes, a size sweep and the latency tests; the
# JSON report carries the counters.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

work=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# run NAME SERVER_ARGS -- CLIENT_ARGS: one server session and one client, both must
# succeed; the client's JSON goes to $work/NAME.json.
run() {
  local name=$1 port status=0 server_status=0
  shift
  local -a server_args=() client_args=()
  while [[ $1 != -- ]]; do server_args+=("$1"); shift; done
  shift
  client_args=("$@")
  port=$(free_tcp_port)
  "$PERF" server --once --port 0 --tcp-port "$port" "${server_args[@]}" >"$work/$name.server" 2>&1 &
  server_pid=$!
  timeout 60 "$PERF" client --tcp-port "$port" --json "$work/$name.json" "${client_args[@]}" \
    >"$work/$name.client" 2>&1 || status=$?
  wait "$server_pid" || server_status=$?
  server_pid=""
  # The client first: when it fails, the server only sees the side channel close.
  ((status == 0)) || fail "$name: client exited $status: $(tail -5 "$work/$name.client")" \
    "(server: $(tail -1 "$work/$name.server"))"
  ((server_status == 0)) || fail "$name: server failed: $(cat "$work/$name.server")"
  [[ $(json "$work/$name.json" 'd["check_passed"]') == True ]] || fail "$name: check failed"
}

run write -- 127.0.0.1 --test write -s 65536 -n 3000 --check
[[ $(json "$work/write.json" 'd["results"][0]["messages"]') == 3000 ]] || fail "write: not 3000 messages"
[[ $(json "$work/write.json" 'd["client"]["counters"]["tx_data_packets"] >= 3000 * 16') == True ]] ||
  fail "write: the counters do not show the data sent"
[[ $(json "$work/write.json" 'd["server"]["counters"]["rx_packets"] >= 3000 * 16') == True ]] ||
  fail "write: the server's counters do not show the data received"
[[ $(json "$work/write.json" 'd["client"]["connections"][0]["paths"]') == 16 ]] || fail "write: not 16 paths"
ok "WRITE bandwidth, byte-exact, counters on both ends"

run send -- 127.0.0.1 --test send -s 100000 -n 2000 --check
ok "SEND bandwidth, byte-exact"
run readbw -- 127.0.0.1 --test read -s 30000 -n 2000 --check
ok "READ bandwidth, byte-exact"
# One completion per 7 requests, posted in lists (the default is 16), against one per
# request: every request is accounted for either way.
run modded -- 127.0.0.1 --test write -s 10000 -n 1000 --depth 20 --cq-mod 7 --check
run signaled -- 127.0.0.1 --test read -s 10000 -n 500 --cq-mod 1 --check
[[ $(json "$work/modded.json" 'd["results"][0]["messages"]') == 1000 ]] ||
  fail "--cq-mod 7: not every request completed"
[[ $(json "$work/signaled.json" 'd["results"][0]["messages"]') == 500 ]] ||
  fail "--cq-mod 1: not every request completed"
ok "completion moderation: 1 in 7 and every request signaled, byte-exact"
run qps -- 127.0.0.1 --test write --qps 4 -s 16384 -n 1000 --check
[[ $(json "$work/qps.json" 'len(d["client"]["connections"])') == 1 ]] || fail "4 queue pairs, not one connection"
[[ $(json "$work/qps.json" 'd["client"]["connections"][0]["streams"]') == 4 ]] || fail "not 4 streams"
ok "four queue pairs share one connection"
run sweep -- 127.0.0.1 --test write -a --depth 4 -n 20 --check
[[ $(json "$work/sweep.json" 'len(d["results"])') == 23 ]] || fail "the sweep did not cover 23 sizes"
ok "size sweep 2 B .. 8 MiB, byte-exact"
run planes --addr 127.0.0.3 --addr 127.0.0.4 -- 127.0.0.3 --addr 127.0.0.1 --addr 127.0.0.2 \
  -s 65536 -n 2000 --check
[[ $(json "$work/planes.json" 'd["client"]["connections"][0]["planes"]') == 2 ]] || fail "not two planes"
[[ $(json "$work/planes.json" 'min(sum(p["tx_packets"] for p in d["client"]["connections"][0]["path_stats"] if p["plane"] == k) for k in (0, 1)) > 1000') == True ]] ||
  fail "both planes should carry traffic"
ok "two planes, both used"
run roce -- 127.0.0.1 --transport roce -s 65536 -n 2000 --check
[[ $(json "$work/roce.json" 'd["client"]["connections"][0]["paths"]') == 1 ]] || fail "RoCEv2: not one path"
ok "RoCEv2 baseline transport, byte-exact"

for t in write send read; do
  run "lat-$t" -- 127.0.0.1 --lat --test "$t" -s 8 -n 500
  [[ $(json "$work/lat-$t.json" '0 < d["results"][0]["median_us"] < 100000') == True ]] ||
    fail "lat-$t: implausible latency"
done
run lat-big -- 127.0.0.1 --lat --test write -s 20000 -n 200
ok "latency tests: WRITE (memory polling and WRITE_WITH_IMM), SEND, READ"
