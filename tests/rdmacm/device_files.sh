#!/usr/bin/env bash
# mroce-run --device-files: the program sees /dev/infiniband/<dev> and rdma_cm as
# read-write character devices and /sys/class/infiniband/<dev> with the files programs
# read (node type, port state, RoCE v2 GID types, the interface behind the device); the
# host sees none of it. UCX (ucx_info -d) then takes the device for rc_verbs and ud_verbs.
# As root, and without root (nobody, through a user namespace).
# shellcheck source-path=SCRIPTDIR source=../verbs/lib.sh
source "$(dirname "$0")/../verbs/lib.sh"

host_view() { ls -la /dev/infiniband /sys/class/infiniband /sys/class/infiniband_verbs 2>&1 || true; }
before=$(host_view)

check_view() { # OUT: what the program saw
  local out=$1
  local -a want=(
    "char /dev/infiniband/mroce0 rw"
    "char /dev/infiniband/rdma_cm rw"
    "char /dev/infiniband/uverbs0 rw"
    "node_type 1: CA"
    "state 4: ACTIVE"
    "link_layer Ethernet"
    "gid 0000:0000:0000:0000:0000:ffff:7f00:0001"
    "type RoCE v2"
    "ndev lo"
    "net lo"
    "ibdev mroce0")
  local line
  for line in "${want[@]}"; do
    grep -qxF "$line" "$out" || { cat "$out" >&2; fail "the program did not see: $line"; }
  done
}

# What a program looks at, one line each.
# shellcheck disable=SC2016 # expanded by the inner shell
probe='
for f in mroce0 rdma_cm uverbs0; do
  p=/dev/infiniband/$f
  [ -c "$p" ] && [ -r "$p" ] && [ -w "$p" ] && echo "char $p rw"
done
d=/sys/class/infiniband/mroce0
echo "node_type $(cat $d/node_type)"
echo "state $(cat $d/ports/1/state)"
echo "link_layer $(cat $d/ports/1/link_layer)"
echo "gid $(cat $d/ports/1/gids/0)"
echo "type $(cat $d/ports/1/gid_attrs/types/0)"
echo "ndev $(cat $d/ports/1/gid_attrs/ndevs/0)"
[ -d $d/device/net/lo ] && echo "net lo"
echo "ibdev $(cat /sys/class/infiniband_verbs/uverbs0/ibdev)"
echo "uid $(id -u)"'

verbs - "$WORK/root" --planes 127.0.0.1 --device-files -- sh -c "$probe" ||
  { cat "$WORK/root" >&2; fail "mroce-run --device-files failed"; }
check_view "$WORK/root"
ok "the program sees the device files"
[[ $(host_view) == "$before" ]] || fail "the host's /dev or /sys changed"
ok "the host's /dev and /sys are unchanged"

if command -v ucx_info >/dev/null; then
  verbs - "$WORK/ucx" --planes 127.0.0.1 --device-files -- ucx_info -d || true
  for tl in rc_verbs ud_verbs; do
    awk -v tl="$tl" '$2 == "Transport:" { t = $3 } $2 == "Device:" && t == tl && $3 == "mroce0:1" { found = 1 }
      END { exit !found }' "$WORK/ucx" || { cat "$WORK/ucx" >&2; fail "ucx_info -d lists no $tl on mroce0:1"; }
  done
  ok "ucx_info -d takes mroce0:1 for rc_verbs and ud_verbs"
fi

if (($(id -u) == 0)) && id nobody >/dev/null 2>&1; then
  # The same without root: a user namespace maps nobody to root for the mounts, and the
  # program runs as nobody again. The library is copied where nobody can read it.
  libdir=$WORK/lib
  cp -r "$("$MROCE_RUN" --print-libdir)" "$libdir"
  chmod 755 "$WORK"
  chmod -R a+rX "$libdir"
  preload=()
  [[ -z ${VERBS_PRELOAD:-} ]] ||
    preload=(LD_PRELOAD="$VERBS_PRELOAD" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
  timeout -k 5 "$PROGRAM_TIMEOUT" setpriv --reuid nobody --regid nogroup --clear-groups \
    env "${preload[@]}" MROCE_VERBS_LIBDIR="$libdir" "$MROCE_RUN" --planes 127.0.0.1 --device-files -- \
    sh -c "$probe" >"$WORK/nobody" 2>&1 || { cat "$WORK/nobody" >&2; fail "--device-files as nobody failed"; }
  check_view "$WORK/nobody"
  grep -qx "uid $(id -u nobody)" "$WORK/nobody" || fail "the program did not run as nobody"
  ok "without root (user namespace): the same files, the program runs as nobody"
fi
