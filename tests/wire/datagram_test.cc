// DATAGRAM packets (SPEC 3.8): round trips, and every malformed form refused with its
// error.
#include <gtest/gtest.h>

#include <vector>

#include "wire/codec.h"

namespace mroce::wire {
namespace {

DatagramHeader header(DatagramOp op) {
  DatagramHeader d;
  d.dst_qp = 0x010002;
  d.src_qp = 0xfedcba;
  d.qkey = 0x11111111;
  d.op = op;
  d.flags = datagram_flags::kSolicited;
  d.payload_length = 100;
  d.imm = op == DatagramOp::kSendImm ? 0xa1b2c3d4 : 0;
  return d;
}

// A packet with its payload (bytes 0, 1, 2, ...).
std::vector<std::uint8_t> packet(const DatagramHeader& d) {
  std::vector<std::uint8_t> buf(kDatagramHeaderSize + d.payload_length);
  EXPECT_EQ(encode_datagram(d, buf), kDatagramHeaderSize);
  for (std::size_t i = 0; i < d.payload_length; ++i) {
    buf[kDatagramHeaderSize + i] = std::uint8_t(i);
  }
  return buf;
}

TEST(Datagram, RoundTrips) {
  for (DatagramOp op : {DatagramOp::kSend, DatagramOp::kSendImm}) {
    const DatagramHeader d = header(op);
    const auto buf = packet(d);
    Packet p;
    ASSERT_EQ(decode(buf, {}, &p), DecodeError::kOk);
    EXPECT_EQ(p.common.type, PacketType::kDatagram);
    EXPECT_EQ(p.datagram.dst_qp, d.dst_qp);
    EXPECT_EQ(p.datagram.src_qp, d.src_qp);
    EXPECT_EQ(p.datagram.qkey, d.qkey);
    EXPECT_EQ(p.datagram.op, op);
    EXPECT_EQ(p.datagram.flags, d.flags);
    EXPECT_EQ(p.datagram.imm, d.imm);
    ASSERT_EQ(p.payload.size(), d.payload_length);
    EXPECT_EQ(p.payload[99], 99);
  }
}

TEST(Datagram, LayoutIsTheSpecs) {
  const auto buf = packet(header(DatagramOp::kSendImm));
  EXPECT_EQ(buf[0], 0x19);  // version 1, type 9
  for (std::size_t i = 1; i < 16; ++i) EXPECT_EQ(buf[i], 0) << i;
  EXPECT_EQ(buf[16 + 1], 0x01);  // destination QP 0x010002
  EXPECT_EQ(buf[16 + 3], 0x02);
  EXPECT_EQ(buf[16 + 12], 2);    // SEND_IMM
  EXPECT_EQ(buf[16 + 15], 100);  // payload length
  EXPECT_EQ(buf[16 + 16], 0xa1);
}

TEST(Datagram, EncoderRefusesWhatTheDecoderWould) {
  std::vector<std::uint8_t> buf(1000);
  DatagramHeader d = header(DatagramOp::kSend);
  d.imm = 1;
  EXPECT_EQ(encode_datagram(d, buf), 0u);
  d = header(DatagramOp::kSend);
  d.dst_qp = 0;
  EXPECT_EQ(encode_datagram(d, buf), 0u);
  d.dst_qp = 1u << 24;
  EXPECT_EQ(encode_datagram(d, buf), 0u);
  d = header(DatagramOp::kSend);
  d.flags = 0x02;
  EXPECT_EQ(encode_datagram(d, buf), 0u);
  EXPECT_EQ(encode_datagram(header(DatagramOp::kSend), {buf.data(), kDatagramHeaderSize - 1}), 0u);
}

TEST(Datagram, RejectsMalformed) {
  const auto good = packet(header(DatagramOp::kSendImm));
  Packet p;
  for (std::size_t len = kCommonSize; len < kDatagramHeaderSize; ++len) {
    EXPECT_EQ(decode({good.data(), len}, {}, &p), DecodeError::kTruncated) << len;
  }
  // Payload shorter or longer than its length field.
  EXPECT_EQ(decode({good.data(), good.size() - 1}, {}, &p), DecodeError::kBadLength);
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(decode(longer, {}, &p), DecodeError::kBadLength);
  struct Case {
    std::size_t at;
    std::uint8_t value;
    DecodeError want;
  };
  const Case cases[] = {
      {1, 0x01, DecodeError::kReservedBits},        // flags of the common header
      {2, 1, DecodeError::kReservedBits},           // path
      {3, 1, DecodeError::kReservedBits},           // generation
      {7, 1, DecodeError::kReservedBits},           // connection id
      {15, 1, DecodeError::kReservedBits},          // token
      {16, 1, DecodeError::kReservedBits},          // destination QP above 24 bits
      {20, 1, DecodeError::kReservedBits},          // source QP above 24 bits
      {16 + 12, 0, DecodeError::kBadOpcode},        // op
      {16 + 12, 3, DecodeError::kBadOpcode},        //
      {16 + 13, 0x02, DecodeError::kReservedBits},  // flags
  };
  for (const Case& c : cases) {
    auto bad = good;
    bad[c.at] = c.value;
    EXPECT_EQ(decode(bad, {}, &p), c.want) << "byte " << c.at;
  }
  auto zero = good;  // QP 0 names nothing
  zero[17] = zero[18] = zero[19] = 0;
  EXPECT_EQ(decode(zero, {}, &p), DecodeError::kReservedBits);
  auto imm = packet(header(DatagramOp::kSend));  // SEND carries immediate 0
  imm[16 + 19] = 1;
  EXPECT_EQ(decode(imm, {}, &p), DecodeError::kReservedBits);
}

}  // namespace
}  // namespace mroce::wire
