#!/usr/bin/env bash
# UCX's UCP layer over rc_verbs, through unmodified ucx_perftest on the stand-in's device
# (its device files from mroce-run): tag_bw, ucp_put_bw and ucp_get between two processes
# on one address with UCX_TLS=rc_verbs,ud_verbs (UCP sets up its RC queue pairs over
# ud_verbs), UCT's put_bw and get over rc_verbs alone, and UCP's put_bw and get over
# ud_verbs alone (UCP carries them as messages there). Each checks the exit status of
# both sides and the iteration count and bandwidth of the client's final row; over
# rc_verbs also that an RC queue pair connected on each side (mroce-run --debug names it).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
command -v ucx_perftest >/dev/null || fail "ucx_perftest is missing: install ucx-utils"

PORT=${MROCE_PORT:?}
TCP=$((PORT + 10))

ucx() { # OUT TLS PROGRAM ARGS
  local out=$1 tls=$2
  shift 2
  verbs - "$out" --planes 127.0.0.1 --device-files --debug -- \
    env UCX_TLS="$tls" UCX_NET_DEVICES=mroce0:1 "$@"
}

# perftest LABEL TLS ITERS ARGS...: one server, one client; sets MBS to the client's MB/s.
perftest() {
  local label=$1 tls=$2 iters=$3 server server_status=0 client_status=0 sides=(server client)
  shift 3
  ucx "$WORK/$label.server" "$tls" ucx_perftest -p "$TCP" &
  server=$!
  wait_listen - "$TCP" || { wait "$server" || true; cat "$WORK/$label.server" >&2; fail "$label: no server"; }
  ucx "$WORK/$label.client" "$tls" ucx_perftest 127.0.0.1 -p "$TCP" -n "$iters" "$@" ||
    client_status=$?
  wait "$server" || server_status=$?
  TCP=$((TCP + 1))
  if ((client_status != 0 || server_status != 0)); then
    cat "$WORK/$label.server" "$WORK/$label.client" >&2
    fail "$label: exit status server $server_status, client $client_status"
  fi
  local side
  [[ $tls == *rc_verbs* ]] || sides=()
  for side in "${sides[@]}"; do
    grep -q '^mroce-verbs: QP 0x[0-9a-f]* -> .*: ok$' "$WORK/$label.$side" ||
      { cat "$WORK/$label.$side" >&2; fail "$label: no RC queue pair connected on the $side"; }
  done
  local n
  read -r n MBS < <(awk '$1 == "Final:" { print $2, $6 }' "$WORK/$label.client")
  [[ ${n:-} == "$iters" ]] || { cat "$WORK/$label.client" >&2; fail "$label: ${n:-no} iterations, expected $iters"; }
  positive "$MBS" || fail "$label: bandwidth $MBS MB/s"
}

UCP=rc_verbs,ud_verbs
MBS=
for size in 1024 65536; do
  perftest "tag_bw_$size" "$UCP" 2000 -t tag_bw -s "$size"
  ok "UCP tag_bw over $UCP: 2000 x $size bytes, $MBS MB/s"
done
perftest ucp_put_bw "$UCP" 2000 -t ucp_put_bw -s 65536
ok "UCP put_bw over $UCP: 2000 x 64 KB, $MBS MB/s"
perftest ucp_get "$UCP" 2000 -t ucp_get -s 65536
ok "UCP get over $UCP: 2000 x 64 KB, $MBS MB/s"
perftest uct_put_bw rc_verbs 2000 -t put_bw -x rc_verbs -d mroce0:1 -D zcopy -s 65536
ok "UCT put_bw over rc_verbs: 2000 x 64 KB, $MBS MB/s"
perftest uct_get rc_verbs 2000 -t get -x rc_verbs -d mroce0:1 -D zcopy -s 65536
ok "UCT get over rc_verbs: 2000 x 64 KB, $MBS MB/s"
perftest ud_put_bw ud_verbs 200 -t ucp_put_bw -s 65536
ok "UCP put_bw over ud_verbs: 200 x 64 KB, $MBS MB/s"
perftest ud_get ud_verbs 200 -t ucp_get -s 65536
ok "UCP get over ud_verbs: 200 x 64 KB, $MBS MB/s"
