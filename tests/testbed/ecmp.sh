#!/usr/bin/env bash
# ECMP pins each source port to one spine: a port's packets show up in exactly one
# spine's counter, the one 'spine-of' names, for unconnected and connected sockets and in
# both directions; the mapping is the same after a rebuild with the same seed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

start tbecmp

# Port i of a round sends 2^i packets, so each spine's counter is a sum that tells
# exactly which ports crossed it: one counter read checks every port.
check_ports() { # SRC DST DIR "PORTS" "SPINES" [probe options]
  local src=$1 dst=$2 dir=$3 i k out counts
  local -a ports spines want=(0 0 0 0 0)
  read -r -a ports <<<"$4"
  read -r -a spines <<<"$5"
  shift 5
  tb counters --reset
  for i in "${!ports[@]}"; do
    out=$(probe "$src" "$dst" --sport "${ports[$i]}" --count $((1 << i)) "$@")
    [[ $(field received "$out") == $((1 << i)) ]] || fail "port ${ports[$i]}: $out"
    want[${spines[$i]}]=$((want[${spines[$i]}] + (1 << i)))
  done
  counts=$(tb counters)
  for k in 1 2 3 4; do
    got=$(awk -v k="$k" -v d="$dir" '$1 == 0 && $2 == k && $3 == d { print $4 }' <<<"$counts")
    ((got == want[k])) ||
      fail "$dir spine $k counted $got packets, expected $((want[k])) (ports ${ports[*]} on spines ${spines[*]})"
  done
}

mapfile -t map < <(tb spine-of h1 h2 $(seq 40000 40015))
((${#map[@]} == 16)) || fail "spine-of printed ${#map[@]} lines for 16 ports"
check_ports h1 h2 'a>b' "$(seq -s ' ' 40000 40011)" "${map[*]:0:12}"
ok "12 unconnected source ports: each on exactly the spine spine-of names (${map[*]:0:12})"

check_ports h1 h2 'a>b' "$(seq -s ' ' 40012 40015)" "${map[*]:12:4}" --connect
ok "4 connected sockets too (${map[*]:12:4})"

mapfile -t back < <(tb spine-of h2 h1 $(seq 41000 41005))
check_ports h2 h1 'b>a' "$(seq -s ' ' 41000 41005)" "${back[*]}"
ok "the reverse direction (${back[*]})"

spread=$(printf '%s\n' "${map[@]}" | sort -u | wc -l)
((spread >= 3)) || fail "16 ports used only $spread of 4 spines: ${map[*]}"
ok "16 ports spread over $spread spines"

for k in 1 2 3 4; do
  mapfile -t found < <(tb ports h1 h2 "$k" --count 3)
  [[ $(tb spine-of h1 h2 "${found[@]}" | sort -u) == "$k" ]] || fail "'ports' gave ${found[*]} for spine $k"
done
ok "'ports' finds ports for every spine"

# With the hash seed (Linux 6.11+) the mapping survives a rebuild; another seed gives
# another mapping.
if grep -q 'seed boot' <<<"$(tb status)"; then
  ok "this kernel has no multipath hash seed: mapping stable until reboot only (not checked)"
else
  tb down >/dev/null
  tb up >/dev/null
  mapfile -t again < <(tb spine-of h1 h2 $(seq 40000 40015))
  [[ ${again[*]} == "${map[*]}" ]] || fail "the mapping changed after a rebuild: ${map[*]} / ${again[*]}"
  tb down >/dev/null
  tb up --seed 12345 >/dev/null
  mapfile -t other < <(tb spine-of h1 h2 $(seq 40000 40015))
  [[ ${other[*]} != "${map[*]}" ]] || fail "another seed gave the same mapping"
  ok "same seed, same mapping after a rebuild; another seed, another mapping"
fi
