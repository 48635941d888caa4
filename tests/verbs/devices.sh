#!/usr/bin/env bash
# ibv_devices and ibv_devinfo, unmodified, list the configured devices with active
# Ethernet ports and IPv4-mapped GIDs, one GID per plane.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

verbs - "$WORK/devices" --devices "127.0.0.1;127.0.0.2" -- ibv_devices ||
  fail "ibv_devices exited with $?: $(cat "$WORK/devices")"
grep -Eq '^[[:space:]]+mroce0[[:space:]]+024d52007f000001$' "$WORK/devices" || fail "mroce0 missing: $(cat "$WORK/devices")"
grep -Eq '^[[:space:]]+mroce1[[:space:]]+024d52007f000002$' "$WORK/devices" || fail "mroce1 missing: $(cat "$WORK/devices")"
ok "ibv_devices lists both devices with their GUIDs"

verbs - "$WORK/devinfo" --devices "127.0.0.1;127.0.0.2" -- ibv_devinfo -d mroce1 ||
  fail "ibv_devinfo exited with $?: $(cat "$WORK/devinfo")"
for expected in 'hca_id:[[:space:]]+mroce1' 'state:[[:space:]]+PORT_ACTIVE' \
  'link_layer:[[:space:]]+Ethernet' 'active_mtu:[[:space:]]+4096'; do
  grep -Eq "$expected" "$WORK/devinfo" || fail "ibv_devinfo lacks '$expected': $(cat "$WORK/devinfo")"
done
ok "ibv_devinfo shows an active Ethernet port"

verbs - "$WORK/planes" --planes 127.0.0.1,127.0.0.3 --mtu 2048 -- ibv_devinfo -v ||
  fail "ibv_devinfo -v exited with $?: $(cat "$WORK/planes")"
for expected in 'gid_tbl_len:[[:space:]]+2' 'GID\[ *0\]:[[:space:]]+::ffff:127.0.0.1, RoCE v2' \
  'GID\[ *1\]:[[:space:]]+::ffff:127.0.0.3, RoCE v2' 'active_mtu:[[:space:]]+2048' \
  'vendor_id:[[:space:]]+0x0000' 'max_qp_rd_atom:[[:space:]]+[1-9]'; do
  grep -Eq "$expected" "$WORK/planes" || fail "ibv_devinfo -v lacks '$expected': $(cat "$WORK/planes")"
done
ok "a device with two planes has two GIDs"

# A bad configuration is one clear line, and the program fails.
if verbs - "$WORK/bad" --devices "not-an-address" -- ibv_devices; then
  fail "ibv_devices succeeded with a bad MROCE_DEVICES"
fi
grep -q "mroce-verbs: MROCE_DEVICES='not-an-address'" "$WORK/bad" || fail "no clear error: $(cat "$WORK/bad")"
ok "a bad configuration is reported"

# perftest reads the device count even when the list is NULL (rdma-core sets it to 0
# first); a garbage count made ib_write_lat walk a NULL list.
status=0
verbs - "$WORK/bad_perftest" --progress manual -- ib_write_lat -s 8 -n 10 || status=$?
((status == 1)) || fail "ib_write_lat exited $status on a refused setting: $(cat "$WORK/bad_perftest")"
grep -q "Unable to find the Infiniband/RoCE device" "$WORK/bad_perftest" ||
  fail "ib_write_lat did not say why: $(cat "$WORK/bad_perftest")"
ok "a refused setting leaves perftest its own message, no crash"

# Without configuration: one device per IPv4 interface that is up, loopback last.
verbs - "$WORK/auto" -- ibv_devices || fail "ibv_devices exited with $?: $(cat "$WORK/auto")"
last=$(awk '$1 ~ /^mroce[0-9]+$/ { guid = $2 } END { print guid }' "$WORK/auto")
[[ $last == 024d52007f000001 ]] || fail "loopback is not the last device: $(cat "$WORK/auto")"
ok "without configuration the interfaces are the devices, loopback last"
