#!/usr/bin/env bash
# mroce-stat reads the transport's counters from a running ibv_rc_pingpong pair without
# stopping it: two documents (one per process), packet counters that grow between two
# reads, the connection and its paths; nothing once the programs have exited; a clear
# error for bad arguments.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

[[ -n ${STAT_TOOL:-} && -x $STAT_TOOL ]] || fail "STAT_TOOL is not set to tools/stat/mroce-stat"
PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))
export MROCE_STAT_DIR=$WORK/stat
ITERS=60000 # two seconds or so idle: long enough to be read twice while it runs
SIZE=4096

verbs - "$WORK/server" --planes 127.0.0.1 -- ibv_rc_pingpong -n "$ITERS" -s "$SIZE" -p "$TCP" &
server=$!
wait_listen - "$TCP" || fail "the server never listened on port $TCP"
verbs - "$WORK/client" --planes 127.0.0.1 -- ibv_rc_pingpong -n "$ITERS" -s "$SIZE" -p "$TCP" 127.0.0.1 &
client=$!
# A failure while the programs run: say what the stack held and what they printed, and
# stop them (else ctest waits for their timeout and shows nothing of them).
report_running() {
  kill -0 "$server" 2>/dev/null || kill -0 "$client" 2>/dev/null || return 0
  echo "--- mroce-stat all at the failure:" >&2
  "$STAT_TOOL" all >&2 || true
  pkill -P "$server" || true
  pkill -P "$client" || true
  wait "$server" "$client" || true
  echo "--- server:" >&2
  cat "$WORK/server" >&2
  echo "--- client:" >&2
  cat "$WORK/client" >&2
}
CLEANUPS+=(report_running)

# json FILE EXPR: evaluates a Python expression over the parsed document d.
json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

for ((i = 0; i < 100; i++)); do
  if "$STAT_TOOL" all >"$WORK/first.json" 2>"$WORK/err" &&
    [[ $(json "$WORK/first.json" "sum(d2['counters']['rx_packets'] > 0 for d2 in d)") == 2 ]]; then
    break
  fi
  sleep 0.1
done
[[ $(json "$WORK/first.json" "len(d)") == 2 ]] ||
  fail "expected 2 documents: $(cat "$WORK/first.json" "$WORK/err")"
pid=$(json "$WORK/first.json" "d[0]['pid']")
"$STAT_TOOL" --pid "$pid" connections >"$WORK/one.json" || fail "--pid $pid: $(cat "$WORK/one.json")"
[[ $(json "$WORK/one.json" "(len(d), d[0]['pid'], 'counters' in d[0], 'connections' in d[0])") == "(1, $pid, False, True)" ]] ||
  fail "--pid $pid connections: $(cat "$WORK/one.json")"

sleep 0.2
"$STAT_TOOL" all >"$WORK/second.json" || fail "second read: $(cat "$WORK/second.json")"
kill -0 "$server" "$client" 2>/dev/null || fail "a program ended while it was read: ITERS too small"
grown=$(python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
by = lambda docs: {d["pid"]: d for d in docs}
a, b = by(a), by(b)
print(sum(b[p]["counters"]["rx_packets"] > a[p]["counters"]["rx_packets"] and
          b[p]["counters"]["tx_packets"] > a[p]["counters"]["tx_packets"] for p in a))
' "$WORK/first.json" "$WORK/second.json")
[[ $grown == 2 ]] || fail "counters did not grow in both processes between two reads"
ok "two processes, counters growing: $(json "$WORK/second.json" "[x['counters']['rx_packets'] for x in d]") packets received"

conn=$(json "$WORK/second.json" "[c['state'] for x in d for c in x['connections']]")
[[ $conn == "['established', 'established']" ]] || fail "connections: $conn"
paths=$(json "$WORK/second.json" "min(len(c['path_stats']) for x in d for c in x['connections'])")
[[ $paths -ge 1 ]] || fail "no path statistics"
drops=$(json "$WORK/second.json" "sorted(k for k in d[0]['counters'] if k.startswith('drop_'))[0]")
[[ $drops == drop_access_denied ]] || fail "drop counters by reason missing: $drops"
ok "connections established with $paths paths or more, drops by reason"

if "$STAT_TOOL" --bogus >/dev/null 2>"$WORK/err"; then fail "--bogus accepted"; fi
[[ $(wc -l <"$WORK/err") -ge 1 && $(head -1 "$WORK/err") == "mroce-stat: unknown argument '--bogus'" ]] ||
  fail "bad argument message: $(cat "$WORK/err")"

wait "$server" || fail "server: $(cat "$WORK/server")"
wait "$client" || fail "client: $(cat "$WORK/client")"
pingpong_check "$WORK/server" "$SIZE" "$ITERS" >/dev/null
pingpong_check "$WORK/client" "$SIZE" "$ITERS" >/dev/null
[[ -z $(ls -A "$MROCE_STAT_DIR") ]] || fail "sockets left behind: $(ls -A "$MROCE_STAT_DIR")"
if "$STAT_TOOL" >"$WORK/after.json" 2>"$WORK/err"; then fail "counters read after exit: $(cat "$WORK/after.json")"; fi
grep -q "no running program publishes counters" "$WORK/err" || fail "after exit: $(cat "$WORK/err")"
ok "nothing to read once the programs have gone"
