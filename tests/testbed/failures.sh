#!/usr/bin/env bash
# Failures: a black-holed spine drops exactly the ports that hash onto it (ECMP keeps
# hashing onto it), in the directions asked; a link taken down black-holes traffic from
# the far leaf, while the near leaf sees the carrier drop and hashes around it; heal
# brings everything back.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

start tbfail

# Two source ports per spine, each way.
ab_ports=() ab_spines=() ba_ports=() ba_spines=()
for k in 1 2 3 4; do
  for port in $(tb ports h1 h2 "$k" --count 2); do ab_ports+=("$port") ab_spines+=("$k"); done
  for port in $(tb ports h2 h1 "$k" --count 2 --from 41000); do ba_ports+=("$port") ba_spines+=("$k"); done
done

# expect SRC DST "PORTS" "SPINES" DEAD...: ports on a DEAD spine receive nothing, all
# other ports receive everything.
expect() {
  local src=$1 dst=$2 i got dead
  local -a ports spines
  read -r -a ports <<<"$3"
  read -r -a spines <<<"$4"
  shift 4
  out=$(probe "$src" "$dst" --sport "$(IFS=,; echo "${ports[*]}")" --count 30 --per-port --wait-ms 150)
  for i in "${!ports[@]}"; do
    got=$(port_received "${ports[$i]}" "$out")
    dead=0
    for k in "$@"; do [[ ${spines[$i]} == "$k" ]] && dead=1; done
    if ((dead)); then
      [[ ${got:-0} == 0 ]] || fail "$src->$dst port ${ports[$i]} on failed spine ${spines[$i]} got $got of 30"
    else
      [[ ${got:-0} == 30 ]] || fail "$src->$dst port ${ports[$i]} on spine ${spines[$i]} got ${got:-0} of 30"
    fi
  done
}

expect h1 h2 "${ab_ports[*]}" "${ab_spines[*]}"
expect h2 h1 "${ba_ports[*]}" "${ba_spines[*]}"
ok "all ports deliver before any failure"

tb counters --reset
tb fail spine 2
[[ $(tb spine-of h1 h2 "${ab_ports[2]}") == 2 ]] || fail "the leaf stopped hashing onto the black hole"
expect h1 h2 "${ab_ports[*]}" "${ab_spines[*]}" 2
expect h2 h1 "${ba_ports[*]}" "${ba_spines[*]}" 2
[[ $(counter 0 2 'a>b' blackholed) == 60 && $(counter 0 2 'b>a' blackholed) == 60 ]] ||
  fail "spine 2 should have black-holed 60 packets each way: $(tb counters)"
ok "black hole on spine 2: exactly its ports lose everything, both ways"

tb heal spine 2
expect h1 h2 "${ab_ports[*]}" "${ab_spines[*]}"
ok "heal spine 2"

tb fail spine 3 --dir b2a
expect h1 h2 "${ab_ports[*]}" "${ab_spines[*]}"
expect h2 h1 "${ba_ports[*]}" "${ba_spines[*]}" 3
tb heal
ok "one-way black hole on spine 3 (b to a only)"

# The link between spine 1 and leaf b goes down: leaf b sees no carrier and hashes its
# ports onto the other spines; leaf a does not know and keeps sending into spine 1, which
# has no route onward.
tb fail link 1 b
mapfile -t now_ab < <(tb spine-of h1 h2 "${ab_ports[@]}")
mapfile -t now_ba < <(tb spine-of h2 h1 "${ba_ports[@]}")
[[ ${now_ab[*]} == "${ab_spines[*]}" ]] || fail "leaf a rehashed without knowing: ${now_ab[*]}"
[[ " ${now_ba[*]} " != *" 1 "* ]] || fail "leaf b still hashes onto spine 1: ${now_ba[*]}"
expect h1 h2 "${ab_ports[*]}" "${ab_spines[*]}" 1
expect h2 h1 "${ba_ports[*]}" "${now_ba[*]}"
grep -q 'spine 1: link-to-leaf-b-down' <<<"$(tb status)" || fail "status does not show the link down"
ok "link spine 1 - leaf b down: a->b black-holed on spine 1, b->a rehashed (${now_ba[*]})"

tb heal link 1 b
mapfile -t healed < <(tb spine-of h2 h1 "${ba_ports[@]}")
[[ ${healed[*]} == "${ba_spines[*]}" ]] || fail "leaf b did not come back to spine 1: ${healed[*]}"
expect h1 h2 "${ab_ports[*]}" "${ab_spines[*]}"
expect h2 h1 "${ba_ports[*]}" "${ba_spines[*]}"
ok "heal link: every port back on its spine and delivering"
