#!/usr/bin/env bash
# OpenMPI over MetaRoCE, unmodified: MPI_Allreduce and MPI_Alltoall of several sizes with
# every element checked (mpi_collectives), through OpenMPI's cm PML and libfabric's
# verbs;ofi_rxm on the stand-in libraries. 2 ranks on one host of the namespace testbed
# (its interface address: libfabric does not use lo), 4 ranks on two hosts across the
# spines, the same 4 through the ucx PML over UCX's rc_verbs, and both 4-rank runs again
# with 1% random loss on every spine.
# shellcheck source-path=SCRIPTDIR source=../verbs/lib.sh
source "$(dirname "$0")/../verbs/lib.sh"
[[ -n ${TESTBED:-} && -x $TESTBED ]] || fail "TESTBED is not set to tools/testbed/testbed"
[[ -n ${MPI_PROGRAM:-} && -x $MPI_PROGRAM ]] || fail "MPI_PROGRAM is not set to mpi_collectives"
(($(id -u) == 0)) || fail "the testbed needs root (network namespaces): run ctest as root"

TB=mp$$
tb() { "$TESTBED" --name "$TB" "$@"; }
# shellcheck source-path=SCRIPTDIR source=mpi_lib.sh
source "$(dirname "$0")/mpi_lib.sh"
tb down >/dev/null
CLEANUPS+=("tb down >/dev/null 2>&1")
tb up --mtu 4200 >/dev/null || fail "testbed up failed"
export MROCE_RUN

checked() { # LABEL RANKS: every check of mpi_collectives passed on RANKS ranks
  local label=$1 ranks=$2 n
  n=$(grep -c "^ok [a-z]* [0-9]* .* on $ranks ranks\$" "$WORK/$label" || true)
  ((n == 9)) || { cat "$WORK/$label" >&2; fail "$label: $n of 9 checks passed"; }
  ok "$label: allreduce and alltoall, 9 sizes, checked on $ranks ranks"
}

collectives() { # LABEL TRANSPORT PER_HOST HOST...
  local label=$1 transport=$2 per_host=$3
  shift 3
  local status=0
  mpi_run "$WORK/$label" "$transport" "$per_host" "$@" -- "$MPI_PROGRAM" || status=$?
  ((status == 0)) || { cat "$WORK/$label" >&2; fail "$label: mpirun exited $status"; }
  checked "$label" $((per_host * $#))
}

collectives one_host metaroce 2 h1
collectives two_hosts metaroce 2 h1 h2
collectives two_hosts_ucx ucx 2 h1 h2

tb impair --all --loss 1 >/dev/null
tb counters --reset
collectives two_hosts_loss metaroce 2 h1 h2
collectives two_hosts_loss_ucx ucx 2 h1 h2
lost=$(tb counters | awk 'NR > 1 { lost += $5 } END { print lost + 0 }')
((lost > 0)) || fail "the spines dropped nothing: the loss run did not meet loss"
ok "1% loss: the spines dropped $lost packets"
