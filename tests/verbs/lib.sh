# shellcheck shell=bash
# Helpers shared by the tests that run unmodified Verbs programs (sourced, not run).
# Environment (set by CMake): MROCE_RUN, the launcher; VERBS_PRELOAD, the sanitizer runtime
# to preload when the library is built with ASan (empty otherwise); TESTBED for the
# testbed tests. Every program runs under a timeout; a test that cannot run fails.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ok() { echo "ok: $*"; }

[[ -n ${MROCE_RUN:-} && -x $MROCE_RUN ]] || fail "MROCE_RUN is not set to tools/verbs/mroce-run"
"$MROCE_RUN" --print-libdir >/dev/null || fail "the stand-in library is not built (target mroce_verbs)"
for program in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw ib_send_bw ib_read_bw ib_write_lat; do
  command -v "$program" >/dev/null || fail "$program is missing: install ibverbs-utils and perftest"
done

# The tests say what they configure: nothing of the caller's MROCE_* reaches the programs.
for variable in $(compgen -e); do
  case $variable in
    MROCE_RUN | MROCE_PORT) ;;
    MROCE_*) unset "$variable" ;;
  esac
done

WORK=$(mktemp -d)
PROGRAM_TIMEOUT=${PROGRAM_TIMEOUT:-60}
CLEANUPS=()
cleanup() {
  local c
  for c in "${CLEANUPS[@]}"; do eval "$c" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# verbs NS OUT [mroce-run options] -- PROGRAM ARGS: runs a program over the stand-in
# library, in network namespace NS ("-" for this one), output to OUT; returns its status.
verbs() {
  local ns=$1 out=$2
  shift 2
  local -a prefix=()
  [[ $ns == - ]] || prefix=(ip netns exec "$ns")
  local -a env_args=()
  if [[ -n ${VERBS_PRELOAD:-} ]]; then
    # The sanitized library needs its runtime first in an unsanitized program; the
    # programs' own leaks at exit are not ours to report.
    env_args=(LD_PRELOAD="$VERBS_PRELOAD" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
  fi
  # A program that hangs is killed with nothing to say: just before that, a watchdog
  # records the stack's state (mroce-stat: every connection and path of the programs
  # still running), and it goes after the program's own output.
  local dog="" status=0
  if [[ -n ${STAT_TOOL:-} && -x $STAT_TOOL ]] && ((PROGRAM_TIMEOUT > 5)); then
    (sleep $((PROGRAM_TIMEOUT - 3)) && "${prefix[@]}" "$STAT_TOOL" all >"$out.hung" 2>&1) \
      </dev/null >/dev/null 2>&1 &
    dog=$!
  fi
  timeout -k 5 "$PROGRAM_TIMEOUT" "${prefix[@]}" env "${env_args[@]}" "$MROCE_RUN" "$@" >"$out" 2>&1 ||
    status=$?
  if [[ -n $dog ]]; then
    pkill -P "$dog" 2>/dev/null || true
    kill "$dog" 2>/dev/null || true
    wait "$dog" 2>/dev/null || true
  fi
  if [[ -s $out.hung ]]; then
    echo "--- mroce-stat all, $((PROGRAM_TIMEOUT - 3)) s after the start, before the timeout:" >>"$out"
    cat "$out.hung" >>"$out"
  fi
  return "$status"
}

# wait_listen NS PORT: waits until a TCP socket listens on PORT in namespace NS.
wait_listen() {
  local ns=$1 port=$2 i
  local -a prefix=()
  [[ $ns == - ]] || prefix=(ip netns exec "$ns")
  for ((i = 0; i < 200; i++)); do
    "${prefix[@]}" ss -Hltn "sport = :$port" | grep -q . && return 0
    sleep 0.05
  done
  return 1
}

# pair LABEL SERVER_NS CLIENT_NS SERVER_ADDR TCP_PORT [mroce-run options] -- PROGRAM ARGS
#   Runs PROGRAM ARGS as the server and PROGRAM ARGS SERVER_ADDR as the client (both with
#   -p TCP_PORT for the out-of-band exchange); the outputs are $WORK/LABEL.server and
#   $WORK/LABEL.client. Fails the test unless both exit with status 0. The arrays
#   SERVER_OPTS and CLIENT_OPTS add mroce-run options for one side.
SERVER_OPTS=()
CLIENT_OPTS=()
pair() {
  local label=$1 sns=$2 cns=$3 addr=$4 port=$5
  shift 5
  local -a opts=()
  while [[ $1 != -- ]]; do
    opts+=("$1")
    shift
  done
  shift
  local server_out=$WORK/$label.server client_out=$WORK/$label.client
  verbs "$sns" "$server_out" "${opts[@]}" "${SERVER_OPTS[@]}" -- "$@" -p "$port" &
  local server=$!
  if ! wait_listen "$sns" "$port"; then
    wait "$server" || true
    cat "$server_out" >&2
    fail "$label: the server never listened on port $port"
  fi
  local client_status=0 server_status=0
  verbs "$cns" "$client_out" "${opts[@]}" "${CLIENT_OPTS[@]}" -- "$@" -p "$port" "$addr" ||
    client_status=$?
  wait "$server" || server_status=$?
  if ((client_status != 0 || server_status != 0)); then
    echo "--- server ($server_status)" >&2
    cat "$server_out" >&2
    echo "--- client ($client_status)" >&2
    cat "$client_out" >&2
    fail "$label: exit status server $server_status, client $client_status"
  fi
}

# positive VALUE: VALUE is a number above zero.
positive() { awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }'; }

# bw_check FILE BYTES ITERS: the perftest bandwidth row for BYTES shows ITERS iterations
# and a positive average bandwidth; prints that average (MB/s).
bw_check() {
  local file=$1 bytes=$2 iters=$3 row
  row=$(awk -v b="$bytes" '$1 == b && NF == 5 && $2 ~ /^[0-9]+$/ { print; exit }' "$file")
  [[ -n $row ]] || { cat "$file" >&2; fail "no result row for $bytes bytes in $file"; }
  read -r _ n _ avg _ <<<"$row"
  [[ $n == "$iters" ]] || fail "$file: $n iterations, expected $iters"
  positive "$avg" || fail "$file: average bandwidth $avg MB/s"
  echo "$avg"
}

# lat_check FILE BYTES ITERS: the perftest latency row for BYTES shows ITERS iterations
# and 0 < t_min <= t_typical; prints t_typical (usec).
lat_check() {
  local file=$1 bytes=$2 iters=$3 row
  row=$(awk -v b="$bytes" '$1 == b && NF >= 9 && $2 ~ /^[0-9]+$/ { print; exit }' "$file")
  [[ -n $row ]] || { cat "$file" >&2; fail "no result row for $bytes bytes in $file"; }
  read -r _ n tmin _ typical _ <<<"$row"
  [[ $n == "$iters" ]] || fail "$file: $n iterations, expected $iters"
  positive "$tmin" || fail "$file: t_min $tmin"
  awk -v a="$tmin" -v b="$typical" 'BEGIN { exit !(a <= b) }' || fail "$file: t_min $tmin > t_typical $typical"
  echo "$typical"
}

# pingpong_check FILE BYTES ITERS: ibv_rc_pingpong moved ITERS x BYTES both ways at a
# positive rate; prints the Mbit/s figure.
pingpong_check() {
  local file=$1 bytes=$2 iters=$3 line total rate count usec
  line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$file") ||
    { cat "$file" >&2; fail "no bandwidth line in $file"; }
  read -r total _ _ _ _ _ rate _ <<<"$line"
  [[ $total == $((2 * bytes * iters)) ]] || fail "$file: $total bytes, expected $((2 * bytes * iters))"
  positive "$rate" || fail "$file: $rate Mbit/sec"
  line=$(grep -E '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$file") ||
    fail "no iteration line in $file"
  read -r count _ _ _ _ _ usec _ <<<"$line"
  [[ $count == "$iters" ]] || fail "$file: $count iterations, expected $iters"
  positive "$usec" || fail "$file: $usec usec/iter"
  echo "$rate"
}
