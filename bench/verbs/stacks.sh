#!/usr/bin/env bash
# UCX, libfabric and OpenMPI over MetaRoCE next to their TCP transports, between two hosts
# of the namespace testbed (one plane, 4 spines, MTU 4200), in one run:
#   - 64 KiB transfers: ucx_perftest's UCP put_bw and tag_bw with UCX_TLS=rc_verbs,ud_verbs
#     and its UCT put_bw on rc_verbs over the stand-in, ib_write_bw over the stand-in and
#     mroce-perf, against ucx_perftest's UCP put_bw and tag_bw with UCX_TLS=tcp;
#   - OpenMPI MPI_Allreduce of 1 MiB and 64 MiB on 4 ranks (2 per host), over MetaRoCE
#     (cm PML with libfabric verbs;ofi_rxm, and the ucx PML over rc_verbs, both on the
#     stand-in) against the ob1 PML's TCP BTL, at 0% and 1% random loss on every spine.
# Writes docs/results/stacks.md. Needs root, ucx-utils, perftest, libfabric-bin and
# openmpi-bin; builds what it runs in the build tree. --local ADDR runs both sides in this
# namespace on ADDR (an address not on lo, which libfabric skips), 4 MPI ranks here, no
# loss runs and no testbed.
#   bench/verbs/stacks.sh [--build DIR] [--out FILE] [--seconds S] [--rounds N] [--local ADDR]
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build
out=docs/results/stacks.md
seconds=5
rounds=3
local_addr=""
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --local) local_addr=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "stacks.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
die() {
  echo "stacks.sh: $*" >&2
  exit 1
}
[[ -f $build/CMakeCache.txt ]] || die "no configured build tree in $build (scripts/build.sh makes one)"
cmake --build "$build" --target mroce_verbs mroce_rdmacm mroce-run mroce-perf mpi_collectives \
  >/dev/null || die "could not build the libraries, mroce-perf and mpi_collectives in $build"
[[ -n $local_addr ]] || (($(id -u) == 0)) || die "the testbed needs root (or --local ADDR)"
for program in ucx_perftest ib_write_bw fi_info mpirun; do
  command -v "$program" >/dev/null || die "$program is not installed (scripts/install-deps.sh)"
done
RUN=$(cd "$build/tools/verbs" && pwd)/mroce-run
PERF=$build/tools/perf/mroce-perf
MPI_PROGRAM=$(cd "$build/tests/mpi" && pwd)/mpi_collectives
TESTBED=tools/testbed/testbed

WORK=$(mktemp -d)
TB=sbench$$
tb() { "$TESTBED" --name "$TB" "$@"; }
fail() { die "$*"; }
cleanup() {
  [[ -n $local_addr ]] || tb down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
export PROGRAM_TIMEOUT=300
MROCE_RUN=$RUN
export MROCE_RUN MROCE_PORT=26500
# shellcheck source-path=SCRIPTDIR source=../../tests/mpi/mpi_lib.sh
source tests/mpi/mpi_lib.sh

# in_ns NS CMD...: CMD in namespace NS ("-": this one).
in_ns() {
  local ns=$1
  shift
  if [[ $ns == - ]]; then "$@"; else ip netns exec "$ns" "$@"; fi
}
if [[ -n $local_addr ]]; then
  export RANK_ADDR=$local_addr  # the ucx PML's ranks (mpi_lib.sh)
  H1=- H2=- A1=$local_addr A2=$local_addr
  IFACE=$(ip -4 -o addr show | awk -v a="$local_addr" 'index($4, a "/") == 1 { print $2; exit }')
  [[ -n $IFACE && $IFACE != lo ]] || die "--local $local_addr: no interface other than lo has it"
  where="two processes on this host, both on $local_addr ($IFACE), no testbed"
else
  tb down >/dev/null
  tb up --mtu 4200 >/dev/null || die "testbed up failed"
  H1=$(tb ns h1)
  H2=$(tb ns h2)
  A1=$(tb addr h1 0)
  A2=$(tb addr h2 0)
  IFACE=eth0  # plane 0 of a testbed host
  where="hosts h1 and h2 of the namespace testbed (one plane, 4 spines with ECMP, MTU 4200,
no rate limit: the CPU is the bottleneck)"
fi
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

TCP=19900
wait_listen() { # NS PORT SERVER_OUTPUT
  local i
  for ((i = 0; i < 1200; i++)); do
    in_ns "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
    sleep 0.05
  done
  die "nothing listened on port $2 in $1: $(tail -5 "$3")"
}
# pair LABEL SERVER_CMD... ::: CLIENT_CMD...: server in h2, client in h1; client output
# in $WORK/LABEL. Both must exit 0.
pair() {
  local label=$1
  shift
  local -a server=()
  while [[ $1 != ::: ]]; do
    server+=("$1")
    shift
  done
  shift
  in_ns "$H2" timeout 120 "${server[@]}" >"$WORK/$label.server" 2>&1 &
  local pid=$!
  wait_listen "$H2" "$TCP" "$WORK/$label.server"
  in_ns "$H1" timeout 120 "$@" >"$WORK/$label" 2>&1 ||
    die "$label client failed: $(tail -5 "$WORK/$label")"
  wait "$pid" || die "$label server failed: $(tail -5 "$WORK/$label.server")"
  TCP=$((TCP + 1))
}
mbps_to_gbit() { awk -v v="$1" 'BEGIN { printf "%.2f", v * 8 * 1048576 / 1e9 }'; }

# One run of each, Gbit/s of payload.
ucx_iters() { echo $((seconds * 4000)); }
run_uct_rc() {
  pair uct_rc "$RUN" --planes "$A2" --device-files -- ucx_perftest -t put_bw -x rc_verbs \
    -d mroce0:1 -D zcopy -s 65536 -n "$(ucx_iters)" -p "$TCP" ::: \
    "$RUN" --planes "$A1" --device-files -- ucx_perftest -t put_bw -x rc_verbs -d mroce0:1 \
    -D zcopy -s 65536 -n "$(ucx_iters)" -p "$TCP" "$A2"
  mbps_to_gbit "$(awk '$1 == "Final:" { print $7 }' "$WORK/uct_rc")"
}
run_ucp_rc() { # TEST: UCP over rc_verbs, wired up over ud_verbs
  local -a env=(env "UCX_TLS=rc_verbs,ud_verbs" UCX_NET_DEVICES=mroce0:1)
  pair "ucp_rc_$1" "$RUN" --planes "$A2" --device-files -- "${env[@]}" ucx_perftest -t "$1" \
    -s 65536 -n "$(ucx_iters)" -p "$TCP" ::: "$RUN" --planes "$A1" --device-files -- \
    "${env[@]}" ucx_perftest -t "$1" -s 65536 -n "$(ucx_iters)" -p "$TCP" "$A2"
  mbps_to_gbit "$(awk '$1 == "Final:" { print $7 }' "$WORK/ucp_rc_$1")"
}
run_ucp_tcp() { # TEST
  pair "ucp_$1" env UCX_TLS=tcp UCX_NET_DEVICES="$IFACE" ucx_perftest -t "$1" -s 65536 \
    -n "$(ucx_iters)" -p "$TCP" ::: env UCX_TLS=tcp UCX_NET_DEVICES="$IFACE" ucx_perftest -t "$1" \
    -s 65536 -n "$(ucx_iters)" -p "$TCP" "$A2"
  mbps_to_gbit "$(awk '$1 == "Final:" { print $7 }' "$WORK/ucp_$1")"
}
run_write_bw() {
  pair write_bw "$RUN" --planes "$A2" -- ib_write_bw -s 65536 -D "$seconds" --report_gbits -F \
    -p "$TCP" ::: "$RUN" --planes "$A1" -- ib_write_bw -s 65536 -D "$seconds" --report_gbits -F \
    -p "$TCP" "$A2"
  awk '$1 == 65536 && NF == 5 { print $4; exit }' "$WORK/write_bw"
}
run_perf() {
  pair perf "$PERF" server --addr "$A2" --port 26900 --tcp-port "$TCP" --once ::: \
    "$PERF" client "$A2" --addr "$A1" --tcp-port "$TCP" -t write -s 65536 -D "$seconds"
  awk '$1 == 65536 && $2 ~ /^[0-9]+$/ { print $4; exit }' "$WORK/perf"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A runs
for ((r = 0; r < rounds; r++)); do
  runs[uct_rc]+="$(run_uct_rc) "
  runs[ucp_rc_put]+="$(run_ucp_rc ucp_put_bw) "
  runs[ucp_rc_tag]+="$(run_ucp_rc tag_bw) "
  runs[ucp_put]+="$(run_ucp_tcp ucp_put_bw) "
  runs[ucp_tag]+="$(run_ucp_tcp tag_bw) "
  runs[write_bw]+="$(run_write_bw) "
  runs[perf]+="$(run_perf) "
done

# OpenMPI all-reduce, median time over the iterations; bus bandwidth in Gbit/s.
allreduce() { # TRANSPORT BYTES ITERS
  local -a hosts=(2 h1 h2)
  [[ -z $local_addr ]] || hosts=(4 -)
  mpi_run "$WORK/mpi" "$1" "${hosts[@]}" -- "$MPI_PROGRAM" --bench "$2" "$3" ||
    die "mpirun $1 failed (loss $loss%): $(tail -5 "$WORK/mpi")"
  awk '$1 == "allreduce" { print $9 * 1e3, $11; exit }' "$WORK/mpi"
}
declare -A mpi
losses=(0 1)
[[ -z $local_addr ]] || losses=(0)
for loss in "${losses[@]}"; do
  if ((loss)); then
    tb impair --all --loss 1 >/dev/null
    tb counters --reset
  fi
  for transport in metaroce ucx tcp; do
    mpi[$transport.1m.$loss]=$(allreduce "$transport" 1048576 50)
    mpi[$transport.64m.$loss]=$(allreduce "$transport" 67108864 5)
  done
done
lost=0
[[ -n $local_addr ]] || lost=$(tb counters | awk 'NR > 1 { lost += $5 } END { print lost + 0 }')
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
{
  echo "# UCX, libfabric and OpenMPI over MetaRoCE against their TCP transports"
  echo
  echo "Generated by \`bench/verbs/stacks.sh --seconds $seconds --rounds $rounds${local_addr:+ --local ADDR}\` on $(date -u +%F) (UTC):"
  echo "$(nproc) CPUs, Linux $(uname -r), load average $load_start at the start and"
  echo "$load_end at the end (other work on the machine shows as noise; the tools alternate)."
  echo "Between $where; every tool on the same path in the same run. MetaRoCE runs with 16"
  echo "paths and MTU 4096 (the defaults)."
  echo
  echo "## 64 KiB transfers"
  echo
  echo "Gbit/s of payload, median of $rounds alternating runs (each $(ucx_iters) messages for"
  echo "ucx_perftest, $seconds s for the others)."
  echo
  echo "| tool | transport | runs (Gbit/s) | median |"
  echo "| --- | --- | --- | --- |"
  for k in ucp_rc_put ucp_rc_tag uct_rc write_bw perf ucp_put ucp_tag; do
    case $k in
      ucp_rc_put) name="\`ucx_perftest -t ucp_put_bw\` (UCP)"; tr="UCX \`rc_verbs,ud_verbs\` on MetaRoCE (stand-in)" ;;
      ucp_rc_tag) name="\`ucx_perftest -t tag_bw\` (UCP)"; tr="UCX \`rc_verbs,ud_verbs\` on MetaRoCE (stand-in)" ;;
      uct_rc) name="\`ucx_perftest -t put_bw -x rc_verbs -D zcopy\` (UCT)"; tr="MetaRoCE (stand-in)" ;;
      write_bw) name="\`ib_write_bw\`"; tr="MetaRoCE (stand-in)" ;;
      perf) name="\`mroce-perf -t write\`"; tr="MetaRoCE (C++ API)" ;;
      ucp_put) name="\`ucx_perftest -t ucp_put_bw\` (UCP)"; tr="UCX \`tcp\`" ;;
      ucp_tag) name="\`ucx_perftest -t tag_bw\` (UCP)"; tr="UCX \`tcp\`" ;;
    esac
    echo "| $name | $tr | ${runs[$k]}| $(median <<<"${runs[$k]}") |"
  done
  uct=$(median <<<"${runs[uct_rc]}")
  put=$(median <<<"${runs[ucp_rc_put]}")
  tag=$(median <<<"${runs[ucp_rc_tag]}")
  echo
  echo "UCP over rc_verbs on the stand-in moves $(ratio "$put" "$(median <<<"${runs[ucp_put]}")")x the bandwidth"
  echo "of UCP over UCX's tcp transport in put_bw and $(ratio "$tag" "$(median <<<"${runs[ucp_tag]}")")x in tag_bw."
  echo "UCT's rc_verbs put moves $(ratio "$uct" "$(median <<<"${runs[ucp_put]}")")x UCP-over-tcp's put,"
  echo "$(ratio "$uct" "$(median <<<"${runs[write_bw]}")")x that of \`ib_write_bw\` and $(ratio "$uct" "$(median <<<"${runs[perf]}")")x that of \`mroce-perf\`."
  echo "UCP wires rc_verbs up over ud_verbs: \`UCX_TLS=rc_verbs\` alone stops at"
  echo "\"no auxiliary transport\" (UCX 1.13 needs one that calls back asynchronously)."
  echo
  if [[ -n $local_addr ]]; then
    echo "## OpenMPI MPI_Allreduce, 4 ranks on this host"
  else
    echo "## OpenMPI MPI_Allreduce, 4 ranks (2 on h1, 2 on h2)"
  fi
  echo
  echo "\`mpi_collectives --bench\` (tests/mpi): the median over 50 (1 MiB) or 5 (64 MiB)"
  echo "all-reduces of doubles, each timed on the slowest rank; bus bandwidth as NCCL's tests"
  echo "define it (2(n-1)/n of the buffer per rank). MetaRoCE cm: \`--mca pml cm --mca mtl ofi\`"
  echo "with libfabric's \`verbs;ofi_rxm\` over the stand-in libraries; MetaRoCE ucx: \`--mca pml"
  echo "ucx\` with \`UCX_TLS=rc_verbs,ud_verbs\` on the stand-in's device; TCP: \`--mca pml ob1"
  echo "--mca btl tcp,self\`. All run ranks on the same host over their own transport"
  echo "(no shared memory)."
  [[ -n $local_addr ]] || echo "The spines dropped $lost packets during the 1% runs."
  echo
  echo "| size | loss | cm (ms) | cm (Gbit/s) | ucx (ms) | ucx (Gbit/s) | TCP BTL (ms) | TCP BTL (Gbit/s) | cm / TCP | ucx / TCP |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for size in 1m 64m; do
    for loss in "${losses[@]}"; do
      read -r mt mb <<<"${mpi[metaroce.$size.$loss]}"
      read -r ut ub <<<"${mpi[ucx.$size.$loss]}"
      read -r tt tbw <<<"${mpi[tcp.$size.$loss]}"
      label=$([[ $size == 1m ]] && echo "1 MiB" || echo "64 MiB")
      echo "| $label | $loss% | $(printf %.2f "$mt") | $mb | $(printf %.2f "$ut") | $ub | $(printf %.2f "$tt") | $tbw | $(ratio "$mb" "$tbw") | $(ratio "$ub" "$tbw") |"
    done
  done
} >"$out"
echo "stacks.sh: wrote $out"
