#!/usr/bin/env bash
# rdma_cm programs, unmodified, between two hosts of the namespace testbed: the server
# binds its own address, the client resolves the server's (the routing table picks the
# source address, which names the device). rping with verification, ucmatose,
# rdma_server/rdma_client, ib_write_bw -R (also at 1% loss on every spine), libfabric's
# fi_pingpong over the verbs provider (MSG and DGRAM), verbs;ofi_rxm and verbs;ofi_rxd
# (RDM), and a connect to a port nobody listens on.
# shellcheck source-path=SCRIPTDIR source=../verbs/lib.sh
source "$(dirname "$0")/../verbs/lib.sh"
# shellcheck source-path=SCRIPTDIR source=cm_lib.sh
source "$(dirname "$0")/cm_lib.sh"

[[ -n ${TESTBED:-} && -x $TESTBED ]] || fail "TESTBED is not set to tools/testbed/testbed"
(($(id -u) == 0)) || fail "the testbed needs root (network namespaces): run ctest as root"

TB=cm$$
tb() { "$TESTBED" --name "$TB" "$@"; }
tb down >/dev/null
CLEANUPS+=("tb down >/dev/null 2>&1")
tb up --mtu 4200 >/dev/null || fail "testbed up failed"
H1=$(tb ns h1)
H2=$(tb ns h2)
A1=$(tb addr h1 0)
A2=$(tb addr h2 0)

PORT=${MROCE_PORT:?}
CM=$((PORT + 10))
command -v fi_pingpong >/dev/null || fail "fi_pingpong is missing: install libfabric-bin"
SERVER_OPTS=(--planes "$A2")
CLIENT_OPTS=(--planes "$A1")

cm_pair rping "$H2" "$H1" "$CM" rping -s -a "$A2" -p "$CM" -C 100 -V -- \
  rping -c -a "$A2" -p "$CM" -C 100 -V -v
rping_check "$WORK/rping.client" 100
ok "rping: 100 pings verified"

CM=$((CM + 1))
cm_pair ucmatose "$H2" "$H1" "$CM" ucmatose -p "$CM" -c 2 -C 50 -S 4096 -- \
  ucmatose -s "$A2" -p "$CM" -c 2 -C 50 -S 4096
status_check "$WORK/ucmatose.server"
status_check "$WORK/ucmatose.client"
ok "ucmatose: 2 connections x 50 messages of 4096 bytes"

CM=$((CM + 1))
cm_pair rdma_server "$H2" "$H1" "$CM" rdma_server -s "$A2" -p "$CM" -- \
  rdma_client -s "$A2" -p "$CM"
grep -qx 'rdma_server: end 0' "$WORK/rdma_server.server" || fail "rdma_server did not end 0"
grep -qx 'rdma_client: end 0' "$WORK/rdma_server.client" || fail "rdma_client did not end 0"
ok "rdma_server/rdma_client"

write_bw_cm() { # LABEL
  local label=$1
  CM=$((CM + 1))
  cm_pair "$label" "$H2" "$H1" "$CM" ib_write_bw -R -p "$CM" -s 65536 -n 2000 -- \
    ib_write_bw -R -p "$CM" -s 65536 -n 2000 "$A2"
  bw_check "$WORK/$label.server" 65536 2000 >/dev/null
  ok "$label: $(bw_check "$WORK/$label.client" 65536 2000) MB/s"
}
write_bw_cm write_bw_cm

tb impair --all --loss 1 >/dev/null
tb counters --reset
write_bw_cm write_bw_cm_loss
lost=$(tb counters | awk 'NR > 1 { lost += $5 } END { print lost + 0 }')
((lost > 0)) || fail "the spines dropped nothing: the loss run did not meet loss"
ok "1% loss: the spines dropped $lost packets"
tb heal all >/dev/null

# libfabric's verbs provider (rdma_cm MSG endpoints) and ofi_rxm above it (RDM), through
# fi_pingpong with data checks (-c); the server listens for its control link on -B.
fi_pingpong_run() { # LABEL PROVIDER ENDPOINT SIZE ROW
  local label=$1 provider=$2 endpoint=$3 size=$4 row=$5 line
  CM=$((CM + 1))
  cm_pair "$label" "$H2" "$H1" "$CM" \
    fi_pingpong -p "$provider" -e "$endpoint" -I 100 -S "$size" -c -B "$CM" -- \
    fi_pingpong -p "$provider" -e "$endpoint" -I 100 -S "$size" -c -P "$CM" "$A2"
  for side in server client; do
    line=$(awk -v r="$row" '$1 == r && $2 == 100 && $3 == "=100" { print; exit }' \
      "$WORK/$label.$side")
    [[ -n $line ]] || { cat "$WORK/$label.$side" >&2; fail "$label: no row for $row from the $side"; }
    positive "$(awk '{ print $6 }' <<<"$line")" || fail "$label: no bandwidth from the $side"
  done
  ok "$label: 100 x $size bytes checked, $(awk '{ print $6 }' <<<"$line") MB/s"
}
fi_pingpong_run fi_msg verbs msg 4096 4k
fi_pingpong_run fi_msg_large verbs msg 65536 64k
fi_pingpong_run fi_rdm "verbs;ofi_rxm" rdm 4096 4k
# DGRAM endpoints are UD queue pairs; ofi_rxd builds reliable RDM endpoints over them.
fi_pingpong_run fi_dgram verbs dgram 4096 4k
fi_pingpong_run fi_rxd "verbs;ofi_rxd" rdm 65536 64k

CM=$((CM + 1))
ok "refused: REJECTED after $(refused "$H1" "$A2" "$CM") ms"
