#!/usr/bin/env bash
# Runs the MetaRoCE compliance suite (tools/conform, docs/COMPLIANCE.md) against this stack:
# builds what it needs, runs the suite's self-tests, then starts mroce-target through
# mroce-run on loopback and runs every case against it, once over two IPv4 planes and a
# selection over IPv6. Exits non-zero when any case fails.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/conform.sh [--junit FILE] [--build-dir DIR] [--no-build] [--port-base N]
                         [--only PATTERN]...

  --junit FILE     JUnit XML of the IPv4 run (the IPv6 run goes to FILE's name + .ipv6.xml)
  --build-dir DIR  the build tree to take mroce-target and the stand-in from (default build)
  --no-build       use the tree as it is
  --port-base N    first UDP port; the runs use N to N+1000 (default 23500)
  --only PATTERN   run these cases only, over IPv4 and IPv6 alike (repeatable)
USAGE
}

die() {
  echo "conform.sh: $*" >&2
  exit 2
}

junit=""
build_dir=build
build=1
base=23500
only=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --junit) [ "$#" -ge 2 ] || die "--junit needs a file"; junit=$2; shift 2 ;;
    --build-dir) [ "$#" -ge 2 ] || die "--build-dir needs a directory"; build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --port-base)
      [ "$#" -ge 2 ] || die "--port-base needs a number"
      if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt 1024 ] || [ "$2" -gt 64000 ]; then
        die "--port-base must be 1024..64000"
      fi
      base=$2
      shift 2
      ;;
    --only) [ "$#" -ge 2 ] || die "--only needs a pattern"; only+=(--only "$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

python=${PYTHON:-/usr/bin/python3}
"$python" -c 'import scapy, pytest' 2>/dev/null ||
  die "$python lacks scapy or pytest (Debian: python3-scapy python3-pytest)"

if [ "$build" = 1 ]; then
  if [ ! -f "$build_dir/build.ninja" ]; then
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build "$build_dir" --target mroce-target mroce-run mroce_verbs
fi
run="$build_dir/tools/verbs/mroce-run"
target="$build_dir/tools/target/mroce-target"
if [ ! -x "$run" ] || [ ! -x "$target" ]; then
  die "no $run or $target (build them, or drop --no-build)"
fi

# On a loaded host a progress thread woken by an ACK can wait milliseconds for a core,
# which the resend cases would read as a late resend (docs/STACK.md, "Progress"): where
# real-time priority is permitted, the target's progress thread gets it. The tester then
# runs at the same priority: below it, it would wait for the target's thread, and its
# late ACKs would read as a slow or failing path to the device.
rt=()
if command -v chrt >/dev/null && chrt -f 1 true 2>/dev/null; then
  export MROCE_PROGRESS_RT=1
  rt=(chrt -f 1)
fi

logs=$(mktemp -d)
pids=()
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$logs"
}
trap cleanup EXIT

# The target runs with the device files (mroce-run --device-files) where they can be
# made, so that it reads its counters from sysfs hw_counters as on a vendor's device. They
# cannot where the host refuses the mount namespace, or in a sanitizer tree, whose stand-in
# library the uninstrumented ibv_devinfo that lists the devices cannot load.
device_files=()
if "$run" --planes 127.0.0.1 --port "$base" --device-files -- true 2>/dev/null; then
  device_files=(--device-files)
fi

# start_target NAME PLANES UDP_BASE CONTROL_PORT: a target on loopback, ready when it says so.
start_target() {
  local name=$1 planes=$2 udp=$3 control=$4
  "$run" --planes "$planes" --port "$udp" --paths 4 "${device_files[@]}" -- \
    "$target" --listen "127.0.0.1:$control" >"$logs/$name.out" 2>"$logs/$name.err" &
  pids+=("$!")
  for _ in $(seq 100); do
    grep -q '^mroce-target: ready' "$logs/$name.out" 2>/dev/null && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  cat "$logs/$name.err" >&2
  die "mroce-target ($name) did not start"
}

status=0
echo "== conform: self-tests (the suite against its own faulty device)"
CONFORM_SELFTEST_PORT=$((base + 700)) "$python" -m pytest -q -p no:cacheprovider \
  tools/conform/tests || status=1

echo "== conform: mroce-target over two IPv4 planes"
start_target ipv4 127.0.0.1,127.0.0.2 "$base" $((base + 900))
# Without the device files the target finds no hw_counters: where the tree has
# mroce-stat, the counters come from it, by the target's pid (mroce-run execs the target).
counter_args=()
if [ "${#device_files[@]}" = 0 ] && [ -x "$build_dir/tools/stat/mroce-stat" ]; then
  counter_args=(--counters "$build_dir/tools/stat/mroce-stat --pid ${pids[-1]}")
fi
"${rt[@]}" "$python" tools/conform/mroce-conform --target "127.0.0.1:$((base + 900))" \
  --port-base "$base" ${junit:+--junit "$junit"} "${counter_args[@]}" "${only[@]}" || status=1

ipv6_only=("${only[@]}")
if [ "${#only[@]}" = 0 ]; then
  ipv6_only=(--only '2-*' --only '4.2-*' --only '6.1-*' --only '6.3-*' --only '7.5-*'
    --only '7.2-*' --only '9-*')
fi
echo "== conform: mroce-target over IPv6"
start_target ipv6 ::1 $((base + 300)) $((base + 901))
"${rt[@]}" "$python" tools/conform/mroce-conform --target "127.0.0.1:$((base + 901))" \
  --port-base $((base + 300)) ${junit:+--junit "${junit%.xml}.ipv6.xml"} \
  "${ipv6_only[@]}" || status=1

echo "== conform: the target's control protocol refuses bad requests"
"${rt[@]}" "$python" tools/conform/tests/target_control_check.py "127.0.0.1:$((base + 900))" || status=1
exit $status
