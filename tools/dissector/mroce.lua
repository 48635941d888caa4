-- Wireshark/tshark dissector for MetaRoCE (docs/SPEC.md, section 3).
--   tshark -X lua_script:mroce.lua -r capture.pcap
--   wireshark -X lua_script:mroce.lua   (or copy into ~/.local/lib/wireshark/plugins/)
-- A heuristic UDP dissector (version 1 and a known type) finds MetaRoCE on every port in
-- one pass; UDP port 4793 (the "mroce.port" preference) is also registered, and "Decode
-- As" (tshark -d udp.port==N,mroce) offers it for any other port. A loopback capture
-- of UDP GSO holds one datagram per train of segments: each segment is decoded on its
-- own. Every violation of SPEC §3 gets an expert note: an error where a receiver drops
-- the packet, a warning where it ignores the field or refuses the content.

local mroce = Proto("mroce", "MetaRoCE")

local types = { [1] = "DATA", [2] = "ACK", [3] = "NACK", [4] = "CONNECT", [5] = "ACCEPT",
                [6] = "CONFIRM", [7] = "CLOSE", [8] = "CLOSE_ACK", [9] = "DATAGRAM" }
local dg_ops = { [1] = "SEND", [2] = "SEND_IMM" }
local ops = { [0] = "NOP", [1] = "SEND", [2] = "SEND_IMM", [3] = "WRITE", [4] = "WRITE_IMM",
              [5] = "READ_REQUEST", [6] = "READ_RESPONSE", [7] = "FETCH_ADD",
              [8] = "COMPARE_SWAP", [9] = "ATOMIC_RESPONSE" }
local nack_codes = { [1] = "RECEIVER_NOT_READY", [2] = "REMOTE_ACCESS", [3] = "INVALID_REQUEST",
                     [4] = "REMOTE_OPERATION", [5] = "NO_RESOURCES" }
-- Extension layout per opcode: remote (va+rkey), rate, ssn, imm, operand, swap.
local ext = {
  [0] = {}, [1] = { ssn = true }, [2] = { ssn = true, imm = true },
  [3] = { remote = true }, [4] = { remote = true, ssn = true, imm = true },
  [5] = { remote = true, rate = true }, [6] = {}, [7] = { remote = true, operand = true },
  [8] = { remote = true, operand = true, swap = true }, [9] = { operand = true },
}
local payload_ops = { [1] = true, [2] = true, [3] = true, [4] = true, [6] = true }
local atomic_ops = { [7] = true, [8] = true, [9] = true }

local function ext_size(op)
  local e = ext[op]
  return (e.remote and 12 or 0) + (e.rate and 4 or 0) + (e.ssn and 4 or 0) + (e.imm and 4 or 0) +
         (e.operand and 8 or 0) + (e.swap and 8 or 0)
end

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
f.nack_reserved = ProtoField.uint24("mroce.nack.reserved", "Reserved", base.HEX)

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

f.dg_dst_qp = ProtoField.uint32("mroce.dg.dst_qp", "Destination queue pair", base.HEX)
f.dg_src_qp = ProtoField.uint32("mroce.dg.src_qp", "Source queue pair", base.HEX)
f.dg_qkey = ProtoField.uint32("mroce.dg.qkey", "Q_Key", base.HEX)
f.dg_opcode = ProtoField.uint8("mroce.dg.opcode", "Opcode", base.DEC, dg_ops)
f.dg_flags = ProtoField.uint8("mroce.dg.flags", "Datagram flags", base.HEX)
f.dg_solicited = ProtoField.bool("mroce.dg.flags.solicited", "Solicited", 8, nil, 0x01)

f.segments = ProtoField.uint16("mroce.gso.segments", "GSO train segments", base.DEC)

local e_malformed = ProtoExpert.new("mroce.malformed", "Malformed MetaRoCE packet (dropped)",
                                    expert.group.MALFORMED, expert.severity.ERROR)
local e_suspect = ProtoExpert.new("mroce.suspect", "MetaRoCE field out of bounds",
                                  expert.group.PROTOCOL, expert.severity.WARN)
local e_train = ProtoExpert.new("mroce.gso", "UDP GSO train: several datagrams in one",
                                expert.group.REASSEMBLE, expert.severity.CHAT)
mroce.experts = { e_malformed, e_suspect, e_train }

mroce.prefs.port = Pref.uint("UDP port", 4793, "Fixed destination port of MetaRoCE")

-- Each check of SPEC §3 that fails adds its note; decoding goes on where it can.
local Checks = {}
Checks.__index = Checks
local function checks(tree) return setmetatable({ tree = tree, dropped = false }, Checks) end
function Checks:drop(why)
  self.tree:add_proto_expert_info(e_malformed, why)
  self.dropped = true
end
function Checks:warn(why) self.tree:add_proto_expert_info(e_suspect, why) end

-- The length a well-formed packet of this header would have, or nil if the header
-- cannot say (truncated, unknown type or opcode).
local function expected_length(buf)
  if buf:len() < 16 then return nil end
  local t = bit32.band(buf(0, 1):uint(), 0x0f)
  if t == 1 then
    if buf:len() < 44 then return nil end
    local op = buf(32, 1):uint()
    if ext[op] == nil then return nil end
    return 44 + ext_size(op) + buf(34, 2):uint()
  elseif t == 2 then return 72
  elseif t == 3 then return 36
  elseif t == 4 or t == 5 then
    if buf:len() < 44 then return nil end
    return 44 + 16 * buf(43, 1):uint()
  elseif t >= 6 and t <= 8 then return 16
  elseif t == 9 then
    if buf:len() < 36 then return nil end
    return 36 + buf(30, 2):uint()
  end
  return nil
end

local function dissect_data(buf, tree, c, info)
  if buf:len() < 44 then c:drop("truncated DATA header (44 bytes at least)"); return info end
  local op = buf(32, 1):uint()
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
  if ext[op] == nil then c:drop("unknown opcode " .. op); return info end
  if bit32.band(buf(33, 1):uint(), 0xfc) ~= 0 then c:drop("reserved data flag bits 2-7 set") end
  local stream, msn = buf(24, 4):uint(), buf(28, 4):uint()
  local plen, off, mlen = buf(34, 2):uint(), buf(36, 4):uint(), buf(40, 4):uint()
  if stream >= 16777216 then c:warn("stream " .. stream .. " >= 2^24 is never valid (bad stream)") end
  if op == 0 then
    if plen ~= 0 or off ~= 0 or mlen ~= 0 then
      c:drop("NOP with payload length, offset or message length not 0")
    end
    if stream ~= 0 or msn ~= 0 then c:warn("NOP stream and MSN must be sent as 0 (ignored)") end
  elseif payload_ops[op] then
    if off + plen > mlen then c:drop("offset + payload length > message length") end
  elseif op == 5 then
    if plen ~= 0 or off ~= 0 then c:drop("READ_REQUEST with payload length or offset not 0") end
  elseif atomic_ops[op] then
    if plen ~= 0 or off ~= 0 or mlen ~= 8 then
      c:drop(ops[op] .. " needs payload length 0, offset 0, message length 8")
    end
  end
  local pos = 44
  local e = ext[op]
  if buf:len() < pos + ext_size(op) then c:drop("truncated " .. ops[op] .. " extension"); return info end
  if e.remote then
    tree:add(f.remote_addr, buf(pos, 8)); tree:add(f.rkey, buf(pos + 8, 4)); pos = pos + 12
  end
  if e.rate then tree:add(f.read_rate, buf(pos, 4)); pos = pos + 4 end
  if e.ssn then tree:add(f.ssn, buf(pos, 4)); pos = pos + 4 end
  if e.imm then tree:add(f.imm, buf(pos, 4)); pos = pos + 4 end
  if e.operand then tree:add(f.operand, buf(pos, 8)); pos = pos + 8 end
  if e.swap then tree:add(f.swap, buf(pos, 8)); pos = pos + 8 end
  local rest = buf:len() - pos
  if rest == plen and plen > 0 then
    tree:add(f.payload, buf(pos, plen))
  elseif rest ~= 0 and rest ~= plen then
    -- 0 bytes is headers-only mode (§2): the header still says how long the payload is.
    c:drop("payload length " .. plen .. " but " .. rest .. " bytes follow")
  end
  info = info .. " " .. ops[op] .. " psn=" .. buf(16, 4):uint() .. " stream=" .. stream ..
         " msn=" .. msn
  if plen > 0 then info = info .. " off=" .. off .. " len=" .. plen end
  return info
end

local function dissect_ack(buf, tree, c, info)
  if buf:len() ~= 72 then c:drop("ACK must be 72 bytes, not " .. buf:len()) end
  if buf:len() < 72 then return info end
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

local function dissect_nack(buf, tree, c, info)
  if buf:len() ~= 36 then c:drop("NACK must be 36 bytes, not " .. buf:len()) end
  if buf:len() < 36 then return info end
  local code = buf(20, 1):uint()
  tree:add(f.psn, buf(16, 4))
  tree:add(f.nack_code, buf(20, 1))
  tree:add(f.nack_reserved, buf(21, 3))
  tree:add(f.stream, buf(24, 4))
  tree:add(f.msn, buf(28, 4))
  tree:add(f.echo, buf(32, 4))
  if nack_codes[code] == nil then c:drop("NACK code " .. code .. " outside 1-5") end
  if buf(21, 3):uint() ~= 0 then c:drop("NACK reserved bits set") end
  return info .. " " .. (nack_codes[code] or ("code " .. code)) .. " psn=" .. buf(16, 4):uint()
end

local function dissect_handshake(buf, tree, c, info)
  if buf:len() < 44 then c:drop("truncated set-up header (44 bytes at least)"); return info end
  local count = buf(43, 1):uint()
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
  if bit32.band(buf(42, 1):uint(), 0xfe) ~= 0 then c:drop("reserved handshake flag bits 1-7 set") end
  if buf(16, 4):uint() == 0 then c:drop("source connection id 0") end
  if buf(34, 2):uint() == 0 then c:drop("MSS 0") end
  local paths = buf(40, 2):uint()
  if paths == 0 or paths > 256 then c:drop("path count " .. paths .. " outside 1-256") end
  if count < 1 or count > 8 then
    c:drop("address count " .. count .. " outside 1-8")
  elseif buf:len() ~= 44 + 16 * count then
    c:drop("set-up packet with " .. count .. " addresses must be " .. (44 + 16 * count) .. " bytes")
  end
  for i = 0, count - 1 do
    if 44 + 16 * (i + 1) > buf:len() then break end
    tree:add(f.address, buf(44 + 16 * i, 16))
  end
  return info .. " paths=" .. paths .. " mss=" .. buf(34, 2):uint()
end

-- DATAGRAM (SPEC §3.8): connectionless, its own 20-byte header and the payload.
local function dissect_datagram(buf, tree, c, info)
  if buf:len() < 36 then c:drop("truncated DATAGRAM header (36 bytes)"); return info end
  tree:add(f.dg_dst_qp, buf(16, 4))
  tree:add(f.dg_src_qp, buf(20, 4))
  tree:add(f.dg_qkey, buf(24, 4))
  tree:add(f.dg_opcode, buf(28, 1))
  local df = tree:add(f.dg_flags, buf(29, 1))
  df:add(f.dg_solicited, buf(29, 1))
  tree:add(f.payload_length, buf(30, 2))
  tree:add(f.imm, buf(32, 4))
  local op, len = buf(28, 1):uint(), buf(30, 2):uint()
  for _, at in ipairs({ 16, 20 }) do
    local qp = buf(at, 4):uint()
    if qp == 0 or qp > 0xffffff then c:drop("queue pair " .. qp .. " outside 1..2^24-1") end
  end
  if dg_ops[op] == nil then c:drop("DATAGRAM opcode " .. op .. " (1 SEND, 2 SEND_IMM)") end
  if bit32.band(buf(29, 1):uint(), 0xfe) ~= 0 then c:drop("reserved datagram flag bits 1-7 set") end
  if op == 1 and buf(32, 4):uint() ~= 0 then c:drop("immediate data in a SEND") end
  if buf:len() ~= 36 + len then
    c:drop("DATAGRAM of " .. len .. " payload bytes must be " .. (36 + len) .. " bytes")
  elseif len > 0 then
    tree:add(f.payload, buf(36, len))
  end
  return "DATAGRAM " .. (dg_ops[op] or "?") .. " qp=" .. string.format("0x%06x", buf(20, 4):uint()) ..
         "->" .. string.format("0x%06x", buf(16, 4):uint()) .. " len=" .. len
end

-- One MetaRoCE packet; returns its summary for the Info column.
local function dissect_one(buf, tree)
  local subtree = tree:add(mroce, buf(), "MetaRoCE")
  local c = checks(subtree)
  subtree:add(f.version, buf(0, 1))
  subtree:add(f.type, buf(0, 1))
  local vt = buf(0, 1):uint()
  local t = bit32.band(vt, 0x0f)
  if bit32.rshift(vt, 4) ~= 1 then c:drop("unknown version " .. bit32.rshift(vt, 4)); return "?" end
  if types[t] == nil then c:drop("unknown type " .. t); return "?" end
  local fl = subtree:add(f.flags, buf(1, 1))
  fl:add(f.ack_request, buf(1, 1))
  fl:add(f.backlog, buf(1, 1))
  subtree:add(f.path, buf(2, 1))
  subtree:add(f.generation, buf(3, 1))
  subtree:add(f.dst_conn, buf(4, 4))
  subtree:add(f.token, buf(8, 8))
  local flags = buf(1, 1):uint()
  if t ~= 1 and flags ~= 0 then c:drop("Flags must be 0 outside DATA") end
  if t == 1 and bit32.band(flags, 0xfc) ~= 0 then c:drop("reserved flag bits 2-7 set") end
  if t >= 4 and (buf(2, 1):uint() ~= 0 or buf(3, 1):uint() ~= 0) then
    c:drop("Path and Generation must be 0 in a set-up packet")
  end
  if t == 4 and (buf(4, 4):uint() ~= 0 or buf(8, 8):uint64() ~= UInt64(0)) then
    c:drop("CONNECT with a destination connection id or token")
  end
  if t == 9 and (buf(4, 4):uint() ~= 0 or buf(8, 8):uint64() ~= UInt64(0)) then
    c:drop("DATAGRAM with a destination connection id or token")
  end
  local info = types[t] .. " path=" .. buf(2, 1):uint() .. "/" .. buf(3, 1):uint()
  if t == 1 then info = dissect_data(buf, subtree, c, info)
  elseif t == 2 then info = dissect_ack(buf, subtree, c, info)
  elseif t == 3 then info = dissect_nack(buf, subtree, c, info)
  elseif t == 4 or t == 5 then info = dissect_handshake(buf, subtree, c, info)
  elseif t == 9 then info = dissect_datagram(buf, subtree, c, info)
  elseif buf:len() ~= 16 then c:drop(types[t] .. " must be 16 bytes, not " .. buf:len()) end
  return info
end

-- The segment size when buf is a GSO train (one capture of several datagrams of one
-- send, as loopback captures show them): every segment starts with the first one's
-- version and type byte, and all but the last are as long as the first. Else nil.
local function train_segment(buf)
  local seg = expected_length(buf)
  if seg == nil or seg < 16 or buf:len() <= seg then return nil end
  local first = buf(0, 1):uint()
  for pos = seg, buf:len() - 1, seg do
    if buf:len() - pos < 16 or buf(pos, 1):uint() ~= first then return nil end
  end
  return seg
end

function mroce.dissector(buf, pinfo, tree)
  if buf:len() < 16 then return 0 end
  pinfo.cols.protocol = "MetaRoCE"
  local seg = train_segment(buf)
  if seg == nil then
    pinfo.cols.info = dissect_one(buf, tree)
    return buf:len()
  end
  local n = math.ceil(buf:len() / seg)
  local train = tree:add(mroce, buf(), "MetaRoCE GSO train, " .. n .. " datagrams of " .. seg .. " bytes")
  train:add(f.segments, buf(0, 0), n)
  train:add_proto_expert_info(e_train, n .. " datagrams of one UDP GSO send, decoded one by one")
  local first
  for pos = 0, buf:len() - 1, seg do
    local info = dissect_one(buf(pos, math.min(seg, buf:len() - pos)):tvb(), train)
    first = first or info
  end
  pinfo.cols.info = first .. " (GSO train of " .. n .. ")"
  return buf:len()
end

-- Heuristic: version 1 and a known type, so MetaRoCE on any port decodes in one pass.
local function heuristic(buf, pinfo, tree)
  if buf:len() < 16 then return false end
  local vt = buf(0, 1):uint()
  if bit32.rshift(vt, 4) ~= 1 or types[bit32.band(vt, 0x0f)] == nil then return false end
  mroce.dissector(buf, pinfo, tree)
  return true
end
mroce:register_heuristic("udp", heuristic)

local registered = 0
function mroce.init()
  local udp = DissectorTable.get("udp.port")
  if registered ~= 0 then udp:remove(registered, mroce) end
  udp:add(mroce.prefs.port, mroce)
  registered = mroce.prefs.port
end
DissectorTable.get("udp.port"):add_for_decode_as(mroce)
