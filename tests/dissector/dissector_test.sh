#!/usr/bin/env bash
# The Wireshark dissector decodes every MetaRoCE packet type and opcode of a real
# session on any port in one pass (heuristic) or by Decode As, splits loopback captures
# of UDP GSO trains into their datagrams, and flags exactly the packets that break a
# rule of SPEC §3, one of each rule.
set -euo pipefail
capture=$1
dissector=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "$1"
  exit 1
}
tshark_() {
  local file=$1
  shift
  tshark -X "lua_script:$dissector" -r "$dir/$file" "$@" 2>/dev/null
}
count() { tshark_ "$@" -T fields -e frame.number | wc -l; }

# A session and, after it, one malformed packet per rule.
out=$("$capture" "$dir/s.pcap" --corrupt)
range=$(sed -n 's/^malformed frames \([0-9]*\)-\([0-9]*\)$/\1 \2/p' <<<"$out")
[[ -n $range ]] || fail "mroce-capture did not say which frames are malformed: $out"
read -r first last <<<"$range"
total=$(count s.pcap)
decoded=$(count s.pcap -Y mroce)
[[ $total -gt 40 && $decoded -eq $total ]] || fail "decoded $decoded of $total frames"

genuine="frame.number < $first"
types=$(tshark_ s.pcap -Y "mroce && $genuine" -T fields -e mroce.type | sort -un | tr '\n' ' ')
[[ $types == "1 2 3 4 5 6 7 8 9 " ]] || fail "packet types seen: $types"
[[ $(count s.pcap -Y 'mroce.dg.qkey == 0x1234 && mroce.dg.opcode == 2') -ge 1 ]] ||
  fail "no SEND_IMM DATAGRAM decoded"
opcodes=$(tshark_ s.pcap -Y "mroce.opcode && $genuine" -T fields -e mroce.opcode | sort -un | tr '\n' ' ')
[[ $opcodes == "0 1 2 3 4 5 6 7 8 9 " ]] || fail "opcodes seen: $opcodes"
[[ $(count s.pcap -Y 'mroce.nack.code == 1') -ge 1 ]] || fail "no RECEIVER_NOT_READY NACK decoded"
[[ $(count s.pcap -Y 'mroce.ack.sacked') -ge 1 ]] || fail "no ACK with a SACK bit decoded"
flagged=$(tshark_ s.pcap -Y 'mroce && _ws.expert.severity == error' -T fields -e frame.number |
  tr '\n' ' ')
[[ $flagged == "$(seq -s ' ' "$first" "$last") " ]] ||
  fail "flagged as malformed: $flagged (expected frames $first to $last)"

# The same session as a loopback capture of GSO sends shows it: every datagram decoded.
out=$("$capture" "$dir/g.pcap" --gso)
trains=$(sed -n 's/.*, \([0-9]*\) GSO trains.*/\1/p' <<<"$out")
[[ ${trains:-0} -gt 0 ]] || fail "no GSO train in the capture: $out"
[[ $(count g.pcap -Y 'mroce.gso.segments > 1') -eq $trains ]] || fail "GSO trains not split"
[[ $(count g.pcap -Y '_ws.expert.severity == error') -eq 0 ]] || fail "a GSO train flagged as malformed"
by_type() { tshark_ "$@" -T fields -e mroce.type | tr ',' '\n' | sort | uniq -c | tr -s ' \n' ' '; }
[[ $(by_type g.pcap) == "$(by_type s.pcap -Y "$genuine")" ]] ||
  fail "GSO capture decodes to $(by_type g.pcap), the plain one to $(by_type s.pcap -Y "$genuine")"

# On another port: the heuristic finds every packet, Decode As those of that port.
"$capture" "$dir/p.pcap" --port 4800 >/dev/null
total=$(count p.pcap)
[[ $(count p.pcap -Y mroce) -eq $total ]] || fail "heuristic decoded $(count p.pcap -Y mroce) of $total"
on_port=$(count p.pcap -Y 'udp.port == 4800')
no_heur=(--disable-heuristic mroce_udp)
[[ $(count p.pcap "${no_heur[@]}" -Y mroce) -eq 0 ]] || fail "port 4800 decoded without heuristic"
[[ $(count p.pcap "${no_heur[@]}" -d udp.port==4800,mroce -Y mroce) -eq $on_port ]] ||
  fail "Decode As udp.port==4800 decoded $(count p.pcap "${no_heur[@]}" -d udp.port==4800,mroce -Y mroce) of $on_port"
echo "dissector: types $types, opcodes $opcodes, $((last - first + 1)) malformed flagged, $trains GSO trains"
