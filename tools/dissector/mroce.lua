-- Wireshark/tshark dissector for MetaRoCE (docs/SPEC.md, section 3).
--   tshark -X lua_script:mroce.lua -r capture.pcap
--   wireshark -X lua_script:mroce.lua   (or copy into ~/.local/lib/wireshark/plugins/)
-- Registered on UDP port 4793; set another with the "mroce.port" preference, or use
-- "Decode As". Malformed packets are flagged with an expert note, never guessed at.

local mroce = Proto("mroce", "MetaRoCE")

local types = { [1] = "DATA", [2] = "ACK", [3] = "NACK", [4] = "CONNECT", [5] = "ACCEPT",
                [6] = "CONFIRM", [7] = "CLOSE", [8] = "CLOSE_ACK" }
local ops = { [0] = "NOP", [1] = "SEND", [2] = "SEND_IMM", [3] = "WRITE", [4] = "WRITE_IMM",
              [5] = "READ_REQUEST", [6] = "READ_RESPONSE", [7] = "FETCH_ADD",
              [8] = "COMPARE_SWAP", [9] = "ATOMIC_RESPONSE" }
local nack_codes = { [1] = "RECEIVER_NOT_READY", [2] = "REMOTE_ACCESS", [3] = "INVALID_REQUEST",
                     [4] = "REMOTE_OPERATION", [5] = "NO_RESOURCES" }
-- Extension layout per opcode: remote (va+rkey), ssn, imm, operand, swap.
local ext = {
  [0] = {}, [1] = { ssn = true }, [2] = { ssn = true, imm = true },
  [3] = { remote = true }, [4] = { remote = true, ssn = true, imm = true },
  [5] = { remote = true, rate = true }, [6] = {}, [7] = { remote = true, operand = true },
  [8] = { remote = true, operand = true, swap = true }, [9] = { operand = true },
}
local payload_ops = { [1] = true, [2] = true, [3] = true, [4] = true, [6] = true }

local f = mroce.fields
f.version = ProtoField.uint8("mroce.version", "Version", base.DEC, nil, 0xf0)
f.type = ProtoField.uint8("mroce.type", "Type", base.DEC, types, 0x0f)
f.flags = ProtoField.uint8("mroce.flags", "Flags", base.HEX)
f.ack_request = ProtoField.bool("mroce.flags.ack_request", "ACK request", 8, nil, 0x01)
f.backlog = ProtoField.bool("mroce.flags.backlog", "Backlog", 8, nil, 0x02)
f.path = ProtoField.uint8("mroce.path", "Path", base.DEC)
f.generation = ProtoField.uint8("mroce.generation", "Generation", base.DEC)
f.dst_conn = ProtoField.uint32("mroce.dst_conn", "Destination connection", base.HEX)
f.token = ProtoField.uint64("mroce.token", "Token", base.HEX)

f.psn = ProtoField.uint32("mroce.psn", "PSN", base.DEC)
f.timestamp = ProtoField.uint32("mroce.timestamp", "Timestamp (ns)", base.DEC)
f.stream = ProtoField.uint32("mroce.stream", "Destination stream", base.DEC)
f.msn = ProtoField.uint32("mroce.msn", "MSN", base.DEC)
f.opcode = ProtoField.uint8("mroce.opcode", "Opcode", base.DEC, ops)
f.data_flags = ProtoField.uint8("mroce.data_flags", "Data flags", base.HEX)
f.solicited = ProtoField.bool("mroce.data_flags.solicited", "Solicited", 8, nil, 0x01)
f.retransmit = ProtoField.bool("mroce.data_flags.retransmit", "Retransmit", 8, nil, 0x02)
f.payload_length = ProtoField.uint16("mroce.payload_length", "Payload length", base.DEC)
f.offset = ProtoField.uint32("mroce.offset", "Offset", base.DEC)
f.message_length = ProtoField.uint32("mroce.message_length", "Message length", base.DEC)
f.remote_addr = ProtoField.uint64("mroce.remote_addr", "Remote address", base.HEX)
f.rkey = ProtoField.uint32("mroce.rkey", "rkey", base.HEX)
f.ssn = ProtoField.uint32("mroce.ssn", "SSN", base.DEC)
f.imm = ProtoField.uint32("mroce.imm", "Immediate", base.HEX)
f.operand = ProtoField.uint64("mroce.operand", "Operand / value", base.HEX)
f.swap = ProtoField.uint64("mroce.swap", "Swap", base.HEX)
f.read_rate = ProtoField.uint32("mroce.read_rate_kbps", "Response rate (kbit/s)", base.DEC)
f.payload = ProtoField.bytes("mroce.payload", "Payload")

f.cum_psn = ProtoField.uint32("mroce.ack.cum_psn", "Cumulative PSN", base.DEC)
f.echo = ProtoField.uint32("mroce.ack.echo", "Echoed timestamp", base.DEC)
f.ack_delay = ProtoField.uint32("mroce.ack.delay", "ACK delay (ns)", base.DEC)
f.rx_packets = ProtoField.uint32("mroce.ack.rx_packets", "Received packets", base.DEC)
f.ce_packets = ProtoField.uint32("mroce.ack.ce_packets", "CE-marked packets", base.DEC)
f.rate = ProtoField.uint32("mroce.ack.rate_kbps", "Rate hint (kbit/s)", base.DEC)
f.sack = ProtoField.bytes("mroce.ack.sack", "SACK bitmap")
f.sacked = ProtoField.uint32("mroce.ack.sacked", "SACKed PSN", base.DEC)

f.nack_code = ProtoField.uint8("mroce.nack.code", "Code", base.DEC, nack_codes)

f.src_conn = ProtoField.uint32("mroce.hs.src_conn", "Source connection", base.HEX)
f.src_token = ProtoField.uint64("mroce.hs.src_token", "Source token", base.HEX)
f.isn = ProtoField.uint32("mroce.hs.isn", "ISN", base.DEC)
f.listen_port = ProtoField.uint16("mroce.hs.listen_port", "Listening port", base.DEC)
f.mss = ProtoField.uint16("mroce.hs.mss", "MSS", base.DEC)
f.max_messages = ProtoField.uint16("mroce.hs.max_messages", "Max messages", base.DEC)
f.max_responses = ProtoField.uint16("mroce.hs.max_responses", "Max responses", base.DEC)
f.paths = ProtoField.uint16("mroce.hs.paths", "Paths", base.DEC)
f.hs_flags = ProtoField.uint8("mroce.hs.flags", "Handshake flags", base.HEX)
f.no_payload = ProtoField.bool("mroce.hs.no_payload", "Headers only", 8, nil, 0x01)
f.address_count = ProtoField.uint8("mroce.hs.address_count", "Plane addresses", base.DEC)
f.address = ProtoField.ipv6("mroce.hs.address", "Plane address")

local e_malformed = ProtoExpert.new("mroce.malformed", "Malformed MetaRoCE packet",
                                    expert.group.MALFORMED, expert.severity.ERROR)
mroce.experts = { e_malformed }

mroce.prefs.port = Pref.uint("UDP port", 4793, "Fixed destination port of MetaRoCE")

local function malformed(tree, buf, why)
  tree:add_proto_expert_info(e_malformed, why)
  return buf:len()
end

local function dissect_data(buf, tree, info)
  if buf:len() < 44 then return nil, "truncated data header" end
  local op = buf(32, 1):uint()
  if ops[op] == nil then return nil, "unknown opcode " .. op end
  tree:add(f.psn, buf(16, 4))
  tree:add(f.timestamp, buf(20, 4))
  tree:add(f.stream, buf(24, 4))
  tree:add(f.msn, buf(28, 4))
  tree:add(f.opcode, buf(32, 1))
  local df = tree:add(f.data_flags, buf(33, 1))
  df:add(f.solicited, buf(33, 1))
  df:add(f.retransmit, buf(33, 1))
  tree:add(f.payload_length, buf(34, 2))
  tree:add(f.offset, buf(36, 4))
  tree:add(f.message_length, buf(40, 4))
  local pos = 44
  local e = ext[op]
  local need = (e.remote and 12 or 0) + (e.rate and 4 or 0) + (e.ssn and 4 or 0) + (e.imm and 4 or 0) +
               (e.operand and 8 or 0) + (e.swap and 8 or 0)
  if buf:len() < pos + need then return nil, "truncated extension" end
  if e.remote then
    tree:add(f.remote_addr, buf(pos, 8)); tree:add(f.rkey, buf(pos + 8, 4)); pos = pos + 12
  end
  if e.rate then tree:add(f.read_rate, buf(pos, 4)); pos = pos + 4 end
  if e.ssn then tree:add(f.ssn, buf(pos, 4)); pos = pos + 4 end
  if e.imm then tree:add(f.imm, buf(pos, 4)); pos = pos + 4 end
  if e.operand then tree:add(f.operand, buf(pos, 8)); pos = pos + 8 end
  if e.swap then tree:add(f.swap, buf(pos, 8)); pos = pos + 8 end
  local plen = buf(34, 2):uint()
  local rest = buf:len() - pos
  if payload_ops[op] and rest == plen and plen > 0 then
    tree:add(f.payload, buf(pos, plen))
  elseif rest ~= 0 and rest ~= plen then
    return nil, "payload length " .. plen .. " but " .. rest .. " bytes follow"
  end
  info = info .. " " .. ops[op] .. " psn=" .. buf(16, 4):uint() .. " stream=" ..
         buf(24, 4):uint() .. " msn=" .. buf(28, 4):uint()
  if plen > 0 then info = info .. " off=" .. buf(36, 4):uint() .. " len=" .. plen end
  return info
end

local function dissect_ack(buf, tree, info)
  if buf:len() ~= 72 then return nil, "ACK must be 72 bytes" end
  local cum = buf(16, 4):uint()
  tree:add(f.cum_psn, buf(16, 4))
  tree:add(f.echo, buf(20, 4))
  tree:add(f.ack_delay, buf(24, 4))
  tree:add(f.rx_packets, buf(28, 4))
  tree:add(f.ce_packets, buf(32, 4))
  tree:add(f.rate, buf(36, 4))
  local st = tree:add(f.sack, buf(40, 32))
  local n = 0
  for word = 0, 3 do
    -- Bit i of word w (bit 0 least significant) is PSN cum + 1 + 64w + i.
    for byte = 0, 7 do
      local b = buf(40 + word * 8 + (7 - byte), 1):uint()
      for bit = 0, 7 do
        if bit32.band(b, bit32.lshift(1, bit)) ~= 0 then
          local i = word * 64 + byte * 8 + bit
          st:add(f.sacked, buf(40 + word * 8 + (7 - byte), 1), (cum + 1 + i) % 4294967296)
          n = n + 1
        end
      end
    end
  end
  return info .. " cum=" .. cum .. " sacked=" .. n .. " rate=" .. buf(36, 4):uint() .. "kbps"
end

local function dissect_nack(buf, tree, info)
  if buf:len() ~= 36 then return nil, "NACK must be 36 bytes" end
  local code = buf(20, 1):uint()
  if nack_codes[code] == nil then return nil, "unknown NACK code " .. code end
  tree:add(f.psn, buf(16, 4))
  tree:add(f.nack_code, buf(20, 1))
  tree:add(f.stream, buf(24, 4))
  tree:add(f.msn, buf(28, 4))
  tree:add(f.echo, buf(32, 4))
  return info .. " " .. nack_codes[code] .. " psn=" .. buf(16, 4):uint()
end

local function dissect_handshake(buf, tree, info)
  if buf:len() < 44 then return nil, "truncated set-up header" end
  local count = buf(43, 1):uint()
  if count < 1 or count > 8 or buf:len() ~= 44 + 16 * count then
    return nil, "bad address count " .. count
  end
  tree:add(f.src_conn, buf(16, 4))
  tree:add(f.src_token, buf(20, 8))
  tree:add(f.isn, buf(28, 4))
  tree:add(f.listen_port, buf(32, 2))
  tree:add(f.mss, buf(34, 2))
  tree:add(f.max_messages, buf(36, 2))
  tree:add(f.max_responses, buf(38, 2))
  tree:add(f.paths, buf(40, 2))
  local hf = tree:add(f.hs_flags, buf(42, 1))
  hf:add(f.no_payload, buf(42, 1))
  tree:add(f.address_count, buf(43, 1))
  for i = 0, count - 1 do tree:add(f.address, buf(44 + 16 * i, 16)) end
  return info .. " paths=" .. buf(40, 2):uint() .. " mss=" .. buf(34, 2):uint()
end

function mroce.dissector(buf, pinfo, tree)
  if buf:len() < 16 then return 0 end
  pinfo.cols.protocol = "MetaRoCE"
  local subtree = tree:add(mroce, buf(), "MetaRoCE")
  local vt = buf(0, 1):uint()
  subtree:add(f.version, buf(0, 1))
  subtree:add(f.type, buf(0, 1))
  if bit32.rshift(vt, 4) ~= 1 then return malformed(subtree, buf, "unknown version") end
  local t = bit32.band(vt, 0x0f)
  if types[t] == nil then return malformed(subtree, buf, "unknown type") end
  local fl = subtree:add(f.flags, buf(1, 1))
  fl:add(f.ack_request, buf(1, 1))
  fl:add(f.backlog, buf(1, 1))
  subtree:add(f.path, buf(2, 1))
  subtree:add(f.generation, buf(3, 1))
  subtree:add(f.dst_conn, buf(4, 4))
  subtree:add(f.token, buf(8, 8))
  local info = types[t] .. " path=" .. buf(2, 1):uint() .. "/" .. buf(3, 1):uint()
  local why
  if t == 1 then info, why = dissect_data(buf, subtree, info)
  elseif t == 2 then info, why = dissect_ack(buf, subtree, info)
  elseif t == 3 then info, why = dissect_nack(buf, subtree, info)
  elseif t == 4 or t == 5 then info, why = dissect_handshake(buf, subtree, info)
  elseif buf:len() ~= 16 then why = "must be 16 bytes" end
  if why then return malformed(subtree, buf, why) end
  pinfo.cols.info = info
  return buf:len()
end

local registered = 0
function mroce.init()
  local udp = DissectorTable.get("udp.port")
  if registered ~= 0 then udp:remove(registered, mroce) end
  udp:add(mroce.prefs.port, mroce)
  registered = mroce.prefs.port
end
