# shellcheck shell=bash
# Helpers for the rdma_cm program tests (sourced after tests/verbs/lib.sh).

# cm_pair LABEL SERVER_NS CLIENT_NS CM_PORT SERVER_CMD... -- CLIENT_CMD...
#   Starts the server command, waits until it listens on CM_PORT (the rdma_cm port is a
#   TCP listener of the side channel), runs the client; outputs in $WORK/LABEL.server and
#   $WORK/LABEL.client. Fails unless both exit with status 0. SERVER_OPTS and CLIENT_OPTS
#   add mroce-run options.
cm_pair() {
  local label=$1 sns=$2 cns=$3 port=$4
  shift 4
  local -a server=()
  while [[ $1 != -- ]]; do
    server+=("$1")
    shift
  done
  shift
  local server_out=$WORK/$label.server client_out=$WORK/$label.client
  verbs "$sns" "$server_out" "${SERVER_OPTS[@]}" -- "${server[@]}" &
  local pid=$!
  if ! wait_listen "$sns" "$port"; then
    wait "$pid" || true
    cat "$server_out" >&2
    fail "$label: the server never listened on port $port"
  fi
  local client_status=0 server_status=0
  verbs "$cns" "$client_out" "${CLIENT_OPTS[@]}" -- "$@" || client_status=$?
  wait "$pid" || server_status=$?
  if ((client_status != 0 || server_status != 0)); then
    echo "--- server ($server_status)" >&2
    cat "$server_out" >&2
    echo "--- client ($client_status)" >&2
    cat "$client_out" >&2
    fail "$label: exit status server $server_status, client $client_status"
  fi
}

# rping_check FILE COUNT: rping -v printed COUNT verified pings, numbered 0..COUNT-1.
rping_check() {
  local file=$1 count=$2 n
  n=$(grep -c '^ping data: rdma-ping-[0-9]*: ' "$file" || true)
  [[ $n == "$count" ]] || { cat "$file" >&2; fail "$file: $n pings, expected $count"; }
  grep -q "^ping data: rdma-ping-$((count - 1)): " "$file" || fail "$file: no ping $((count - 1))"
}

# status_check FILE: ucmatose finished with "return status 0".
status_check() {
  grep -qx 'return status 0' "$1" || { cat "$1" >&2; fail "$1: no 'return status 0'"; }
}

# refused NS ADDR PORT: rping towards a port nobody listens on gets REJECTED (the IB CM's
# reason 8, invalid service ID) and fails within a second.
refused() {
  local ns=$1 addr=$2 port=$3 start elapsed status=0
  start=$(date +%s%N)
  verbs "$ns" "$WORK/refused" "${CLIENT_OPTS[@]}" -- rping -c -a "$addr" -p "$port" -C 1 || status=$?
  elapsed=$((($(date +%s%N) - start) / 1000000))
  ((status != 0)) || fail "rping to an unused port exited 0"
  grep -q 'RDMA_CM_EVENT_REJECTED, error 8' "$WORK/refused" ||
    { cat "$WORK/refused" >&2; fail "rping to an unused port: no REJECTED event"; }
  ((elapsed < 1000)) || fail "REJECTED took $elapsed ms"
  echo "$elapsed"
}
