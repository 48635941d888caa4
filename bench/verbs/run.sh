#!/usr/bin/env bash
# What the stand-in libibverbs costs: unmodified perftest (ib_write_bw, ib_write_lat) over
# the stand-in next to mroce-perf, the stack's own tool over the same C++ API, on this
# machine in one run; then both through the namespace testbed without and with 1% loss on
# every spine. Rounds alternate the two tools and the medians are reported, so that load
# from elsewhere hits both alike. Writes a Markdown report (docs/results/verbs.md).
#
#   bench/verbs/run.sh [--build DIR] [--out FILE] [--seconds S] [--rounds N] [--no-testbed]
#
# Needs a configured build tree DIR (default: build; the targets mroce_verbs, mroce-run
# and mroce-perf are brought up to date in it), perftest, and root for the testbed part.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build
out=docs/results/verbs.md
seconds=5
rounds=3
testbed=1
lat_iters=5000
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --no-testbed) testbed=0; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done

die() {
  echo "run.sh: $*" >&2
  exit 1
}
RUN=$build/tools/verbs/mroce-run
PERF=$build/tools/perf/mroce-perf
TESTBED=tools/testbed/testbed
[[ -f $build/CMakeCache.txt ]] || die "no configured build tree in $build (scripts/build.sh makes one)"
# Always brought up to date: binaries left from other sources would measure them.
cmake --build "$build" --target mroce_verbs mroce-run mroce-perf >/dev/null ||
  die "could not build mroce_verbs, mroce-run and mroce-perf in $build"
{ [[ -x $RUN ]] && "$RUN" --print-libdir >/dev/null; } || die "build mroce_verbs and mroce-run in $build"
[[ -x $PERF ]] || die "build mroce-perf in $build"
command -v ib_write_bw >/dev/null || die "perftest is not installed"
if ((testbed)) && (($(id -u) != 0)); then die "the testbed part needs root (or --no-testbed)"; fi

WORK=$(mktemp -d)
TB=vbench$$
cleanup() {
  if ((testbed)); then "$TESTBED" --name "$TB" down >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

TCP=19700
UDP=26000
next_ports() {
  TCP=$((TCP + 1))
  UDP=$((UDP + 8))
}

# in_ns NS CMD...: runs CMD in namespace NS ("-": here).
in_ns() {
  local ns=$1
  shift
  if [[ $ns == - ]]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

wait_listen() { # NS PORT
  local i
  for ((i = 0; i < 200; i++)); do
    in_ns "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
    sleep 0.05
  done
  die "nothing listens on TCP port $2"
}

# The result row of a perftest-format table for SIZE bytes: prints column COL.
row_field() { # FILE SIZE COL
  awk -v b="$2" -v c="$3" '$1 == b && $2 ~ /^[0-9]+$/ { print $c; exit }' "$1"
}

# verbs_pair SNS CNS SADDR CADDR PROGRAM ARGS: perftest over the stand-in; client output
# in $WORK/client.
verbs_pair() {
  local sns=$1 cns=$2 saddr=$3 caddr=$4
  shift 4
  in_ns "$sns" timeout 120 "$RUN" --planes "$saddr" --port "$UDP" -- "$@" -p "$TCP" \
    >"$WORK/server" 2>&1 &
  local server=$!
  wait_listen "$sns" "$TCP"
  in_ns "$cns" timeout 120 "$RUN" --planes "$caddr" --port "$UDP" -- "$@" -p "$TCP" "$saddr" \
    >"$WORK/client" 2>&1 || die "$* failed: $(cat "$WORK/client")"
  wait "$server" || die "$* server failed: $(cat "$WORK/server")"
  next_ports
}

# perf_pair SNS CNS SADDR CADDR CLIENT_ARGS: mroce-perf; client output in $WORK/client.
perf_pair() {
  local sns=$1 cns=$2 saddr=$3 caddr=$4
  shift 4
  in_ns "$sns" timeout 120 "$PERF" server --addr "$saddr" --port "$UDP" --tcp-port "$TCP" --once \
    >"$WORK/server" 2>&1 &
  local server=$!
  wait_listen "$sns" "$TCP"
  in_ns "$cns" timeout 120 "$PERF" client "$saddr" --addr "$caddr" --tcp-port "$TCP" "$@" \
    >"$WORK/client" 2>&1 || die "mroce-perf $* failed: $(cat "$WORK/client")"
  wait "$server" || die "mroce-perf server failed: $(cat "$WORK/server")"
  next_ports
}

# Bandwidth in Gbit/s of one run of each tool (64 KiB WRITEs for $seconds).
bw_verbs() { # SNS CNS SADDR CADDR
  verbs_pair "$@" ib_write_bw -s 65536 -D "$seconds" --report_gbits -F
  row_field "$WORK/client" 65536 4
}
bw_perf() { # SNS CNS SADDR CADDR
  perf_pair "$@" -t write -s 65536 -D "$seconds"
  row_field "$WORK/client" 65536 4
}
# Latency of SIZE-byte WRITEs: "typical average p99" in microseconds.
lat_verbs() { # SIZE
  verbs_pair - - 127.0.0.1 127.0.0.1 ib_write_lat -s "$1" -n "$lat_iters" -F
  awk -v b="$1" '$1 == b && $2 ~ /^[0-9]+$/ { print $5, $6, $8; exit }' "$WORK/client"
}
lat_perf() { # SIZE
  perf_pair - - 127.0.0.1 127.0.0.1 -t write --lat -s "$1" -n "$lat_iters"
  awk -v b="$1" '$1 == b && $2 ~ /^[0-9]+$/ { print $5, $6, $8; exit }' "$WORK/client"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", (b > 0) ? 100 * a / b : 0 }'; }

# rounds_bw SNS CNS SADDR CADDR: alternating rounds; sets VERBS_RUNS and PERF_RUNS.
rounds_bw() {
  VERBS_RUNS=""
  PERF_RUNS=""
  local r
  for ((r = 0; r < rounds; r++)); do
    VERBS_RUNS+="$(bw_verbs "$@") "
    PERF_RUNS+="$(bw_perf "$@") "
  done
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "loopback bandwidth ($rounds rounds of ${seconds}s each)" >&2
rounds_bw - - 127.0.0.1 127.0.0.1
lo_verbs=$(median <<<"$VERBS_RUNS")
lo_perf=$(median <<<"$PERF_RUNS")
lo_verbs_runs=$VERBS_RUNS
lo_perf_runs=$PERF_RUNS

echo "loopback latency ($rounds rounds)" >&2
# LAT[tool.size.column]: the runs' values, column typical, avg or p99.
declare -A LAT
for size in 8 4096; do
  for ((r = 0; r < rounds; r++)); do
    for tool in verbs perf; do
      read -r typical avg p99 <<<"$("lat_$tool" "$size")"
      LAT[$tool.$size.typical]+="$typical "
      LAT[$tool.$size.avg]+="$avg "
      LAT[$tool.$size.p99]+="$p99 "
    done
  done
done

if ((testbed)); then
  echo "testbed: 4 spines, MTU 4200, 0% and 1% loss" >&2
  "$TESTBED" --name "$TB" up --mtu 4200 >/dev/null
  H1=$("$TESTBED" --name "$TB" ns h1)
  H2=$("$TESTBED" --name "$TB" ns h2)
  A1=$("$TESTBED" --name "$TB" addr h1)
  A2=$("$TESTBED" --name "$TB" addr h2)
  rounds_bw "$H2" "$H1" "$A2" "$A1"
  tb0_verbs=$(median <<<"$VERBS_RUNS")
  tb0_perf=$(median <<<"$PERF_RUNS")
  "$TESTBED" --name "$TB" impair --all --loss 1 >/dev/null
  "$TESTBED" --name "$TB" counters --reset
  rounds_bw "$H2" "$H1" "$A2" "$A1"
  tb1_verbs=$(median <<<"$VERBS_RUNS")
  tb1_perf=$(median <<<"$PERF_RUNS")
  tb_lost=$("$TESTBED" --name "$TB" counters | awk 'NR > 1 { i += $4; l += $5 } END { printf "%d of %d", l, i }')
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

lat_row() { # LABEL TOOL SIZE
  local typical avg p99
  typical=$(median <<<"${LAT[$2.$3.typical]}")
  avg=$(median <<<"${LAT[$2.$3.avg]}")
  p99=$(median <<<"${LAT[$2.$3.p99]}")
  echo "| $1 | $3 | $typical | $avg | $p99 |"
}

mkdir -p "$(dirname "$out")"
{
  echo "# Verbs programs over MetaRoCE: what the stand-in library costs"
  echo
  echo "Generated by \`bench/verbs/run.sh\` on $(date -u +%Y-%m-%d) (UTC): $(nproc) CPUs"
  echo "($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r),"
  echo "load average $load_start at the start and $load_end at the end (other work on the"
  echo "machine shows as noise; the tools alternate, so it hits both alike)."
  echo
  echo "Both tools run the same test on the same stack (\`mroce::Device\`, 16 paths, MTU 4096,"
  echo "progress thread): \`ib_write_bw\` is Debian's perftest binary, unmodified, over the"
  echo "stand-in \`libibverbs.so.1\` (\`mroce-run\`); \`mroce-perf\` calls the C++ API directly."
  echo
  echo "## Loopback bandwidth"
  echo
  echo "RDMA WRITE, 64 KiB messages, 128 outstanding, ${seconds} s per run, two processes on"
  echo "127.0.0.1; median of $rounds alternating runs (Gbit/s of payload)."
  echo
  echo "| tool | runs (Gbit/s) | median (Gbit/s) |"
  echo "| --- | --- | --- |"
  echo "| \`ib_write_bw\` over the stand-in | $lo_verbs_runs | $lo_verbs |"
  echo "| \`mroce-perf -t write\` | $lo_perf_runs | $lo_perf |"
  echo
  echo "The stand-in reaches $(pct "$lo_verbs" "$lo_perf") of mroce-perf's bandwidth (target: at least 90%)."
  echo
  echo "## Loopback latency"
  echo
  echo "RDMA WRITE ping-pong, $lat_iters iterations per run, microseconds (\`ib_write_lat\` and"
  echo "\`mroce-perf --lat\` spin on the last byte of the buffer; one-way time = round trip / 2);"
  echo "medians over $rounds alternating runs of each run's typical (median), average and 99th"
  echo "percentile."
  echo
  echo "| tool | bytes | typical | average | 99th percentile |"
  echo "| --- | --- | --- | --- | --- |"
  for size in 8 4096; do
    lat_row "\`ib_write_lat\` over the stand-in" verbs "$size"
    lat_row "\`mroce-perf -t write --lat\`" perf "$size"
  done
  if ((testbed)); then
    echo
    echo "## Through the testbed, without and with 1% loss"
    echo
    echo "Hosts h1 and h2 of the namespace testbed (4 spines with ECMP, one plane, MTU 4200,"
    echo "no rate limit: the CPU is the bottleneck); then 1% random loss on every spine, both"
    echo "directions. Median of $rounds alternating runs of ${seconds} s (Gbit/s); the spines"
    echo "dropped $tb_lost packets during the loss runs."
    echo
    echo "| tool | 0% loss | 1% loss | kept at 1% |"
    echo "| --- | --- | --- | --- |"
    echo "| \`ib_write_bw\` over the stand-in | $tb0_verbs | $tb1_verbs | $(pct "$tb1_verbs" "$tb0_verbs") |"
    echo "| \`mroce-perf -t write\` | $tb0_perf | $tb1_perf | $(pct "$tb1_perf" "$tb0_perf") |"
  fi
} >"$out"
echo "wrote $out" >&2
