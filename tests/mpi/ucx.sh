#!/usr/bin/env bash
# OpenMPI's ucx PML over MetaRoCE, unmodified: MPI_Allreduce and MPI_Alltoall of several
# sizes with every element checked (mpi_collectives), 2 ranks on this host's loopback
# address, over UCX's rc_verbs on the stand-in's device (UCX_TLS=rc_verbs,ud_verbs: no
# shared memory, so every byte crosses MetaRoCE). The ranks' RC queue pairs must connect.
# shellcheck source-path=SCRIPTDIR source=../verbs/lib.sh
source "$(dirname "$0")/../verbs/lib.sh"
[[ -n ${MPI_PROGRAM:-} && -x $MPI_PROGRAM ]] || fail "MPI_PROGRAM is not set to mpi_collectives"
command -v ucx_info >/dev/null || fail "ucx_info is missing: install ucx-utils"
# shellcheck source-path=SCRIPTDIR source=mpi_lib.sh
source "$(dirname "$0")/mpi_lib.sh"
export MROCE_RUN MROCE_DEBUG=1

status=0
mpi_run "$WORK/loopback" ucx 2 - -- "$MPI_PROGRAM" || status=$?
((status == 0)) || { cat "$WORK/loopback" >&2; fail "loopback: mpirun exited $status"; }
n=$(grep -c '^ok [a-z]* [0-9]* .* on 2 ranks$' "$WORK/loopback" || true)
((n == 9)) || { cat "$WORK/loopback" >&2; fail "loopback: $n of 9 checks passed"; }
qps=$(grep -c '^mroce-verbs: QP 0x[0-9a-f]* -> 127.0.0.1 .*: ok$' "$WORK/loopback" || true)
((qps >= 2)) || { cat "$WORK/loopback" >&2; fail "loopback: $qps RC queue pairs connected, expected 2 or more"; }
ok "loopback: pml ucx over rc_verbs, allreduce and alltoall, 9 sizes, checked on 2 ranks ($qps RC QPs)"
