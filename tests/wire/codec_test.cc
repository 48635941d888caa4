// Every header round-trips through encode and decode, and the decoder refuses every
// kind of malformed input with the matching error.
#include <gtest/gtest.h>

#include <vector>

#include "wire/codec.h"

namespace mroce::wire {
namespace {

std::vector<std::uint8_t> buffer() {
  return std::vector<std::uint8_t>(9000);
}

CommonHeader common(PacketType t) {
  CommonHeader c;
  c.type = t;
  if (t == PacketType::kData || t == PacketType::kAck || t == PacketType::kNack) {
    c.path = 7;  // set-up packets carry path and generation 0
    c.generation = 200;
  }
  if (t != PacketType::kConnect) {  // CONNECT names no connection of the receiver yet
    c.dst_conn = 0x12345678;
    c.token = 0x0102030405060708ull;
  }
  return c;
}

DataHeader data(DataOp op) {
  DataHeader d;
  d.psn = 0xfffffffe;
  d.timestamp = 0xabcdef01;
  d.stream = 0x00abcdef;
  d.msn = 77;
  d.op = op;
  d.flags = data_flags::kSolicited;
  d.remote_addr = 0x1122334455667788ull;
  d.rkey = 0x99aabbcc;
  d.ssn = 5;
  d.imm = 0xdeadbeef;
  if (op_has_payload(op)) {
    d.offset = 4096;
    d.payload_length = 100;
    d.message_length = 8192;
  } else if (op == DataOp::kFetchAdd || op == DataOp::kCompareSwap ||
             op == DataOp::kAtomicResponse) {
    d.message_length = 8;
    d.operand = 0x0f0e0d0c0b0a0908ull;
    d.swap = 0x0102030405060708ull;
  } else if (op == DataOp::kReadRequest) {
    d.message_length = 1 << 20;
    d.rate_kbps = 12345678;
  }
  return d;
}

class DataRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(DataRoundTrip, EveryOpcode) {
  const DataOp op = DataOp(GetParam());
  auto buf = buffer();
  const CommonHeader c = common(PacketType::kData);
  const DataHeader d = data(op);
  const std::size_t header = encode_data(c, d, buf);
  ASSERT_EQ(header, data_header_size(op));
  const std::size_t total = header + d.payload_length;
  for (std::size_t i = header; i < total; ++i) buf[i] = std::uint8_t(i);
  Packet p;
  ASSERT_EQ(decode({buf.data(), total}, {}, &p), DecodeError::kOk);
  EXPECT_EQ(p.common.type, PacketType::kData);
  EXPECT_EQ(p.common.path, 7);
  EXPECT_EQ(p.common.generation, 200);
  EXPECT_EQ(p.common.dst_conn, 0x12345678u);
  EXPECT_EQ(p.common.token, 0x0102030405060708ull);
  EXPECT_EQ(p.data.psn, d.psn);
  EXPECT_EQ(p.data.timestamp, d.timestamp);
  EXPECT_EQ(p.data.stream, d.stream);
  EXPECT_EQ(p.data.msn, d.msn);
  EXPECT_EQ(p.data.op, op);
  EXPECT_EQ(p.data.flags, d.flags);
  EXPECT_EQ(p.data.payload_length, d.payload_length);
  EXPECT_EQ(p.data.offset, d.offset);
  EXPECT_EQ(p.data.message_length, d.message_length);
  EXPECT_EQ(p.payload.size(), d.payload_length);
  const bool remote = op == DataOp::kWrite || op == DataOp::kWriteImm ||
                      op == DataOp::kReadRequest || op == DataOp::kFetchAdd ||
                      op == DataOp::kCompareSwap;
  if (remote) {
    EXPECT_EQ(p.data.remote_addr, d.remote_addr);
    EXPECT_EQ(p.data.rkey, d.rkey);
  }
  if (op == DataOp::kSend || op == DataOp::kSendImm || op == DataOp::kWriteImm) {
    EXPECT_EQ(p.data.ssn, d.ssn);
  }
  if (op == DataOp::kSendImm || op == DataOp::kWriteImm) {
    EXPECT_EQ(p.data.imm, d.imm);
  }
  if (op == DataOp::kFetchAdd || op == DataOp::kCompareSwap || op == DataOp::kAtomicResponse) {
    EXPECT_EQ(p.data.operand, d.operand);
  }
  if (op == DataOp::kCompareSwap) {
    EXPECT_EQ(p.data.swap, d.swap);
  }
  EXPECT_EQ(p.data.rate_kbps, op == DataOp::kReadRequest ? 12345678u : 0u);
  // Headers-only mode: the same header with no payload bytes after it.
  Packet q;
  EXPECT_EQ(decode({buf.data(), header}, {false}, &q), DecodeError::kOk);
  EXPECT_EQ(q.data.payload_length, d.payload_length);
  if (d.payload_length > 0) {
    EXPECT_EQ(decode({buf.data(), header}, {true}, &q), DecodeError::kBadLength);
    EXPECT_EQ(decode({buf.data(), total}, {false}, &q), DecodeError::kBadLength);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, DataRoundTrip, ::testing::Range(0, int(kDataOpCount)));

TEST(Codec, AckRoundTrip) {
  auto buf = buffer();
  AckHeader a;
  a.cum_psn = 0xffffff00;
  a.echo_timestamp = 1;
  a.ack_delay = 2;
  a.rx_packets = 3;
  a.ce_packets = 4;
  a.rate_kbps = 5;
  a.set_sacked(0);
  a.set_sacked(63);
  a.set_sacked(64);
  a.set_sacked(255);
  const std::size_t n = encode_ack(common(PacketType::kAck), a, buf);
  ASSERT_EQ(n, kCommonSize + kAckSize);
  Packet p;
  ASSERT_EQ(decode({buf.data(), n}, {}, &p), DecodeError::kOk);
  EXPECT_EQ(p.ack.cum_psn, a.cum_psn);
  EXPECT_EQ(p.ack.echo_timestamp, 1u);
  EXPECT_EQ(p.ack.ack_delay, 2u);
  EXPECT_EQ(p.ack.rx_packets, 3u);
  EXPECT_EQ(p.ack.ce_packets, 4u);
  EXPECT_EQ(p.ack.rate_kbps, 5u);
  EXPECT_EQ(p.ack.sack, a.sack);
  for (std::uint32_t i : {0u, 63u, 64u, 255u}) EXPECT_TRUE(p.ack.sacked(i));
  EXPECT_FALSE(p.ack.sacked(1));
  EXPECT_EQ(decode({buf.data(), n - 1}, {}, &p), DecodeError::kTruncated);
  buf[n] = 0;
  EXPECT_EQ(decode({buf.data(), n + 1}, {}, &p), DecodeError::kBadLength);
}

TEST(Codec, NackRoundTripAndCodes) {
  auto buf = buffer();
  NackHeader n;
  n.psn = 9;
  n.code = NackCode::kRemoteAccess;
  n.stream = 3;
  n.msn = 4;
  n.echo_timestamp = 5;
  const std::size_t len = encode_nack(common(PacketType::kNack), n, buf);
  ASSERT_EQ(len, kCommonSize + kNackSize);
  Packet p;
  ASSERT_EQ(decode({buf.data(), len}, {}, &p), DecodeError::kOk);
  EXPECT_EQ(p.nack.psn, 9u);
  EXPECT_EQ(p.nack.code, NackCode::kRemoteAccess);
  EXPECT_EQ(p.nack.stream, 3u);
  EXPECT_EQ(p.nack.msn, 4u);
  buf[kCommonSize + 4] = 0;  // code 0 does not exist
  EXPECT_EQ(decode({buf.data(), len}, {}, &p), DecodeError::kBadOpcode);
  buf[kCommonSize + 4] = 2;
  buf[kCommonSize + 5] = 1;  // reserved
  EXPECT_EQ(decode({buf.data(), len}, {}, &p), DecodeError::kReservedBits);
}

TEST(Codec, HandshakeRoundTrip) {
  auto buf = buffer();
  HandshakeHeader hs;
  hs.src_conn = 0x100001;
  hs.src_token = 0xfedcba9876543210ull;
  hs.isn = 0xfffffff0;
  hs.listen_port = 4793;
  hs.mss = 4096;
  hs.max_messages = 256;
  hs.max_responses = 64;
  hs.paths = 16;
  hs.flags = handshake_flags::kNoPayload;
  hs.address_count = 3;
  for (int i = 0; i < 3; ++i) hs.addresses[i].fill(std::uint8_t(i + 1));
  for (PacketType t : {PacketType::kConnect, PacketType::kAccept}) {
    const std::size_t n = encode_handshake(common(t), hs, buf);
    ASSERT_EQ(n, handshake_size(3));
    Packet p;
    ASSERT_EQ(decode({buf.data(), n}, {}, &p), DecodeError::kOk);
    EXPECT_EQ(p.common.type, t);
    EXPECT_EQ(p.handshake.src_conn, hs.src_conn);
    EXPECT_EQ(p.handshake.src_token, hs.src_token);
    EXPECT_EQ(p.handshake.isn, hs.isn);
    EXPECT_EQ(p.handshake.listen_port, 4793);
    EXPECT_EQ(p.handshake.mss, 4096);
    EXPECT_EQ(p.handshake.max_messages, 256);
    EXPECT_EQ(p.handshake.max_responses, 64);
    EXPECT_EQ(p.handshake.paths, 16);
    EXPECT_EQ(p.handshake.flags, handshake_flags::kNoPayload);
    ASSERT_EQ(p.handshake.address_count, 3);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(p.handshake.addresses[i], hs.addresses[i]);
    EXPECT_EQ(decode({buf.data(), n - 16}, {}, &p), DecodeError::kBadLength);
  }
  hs.address_count = 0;
  EXPECT_EQ(encode_handshake(common(PacketType::kConnect), hs, buf), 0u);
  hs.address_count = 9;
  EXPECT_EQ(encode_handshake(common(PacketType::kConnect), hs, buf), 0u);
}

TEST(Codec, BarePackets) {
  auto buf = buffer();
  for (PacketType t : {PacketType::kConfirm, PacketType::kClose, PacketType::kCloseAck}) {
    const std::size_t n = encode_bare(common(t), buf);
    ASSERT_EQ(n, kCommonSize);
    Packet p;
    ASSERT_EQ(decode({buf.data(), n}, {}, &p), DecodeError::kOk);
    EXPECT_EQ(p.common.type, t);
    EXPECT_EQ(decode({buf.data(), n + 1}, {}, &p), DecodeError::kBadLength);
  }
}

TEST(Codec, SetUpPacketsWithAPathGenerationOrConnectIdAreMalformed) {
  auto buf = buffer();
  HandshakeHeader hs;
  hs.src_conn = 1;
  hs.mss = 4096;
  hs.paths = 4;
  hs.address_count = 1;
  Packet p;
  for (int t = int(PacketType::kConnect); t <= int(PacketType::kCloseAck); ++t) {
    const PacketType type = PacketType(t);
    const bool handshake = type == PacketType::kConnect || type == PacketType::kAccept;
    for (int field = 0; field < 4; ++field) {
      CommonHeader c = common(type);
      if (field == 0) c.path = 1;
      if (field == 1) c.generation = 1;
      if (field == 2) c.dst_conn ^= 1;
      if (field == 3) c.token ^= 1;
      const std::size_t n = handshake ? encode_handshake(c, hs, buf) : encode_bare(c, buf);
      const bool id_field = field >= 2;
      const DecodeError want =
          !id_field || type == PacketType::kConnect ? DecodeError::kReservedBits : DecodeError::kOk;
      EXPECT_EQ(decode({buf.data(), n}, {}, &p), want) << to_string(type) << " field " << field;
    }
  }
}

TEST(Codec, RejectsMalformedCommonHeaders) {
  auto buf = buffer();
  const std::size_t n = encode_bare(common(PacketType::kConfirm), buf);
  Packet p;
  for (std::size_t len = 0; len < n; ++len) {
    EXPECT_EQ(decode({buf.data(), len}, {}, &p), DecodeError::kTruncated) << len;
  }
  auto bad = buf;
  bad[0] = std::uint8_t(2 << 4 | 6);
  EXPECT_EQ(decode({bad.data(), n}, {}, &p), DecodeError::kBadVersion);
  bad = buf;
  bad[0] = std::uint8_t(1 << 4 | 0);
  EXPECT_EQ(decode({bad.data(), n}, {}, &p), DecodeError::kBadType);
  bad[0] = std::uint8_t(1 << 4 | 10);
  EXPECT_EQ(decode({bad.data(), n}, {}, &p), DecodeError::kBadType);
  bad = buf;
  bad[1] = flags::kAckRequest;  // flags are for DATA only
  EXPECT_EQ(decode({bad.data(), n}, {}, &p), DecodeError::kReservedBits);
}

TEST(Codec, RejectsMalformedData) {
  auto buf = buffer();
  CommonHeader c = common(PacketType::kData);
  DataHeader d = data(DataOp::kWrite);
  std::size_t header = encode_data(c, d, buf);
  const std::size_t total = header + d.payload_length;
  Packet p;
  ASSERT_EQ(decode({buf.data(), total}, {}, &p), DecodeError::kOk);
  for (std::size_t len = kCommonSize; len < header; ++len) {
    EXPECT_EQ(decode({buf.data(), len}, {false}, &p), DecodeError::kTruncated) << len;
  }
  auto bad = buf;
  bad[1] = 0x80;
  EXPECT_EQ(decode({bad.data(), total}, {}, &p), DecodeError::kReservedBits);
  bad = buf;
  bad[kCommonSize + 16] = kDataOpCount;
  EXPECT_EQ(decode({bad.data(), total}, {}, &p), DecodeError::kBadOpcode);
  bad = buf;
  bad[kCommonSize + 17] = 0x80;
  EXPECT_EQ(decode({bad.data(), total}, {}, &p), DecodeError::kReservedBits);
  // Payload running past the message.
  d.offset = d.message_length - 10;
  header = encode_data(c, d, buf);
  EXPECT_EQ(decode({buf.data(), header + d.payload_length}, {}, &p), DecodeError::kBadLength);
  // Payload on an op that carries none.
  DataHeader r = data(DataOp::kReadRequest);
  r.payload_length = 4;
  header = encode_data(c, r, buf);
  EXPECT_EQ(decode({buf.data(), header + 4}, {}, &p), DecodeError::kBadLength);
  // Atomics are 8 bytes.
  DataHeader at = data(DataOp::kFetchAdd);
  at.message_length = 4;
  header = encode_data(c, at, buf);
  EXPECT_EQ(decode({buf.data(), header}, {}, &p), DecodeError::kBadLength);
}

TEST(Codec, MaxPacketSizeCoversEveryPacket) {
  const std::size_t max = max_packet_size(4096);
  EXPECT_GE(max, data_header_size(DataOp::kCompareSwap));
  EXPECT_GE(max, data_header_size(DataOp::kWriteImm) + 4096);
  EXPECT_GE(max, handshake_size(kMaxPlanes));
}

}  // namespace
}  // namespace mroce::wire
