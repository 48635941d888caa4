# shellcheck shell=bash
# Runs MPI programs across hosts of the namespace testbed (sourced after
# tests/verbs/lib.sh, with tb() defined for the testbed instance). mpirun starts in the first
# host's namespace and reaches the others through netns-agent.sh.

MPI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v mpirun >/dev/null || fail "mpirun is missing: install openmpi-bin"
# The tests run as root in the namespaces; OpenMPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# mpi_run OUT TRANSPORT PER_HOST HOST... -- PROGRAM ARGS
#   TRANSPORT metaroce: OpenMPI's cm PML over libfabric's verbs;ofi_rxm, on the stand-in
#   libraries (each rank through rank.sh and mroce-run); ucx: the ucx PML over UCX's
#   rc_verbs (wired up over ud_verbs) on the stand-in's device, its device files from
#   mroce-run (ranks of this namespace on RANK_ADDR, default 127.0.0.1); tcp: the ob1 PML and the TCP BTL.
#   PER_HOST ranks on each HOST (testbed host names: h1, h2, ...; "-" alone: this
#   namespace, every rank here). Returns mpirun's status.
mpi_run() {
  local out=$1 transport=$2 per_host=$3
  shift 3
  local -a hosts=()
  while [[ $1 != -- ]]; do
    hosts+=("$1")
    shift
  done
  shift
  local hostfile=$WORK/hosts.$$ h
  local -a prefix=() args=(-np $((per_host * ${#hosts[@]})) -x PATH -x MROCE_PORT) net=()
  if [[ ${hosts[0]} == - ]]; then
    args+=(--oversubscribe)  # more ranks than cores is fine: they wait in the library
  else
    : >"$hostfile"
    for h in "${hosts[@]}"; do echo "$(tb ns "$h") slots=$per_host" >>"$hostfile"; done
    prefix=(ip netns exec "$(tb ns "${hosts[0]}")")
    net=(10.77.0.0/16)  # the testbed's addresses
    # A daemon shares its hwloc topology with its ranks through memory mapped at the
    # biggest hole of its address space; here that write crashed 1 daemon launch in 3
    # (SIGSEGV in hwloc_shmem_topology_write near the stack, then "ORTE was unable to
    # reliably start one or more daemons"). The ranks read the topology themselves.
    args+=(--hostfile "$hostfile" --mca plm_rsh_agent "$MPI_DIR/netns-agent.sh"
      --mca oob_tcp_if_include "${net[0]}" --mca rtc_hwloc_vmhole none)
  fi
  case $transport in
    metaroce)
      args+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm"
        -x MROCE_RUN -x "MROCE_PATHS=${MROCE_PATHS:-16}" "$MPI_DIR/rank.sh")
      ;;
    ucx)
      if [[ ${hosts[0]} == - ]]; then args+=(-x "RANK_ADDR=${RANK_ADDR:-127.0.0.1}"); fi
      if [[ -n ${MROCE_DEBUG:-} ]]; then args+=(-x MROCE_DEBUG); fi
      args+=(--mca pml ucx --mca btl self -x "UCX_TLS=rc_verbs,ud_verbs" -x UCX_NET_DEVICES=mroce0:1
        -x MROCE_RUN -x RANK_DEVICE_FILES=1 -x "MROCE_PATHS=${MROCE_PATHS:-16}" "$MPI_DIR/rank.sh")
      ;;
    tcp)
      args+=(--mca pml ob1 --mca btl "tcp,self")
      [[ ${#net[@]} == 0 ]] || args+=(--mca btl_tcp_if_include "${net[0]}")
      ;;
    *) fail "mpi_run: unknown transport '$transport'" ;;
  esac
  timeout -k 5 "$PROGRAM_TIMEOUT" "${prefix[@]}" mpirun "${args[@]}" "$@" >"$out" 2>&1
}
