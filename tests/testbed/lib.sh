# shellcheck shell=bash
# Helpers shared by the testbed tests (sourced, not run). Each test brings up its own
# testbed instance, named after the test, and removes it on exit whatever happens.
# Environment: TESTBED (the testbed script) and PROBE (mroce-udp-probe), set by CMake.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ok() { echo "ok: $*"; }

[[ -n ${TESTBED:-} && -x $TESTBED ]] || fail "TESTBED is not set to the testbed script"
[[ -n ${PROBE:-} && -x $PROBE ]] || fail "PROBE ($PROBE) is not built: build target mroce-udp-probe"
# Not root means the test cannot run, which must not pass for a success.
(($(id -u) == 0)) || fail "the testbed tests need root (network namespaces): run ctest as root"

TB=""
tb() { "$TESTBED" --name "$TB" "$@"; }

# start INSTANCE [up options]: a fresh testbed that is removed when the test exits.
start() {
  TB=$1
  shift
  tb down >/dev/null
  trap 'tb down >/dev/null 2>&1 || true' EXIT
  tb up "$@" >/dev/null
}

# probe SRC DST [--plane P] [probe options]: datagrams from host SRC to host DST.
declare -A NODE_INFO=() # "ns h1", "addr h2 0" -> answers of the testbed, asked once
info() { # VAR QUERY...: sets VAR (no subshell, so that the cache persists)
  local var=$1
  shift
  [[ -n ${NODE_INFO[$TB $*]:-} ]] || NODE_INFO[$TB $*]=$(tb "$@")
  printf -v "$var" '%s' "${NODE_INFO[$TB $*]}"
}
probe() {
  local src=$1 dst=$2 plane=0
  shift 2
  if [[ ${1:-} == --plane ]]; then
    plane=$2
    shift 2
  fi
  local src_ns dst_ns addr
  info src_ns ns "$src"
  info dst_ns ns "$dst"
  info addr addr "$dst" "$plane"
  "$PROBE" --src-ns "$src_ns" --dst-ns "$dst_ns" --dst "$addr" "$@"
}

# field KEY LINE: the value of KEY=VALUE in a probe report line.
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -n 1; }

# port_received PORT REPORT: packets received from one source port (probe --per-port).
port_received() { awk -v p="port=$1" '$1 == p { sub("received=", "", $3); print $3 }' <<<"$2"; }

# counter PLANE SPINE DIR COLUMN: one value of 'testbed counters' (DIR a>b or b>a; COLUMN
# in, lost, ce, blackholed or out).
counter() {
  tb counters | awk -v p="$1" -v s="$2" -v d="$3" -v c="$4" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == p && $2 == s && $3 == d { print $col[c] }'
}

# within VALUE LOW HIGH: LOW <= VALUE <= HIGH, decimals allowed.
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# ratio A B: A / B as a decimal.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b > 0) ? a / b : 0 }'; }
