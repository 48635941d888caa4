#!/usr/bin/env bash
# Multiplane: each plane is its own fabric; failing one plane (silently, or with the
# hosts seeing their link lose carrier) stops its traffic only, and heal restores it.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

start tbplane --planes 2 --spines 2

carrier() { tb exec "$1" cat "/sys/class/net/$2/carrier"; } # NODE DEV: 1 or 0

delivers() { # PLANE: did all 120 packets from h1 to h2, and from h2 to h1, arrive?
  local a b
  a=$(probe h1 h2 --plane "$1" --sport 40000-40003 --count 30 --wait-ms 150)
  b=$(probe h2 h1 --plane "$1" --sport 40000-40003 --count 30 --wait-ms 150)
  [[ $(field received "$a") == 120 && $(field received "$b") == 120 ]]
}
dead() { # PLANE: nothing arrives either way
  local a b
  a=$(probe h1 h2 --plane "$1" --sport 40000-40003 --count 30 --wait-ms 150)
  b=$(probe h2 h1 --plane "$1" --sport 40000-40003 --count 30 --wait-ms 150)
  [[ $(field received "$a") == 0 && $(field received "$b") == 0 ]]
}

{ delivers 0 && delivers 1; } || fail "a plane does not deliver after up"
ok "both planes deliver"

tb fail plane 1
dead 1 || fail "failed plane 1 still delivers"
delivers 0 || fail "plane 0 stopped when plane 1 failed"
[[ $(carrier h1 eth1) == 1 ]] || fail "a silent plane failure dropped the carrier"
ok "plane 1 failed silently: its traffic is gone, plane 0 unaffected, links still up"

tb heal plane 1
delivers 1 || fail "plane 1 does not deliver after heal"
ok "plane 1 healed"

tb fail plane 0 --carrier
[[ $(carrier h1 eth0) == 0 ]] || fail "h1 eth0 still has carrier"
dead 0 || fail "failed plane 0 still delivers"
delivers 1 || fail "plane 1 stopped when plane 0 failed"
ok "plane 0 failed with carrier loss: hosts see NO-CARRIER, plane 1 unaffected"

tb heal plane 0
[[ $(carrier h1 eth0) == 1 ]] || fail "h1 eth0 has no carrier after heal"
delivers 0 || fail "plane 0 does not deliver after heal"
ok "plane 0 healed, carrier back"
