#!/usr/bin/env bash
# The Wireshark dissector decodes every MetaRoCE packet type and opcode of a real
# session, and flags a malformed packet instead of decoding it.
set -euo pipefail
capture=$1
dissector=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$capture" "$dir/s.pcap" --corrupt >/dev/null
tshark_() { tshark -X "lua_script:$dissector" -r "$dir/s.pcap" "$@" 2>/dev/null; }

total=$(tshark_ -T fields -e frame.number | wc -l)
decoded=$(tshark_ -Y mroce -T fields -e frame.number | wc -l)
[[ $total -gt 40 && $decoded -eq $total ]] || { echo "decoded $decoded of $total frames"; exit 1; }

types=$(tshark_ -Y 'mroce && !_ws.expert' -T fields -e mroce.type | sort -un | tr '\n' ' ')
[[ $types == "1 2 3 4 5 6 7 8 " ]] || { echo "packet types seen: $types"; exit 1; }
opcodes=$(tshark_ -Y 'mroce.opcode' -T fields -e mroce.opcode | sort -un | tr '\n' ' ')
[[ $opcodes == "0 1 2 3 4 5 6 7 8 9 " ]] || { echo "opcodes seen: $opcodes"; exit 1; }
nacks=$(tshark_ -Y 'mroce.nack.code == 1' -T fields -e frame.number | wc -l)
[[ $nacks -ge 1 ]] || { echo "no RECEIVER_NOT_READY NACK decoded"; exit 1; }
sacked=$(tshark_ -Y 'mroce.ack.sacked' -T fields -e frame.number | wc -l)
[[ $sacked -ge 1 ]] || { echo "no ACK with a SACK bit decoded"; exit 1; }
bad=$(tshark_ -Y 'mroce && _ws.expert.severity == error' -T fields -e frame.number | wc -l)
[[ $bad -eq 1 ]] || { echo "malformed packets flagged: $bad (expected 1)"; exit 1; }
echo "dissector: $total frames, types $types, opcodes $opcodes"
