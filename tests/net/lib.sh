# shellcheck shell=bash
# Helpers shared by the stack's script tests (sourced, not run). Environment, set by
# CMake: PERF (mroce-perf), BLASTER (mroce-udp-blaster), TESTBED (the testbed script).
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ok() { echo "ok: $*"; }

[[ -n ${PERF:-} && -x $PERF ]] || fail "PERF ($PERF) is not built: build target mroce-perf"

# json FILE EXPR: evaluates a Python expression over the JSON document `d`.
json() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# free_tcp_port: a TCP port nobody listens on, for the side channel.
free_tcp_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

# --- the namespace testbed --------------------------------------------------------------
TB=""
tb() { "$TESTBED" --name "$TB" "$@"; }
SERVER_PID=""

# testbed_start INSTANCE [up options]: a fresh instance, removed when the test exits.
testbed_start() {
  [[ -n ${TESTBED:-} && -x $TESTBED ]] || fail "TESTBED is not set to the testbed script"
  (($(id -u) == 0)) || fail "the testbed tests need root (network namespaces): run ctest as root"
  TB=$1
  shift
  tb down >/dev/null
  trap 'testbed_stop' EXIT
  tb up "$@" >/dev/null || fail "testbed up failed"
  WORK=$(mktemp -d)
}

testbed_stop() {
  if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  tb down >/dev/null 2>&1 || true
  [[ -n ${WORK:-} ]] && rm -rf "$WORK"
}

# server_start [server options]: mroce-perf server (one session) on h2's plane-0 address.
server_start() {
  "$TESTBED" --name "$TB" exec h2 -- "$PERF" server --once "$@" >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
}

# server_wait: the server session must have ended well.
server_wait() {
  wait "$SERVER_PID" || fail "server failed: $(cat "$WORK/server.log")"
  SERVER_PID=""
}

# client NAME [client options]: mroce-perf client on h1 against h2; JSON to $WORK/NAME.json.
client() {
  local name=$1 status=0
  shift
  timeout 120 "$TESTBED" --name "$TB" exec h1 -- "$PERF" client "$(tb addr h2)" \
    --json "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1 || status=$?
  if ((status != 0)); then
    fail "$name: client exited $status: $(tail -5 "$WORK/$name.log"); server: $(tail -3 "$WORK/server.log")"
  fi
}

# spine_ports SPORT COUNT: "port spine" lines for h1 -> h2 from SPORT on.
spine_ports() {
  local ports=() p
  for ((p = $1; p < $1 + $2; p++)); do ports+=("$p"); done
  paste -d' ' <(printf '%s\n' "${ports[@]}") <(tb spine-of h1 h2 "${ports[@]}")
}
