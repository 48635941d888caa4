#!/usr/bin/env bash
# mroce-perf's side channel against a hostile peer: a persistent server survives every
# bad line (one line in its log, the session ended) and then serves a good client; a
# client given bad replies exits 1 with one line instead of aborting.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
peer="$(dirname "$0")/side_channel_peer.py"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

port=$(free_tcp_port)
"$PERF" server --port 0 --tcp-port "$port" >"$work/server.log" 2>&1 &
server=$!
pids+=("$server")

spec='"test":"write","latency":false,"sizes":[4096],"iterations":10,"duration":0,"depth":4,"qps":1,"paths":4,"transport":"mroce","check":false,"seed":1'
info='"addr":"127.0.0.1","port":5000,"qpns":[1],"buffer":0,"rkey":0,"slots":4'
# refused WORD LINE...: the server ends the session with one log line containing WORD.
refused() {
  local word=$1 before after
  shift
  before=$(grep -c "session failed" "$work/server.log" || true)
  timeout 60 python3 "$peer" send "$port" "$@" >/dev/null || fail "'$*': the peer script failed"
  for _ in $(seq 100); do
    after=$(grep -c "session failed" "$work/server.log" || true)
    ((after > before)) && break
    sleep 0.05
  done
  kill -0 "$server" 2>/dev/null || fail "'$*' killed the server: $(cat "$work/server.log")"
  ((after == before + 1)) || fail "'$*': expected one failed session: $(cat "$work/server.log")"
  grep "session failed" "$work/server.log" | tail -1 | grep -qF -- "$word" ||
    fail "'$*': the server's line does not mention '$word': $(tail -1 "$work/server.log")"
}

refused "not a JSON object" '[1,2,3]'
refused "op=5: must be a string" '{"op": 5}'
refused "not JSON" 'this is not json'
refused "'spec' is missing" '{"op": "hello"}'
refused "mtu=70000: must be 256..16384" "{\"op\":\"hello\",\"spec\":{${spec/\"paths\":4/\"paths\":4,\"mtu\":70000}},\"info\":{$info}}"
refused "qps=\"x\": must be 1..64" "{\"op\":\"hello\",\"spec\":{${spec/\"qps\":1/\"qps\":\"x\"},\"mtu\":4096},\"info\":{$info}}"
refused "paths=0: must be 1..256" "{\"op\":\"hello\",\"spec\":{${spec/\"paths\":4/\"paths\":0},\"mtu\":4096},\"info\":{$info}}"
refused "sizes[]=0: must be" "{\"op\":\"hello\",\"spec\":{${spec/\[4096\]/[0]},\"mtu\":4096},\"info\":{$info}}"
refused "port=70000: must be 1..65535" "{\"op\":\"hello\",\"spec\":{$spec,\"mtu\":4096},\"info\":{${info/5000/70000}}}"
refused "'check' before hello" '{"op": "check", "size": "big", "first": 1, "counts": null}'
refused "longer than 4 MiB" '@long'
refused "nested more than 16 deep" '@deep'
ok "a persistent server survives each bad line with one line"

timeout 60 "$PERF" client 127.0.0.1 --tcp-port "$port" -n 200 -s 4096 --check >"$work/good.out" 2>&1 ||
  fail "a good client after the bad ones failed: $(tail -3 "$work/good.out")"
ok "and then serves a good client"

# bad_reply WORD PREFIX REPLACEMENT [client options]: the client, given REPLACEMENT for the
# server's first line starting with PREFIX, exits 1 with one line containing WORD.
bad_reply() {
  local word=$1 prefix=$2 replacement=$3 listen status=0 err
  shift 3
  listen=$(free_tcp_port)
  python3 "$peer" proxy "$listen" "$port" "$prefix" "$replacement" &
  pids+=("$!")
  err=$(timeout 60 "$PERF" client 127.0.0.1 --tcp-port "$listen" -n 200 -s 4096 "$@" 2>&1 >/dev/null) ||
    status=$?
  ((status == 1)) || fail "reply '$replacement': client exited $status, not 1 (stderr: $err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "reply '$replacement': more than one line: $err"
  [[ $err == *"$word"* ]] || fail "reply '$replacement': did not mention '$word': $err"
  kill -0 "$server" 2>/dev/null || fail "reply '$replacement': the server died"
}

bad_reply 'ok="yes": must be true or false' '{"info"' '{"ok": "yes"}'
bad_reply 'error=5: must be a string' '{"info"' '{"ok": false, "error": 5}'
bad_reply "'info' is missing" '{"info"' '{"ok": true}'
bad_reply 'mismatches="many": must be' '{"mismatches"' '{"mismatches": "many"}' --check
bad_reply 'report=5: must be an object' '{"mismatches"' '{"mismatches": 0, "report": 5}'
bad_reply 'not a JSON object' '{"mismatches"' '[1,2,3]'
ok "a client given bad replies exits 1 with one line"

# The server's report is shown whatever its fields hold.
bad_reply_ok() {
  local listen
  listen=$(free_tcp_port)
  python3 "$peer" proxy "$listen" "$port" '{"mismatches"' "$1" &
  pids+=("$!")
  timeout 60 "$PERF" client 127.0.0.1 --tcp-port "$listen" -n 200 -s 4096 >"$work/odd.out" 2>&1 ||
    fail "report '$1': the client failed: $(tail -3 "$work/odd.out")"
}
bad_reply_ok '{"mismatches": 0, "report": {"counters": 5, "connections": [1, {"path_stats": "x"}], "datapath": {"tx_dropped": -1}}}'
ok "a server report of odd types is shown as zeros"
