// The RoCEv2 wire format: every opcode round-trips in both modes, the decoder refuses what
// is malformed, the ICRC matches a packet captured from a ConnectX NIC, PSNs wrap.
#include <gtest/gtest.h>

#include <vector>

#include "baseline/aeth.h"
#include "baseline/codec.h"
#include "baseline/icrc.h"
#include "baseline/memory.h"
#include "baseline/psn.h"

namespace mroce::baseline {
namespace {

const Opcode kAll[] = {
    Opcode::kSendFirst,          Opcode::kSendMiddle,
    Opcode::kSendLast,           Opcode::kSendLastImm,
    Opcode::kSendOnly,           Opcode::kSendOnlyImm,
    Opcode::kWriteFirst,         Opcode::kWriteMiddle,
    Opcode::kWriteLast,          Opcode::kWriteLastImm,
    Opcode::kWriteOnly,          Opcode::kWriteOnlyImm,
    Opcode::kReadRequest,        Opcode::kReadResponseFirst,
    Opcode::kReadResponseMiddle, Opcode::kReadResponseLast,
    Opcode::kReadResponseOnly,   Opcode::kAck,
    Opcode::kAtomicAck,          Opcode::kCompareSwap,
    Opcode::kFetchAdd,           Opcode::kCnp,
};

std::vector<std::uint8_t> encode(const Packet& p, bool carry,
                                 std::span<const std::uint8_t> payload) {
  std::vector<std::uint8_t> buf(max_datagram(4096));
  const std::size_t at = write_headers(p, buf);
  EXPECT_GT(at, 0u);
  if (carry) std::copy(payload.begin(), payload.end(), buf.begin() + long(at));
  std::uint32_t wire = 0;
  const std::size_t n = finish(p, carry, buf, &wire);
  buf.resize(n);
  return buf;
}

Packet sample(Opcode op, std::uint32_t payload) {
  Packet p;
  p.bth = {op, true, false, 0, 0x8001, 0xabcdef, true, 0xfedcba};
  p.reth = {0x1122334455667788, 0x99aabbcc, 0x10000};
  p.atomic = {0x0102030405060708, 0x0a0b0c0d, 0x1111111111111111, 0x2222222222222222};
  p.aeth = Aeth::ack(credit_code(17), 0x123456);
  p.atomic_orig = 0x3333333333333333;
  p.imm = 0x44556677;
  p.payload_length = opcode_info(std::uint8_t(op)).payload ? payload : 0;
  return p;
}

TEST(BaselineCodec, EveryOpcodeRoundTripsInBothModes) {
  std::vector<std::uint8_t> payload(1001);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::uint8_t(i * 7);
  for (const bool carry : {true, false}) {
    for (const Opcode op : kAll) {
      SCOPED_TRACE(to_string(op));
      const OpcodeInfo info = opcode_info(std::uint8_t(op));
      Packet in = sample(op, 1001);
      if (op == Opcode::kCnp) in.bth.ack_req = false;
      const auto bytes = encode(in, carry, payload);
      Packet out;
      ASSERT_TRUE(decode(bytes, carry, &out));
      EXPECT_EQ(out.bth.opcode, op);
      EXPECT_EQ(out.bth.psn, in.bth.psn);
      EXPECT_EQ(out.bth.dest_qp, in.bth.dest_qp);
      EXPECT_EQ(out.bth.pkey, in.bth.pkey);
      EXPECT_EQ(out.bth.solicited, in.bth.solicited);
      EXPECT_EQ(out.bth.ack_req, in.bth.ack_req);
      EXPECT_EQ(out.payload_length, in.payload_length);
      const std::uint32_t pad = info.payload ? 3 : 0;  // 1001 bytes pad to 1004
      EXPECT_EQ(out.bth.pad, pad);
      EXPECT_EQ(out.wire_length, header_size(info.headers) + in.payload_length + pad + 4);
      if (info.headers & ext::kReth) {
        EXPECT_EQ(out.reth.va, in.reth.va);
        EXPECT_EQ(out.reth.rkey, in.reth.rkey);
        EXPECT_EQ(out.reth.length, in.reth.length);
      }
      if (info.headers & ext::kAtomicEth) {
        EXPECT_EQ(out.atomic.va, in.atomic.va);
        EXPECT_EQ(out.atomic.rkey, in.atomic.rkey);
        EXPECT_EQ(out.atomic.swap_add, in.atomic.swap_add);
        EXPECT_EQ(out.atomic.compare, in.atomic.compare);
      }
      if (info.headers & ext::kAeth) {
        EXPECT_EQ(out.aeth.syndrome, in.aeth.syndrome);
        EXPECT_EQ(out.aeth.msn, in.aeth.msn);
      }
      if (info.headers & ext::kAtomicAck) {
        EXPECT_EQ(out.atomic_orig, in.atomic_orig);
      }
      if (info.headers & ext::kImm) {
        EXPECT_EQ(out.imm, in.imm);
      }
      if (carry && info.payload) {
        ASSERT_EQ(out.payload.size(), payload.size());
        EXPECT_TRUE(std::equal(payload.begin(), payload.end(), out.payload.begin()));
      }
      EXPECT_EQ(bytes.size(),
                carry ? out.wire_length : header_size(info.headers) + (info.payload ? 4 : 0) + 4);
    }
  }
}

TEST(BaselineCodec, HeaderLayoutIsTheIbaOne) {
  Packet p = sample(Opcode::kWriteOnlyImm, 5);
  const auto b = encode(p, true, std::vector<std::uint8_t>{1, 2, 3, 4, 5});
  ASSERT_EQ(b.size(), 12u + 16 + 4 + 8 + 4);
  EXPECT_EQ(b[0], 0x0b);
  EXPECT_EQ(b[1], 0x80 | 3 << 4);  // solicited, pad 3, TVer 0
  EXPECT_EQ(b[2], 0x80);
  EXPECT_EQ(b[3], 0x01);
  EXPECT_EQ(b[4], 0);
  EXPECT_EQ((std::vector<std::uint8_t>{b[5], b[6], b[7]}),
            (std::vector<std::uint8_t>{0xab, 0xcd, 0xef}));
  EXPECT_EQ(b[8], 0x80);  // AckReq
  EXPECT_EQ((std::vector<std::uint8_t>{b[9], b[10], b[11]}),
            (std::vector<std::uint8_t>{0xfe, 0xdc, 0xba}));
  EXPECT_EQ(b[12], 0x11);  // RETH VA, big-endian
  EXPECT_EQ(b[19], 0x88);
  EXPECT_EQ(b[20], 0x99);  // R_Key
  EXPECT_EQ(b[27], 0x00);  // DMA length 0x00010000
  EXPECT_EQ(b[26], 0x00);
  EXPECT_EQ(b[25], 0x01);
  // ImmDt: the Verbs value's bytes as they sit in memory.
  std::uint32_t imm;
  std::memcpy(&imm, b.data() + 28, 4);
  EXPECT_EQ(imm, 0x44556677u);
  EXPECT_EQ(b[32], 1);
  EXPECT_EQ(b[37], 0);  // pad
}

TEST(BaselineCodec, DecoderRefusesMalformedPackets) {
  const auto good = encode(sample(Opcode::kSendOnly, 8), true, std::vector<std::uint8_t>(8, 1));
  Packet out;
  ASSERT_TRUE(decode(good, true, &out));
  const auto refused = [&](std::vector<std::uint8_t> b, bool carry = true) {
    Packet x;
    return !decode(b, carry, &x);
  };
  EXPECT_TRUE(refused({}));
  EXPECT_TRUE(refused(std::vector<std::uint8_t>(good.begin(), good.begin() + 15)));
  auto b = good;
  b[0] = 0x15;  // reserved opcode
  EXPECT_TRUE(refused(b));
  b = good;
  b[0] = 0x17;  // SEND only with invalidate: not supported
  EXPECT_TRUE(refused(b));
  b = good;
  b[0] = 0x24;  // UC SEND only
  EXPECT_TRUE(refused(b));
  b = good;
  b[1] |= 1;  // transport version 1
  EXPECT_TRUE(refused(b));
  b = good;
  b[8] |= 0x01;  // reserved bits after AckReq
  EXPECT_TRUE(refused(b));
  b = good;
  b[1] = std::uint8_t((b[1] & 0xcf) | 1 << 4);  // pad 1 with 8 bytes: 7-byte payload in 8
  EXPECT_TRUE(decode(b, true, &out));
  EXPECT_EQ(out.payload_length, 7u);
  b.push_back(0);  // payload plus pad no longer a multiple of four
  EXPECT_TRUE(refused(b));
  b = good;
  b[4] = 0xff;  // reserved byte masked by the ICRC: ignored
  EXPECT_FALSE(refused(b));
  EXPECT_TRUE(refused(good, false));  // payload where headers-only mode wants a length

  auto ack = encode(sample(Opcode::kAck, 0), true, {});
  ack[12] = 0x40;  // syndrome type 10: reserved
  EXPECT_TRUE(refused(ack));
  ack[12] = 0x64;  // NAK code 4 (invalid RD request): not an RC code
  EXPECT_TRUE(refused(ack));
  ack[12] = 0x80;  // reserved top bit
  EXPECT_TRUE(refused(ack));
  ack = encode(sample(Opcode::kAck, 0), true, {});
  ack.insert(ack.end() - 4, {0, 0, 0, 0});  // an ACK carries no payload
  EXPECT_TRUE(refused(ack));

  auto cnp = encode(sample(Opcode::kCnp, 0), true, {});
  EXPECT_FALSE(refused(cnp));
  cnp[20] = 1;  // CNP reserved bytes must be zero
  EXPECT_TRUE(refused(cnp));

  auto read = encode(sample(Opcode::kReadRequest, 0), true, {});
  read[24] = 0x80;  // DMA length above 2^31
  EXPECT_TRUE(refused(read));

  Packet h = sample(Opcode::kWriteFirst, 4096);
  auto headers_only = encode(h, false, {});
  EXPECT_FALSE(refused(headers_only, false));
  headers_only[1] = std::uint8_t(headers_only[1] | 1 << 4);  // pad disagrees with the length
  EXPECT_TRUE(refused(headers_only, false));
}

TEST(BaselineCodec, IcrcMatchesAConnectXCapture) {
  // A CNP captured from a ConnectX-4 Lx: IPv4 10.0.17.1 -> 10.0.18.1, identification 0x718c,
  // DF, UDP 0 -> 4791; BTH 81 00 ffff 40 000118 00 000000, 16 zero bytes, ICRC 82 fd 00 2a.
  std::vector<std::uint8_t> packet = {0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
                                      0x01, 0x18, 0x00, 0x00, 0x00, 0x00};
  packet.resize(12 + 16, 0);
  packet.insert(packet.end(), {0x82, 0xfd, 0x00, 0x2a});
  TxMeta meta;
  meta.src = Address::ipv4(0x0a001101);
  meta.dst = Address::ipv4(0x0a001201);
  meta.src_port = 0;
  meta.dst_port = 4791;
  const std::uint32_t icrc = compute_icrc(meta, packet, 0x718c);
  EXPECT_EQ(icrc, 0x2a00fd82u);  // least significant byte first on the wire
  Packet p;
  ASSERT_TRUE(decode(packet, true, &p));
  EXPECT_EQ(p.bth.opcode, Opcode::kCnp);
  EXPECT_EQ(p.bth.dest_qp, 0x118u);

  std::vector<std::uint8_t> copy = packet;
  copy.resize(copy.size() - 4);
  copy.resize(copy.size() + 4, 0);
  stamp_icrc(meta, copy);
  EXPECT_NE(copy, packet);  // we send identification 0, so our ICRC differs from this one
}

TEST(BaselineCodec, Crc32IsTheIeeeOne) {
  const std::uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(~crc32_update(~0u, check), 0xcbf43926u);
  const std::uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(crc32_update(~0u, lrh), 0xdebb20e3u);  // the seed of every ICRC, as IBA derives it
}

TEST(BaselineCodec, PsnArithmeticWraps) {
  EXPECT_EQ(psn_add(kPsnMask, 1), 0u);
  EXPECT_EQ(psn_add(kPsnMask - 1, 5), 3u);
  EXPECT_EQ(psn_diff(2, kPsnMask - 1), 4);
  EXPECT_EQ(psn_diff(kPsnMask - 1, 2), -4);
  EXPECT_TRUE(psn_lt(kPsnMask, 0));
  EXPECT_FALSE(psn_lt(0, kPsnMask));
  EXPECT_EQ(psn_diff(kPsnWindow - 1, 0), std::int32_t(kPsnWindow - 1));
  EXPECT_EQ(psn_diff(kPsnWindow, 0), -std::int32_t(kPsnWindow));
}

TEST(BaselineCodec, AethFieldsFollowTheIbaTables) {
  EXPECT_EQ(credit_code(0), 0);
  EXPECT_EQ(credit_count(credit_code(5)), 4u);
  EXPECT_EQ(credit_count(credit_code(128)), 128u);
  EXPECT_EQ(credit_count(credit_code(1000000)), 32768u);
  EXPECT_EQ(rnr_timer_delay(1), 10 * kMicrosecond);
  EXPECT_EQ(rnr_timer_delay(0), Time{655360} * kMicrosecond);
  EXPECT_EQ(rnr_timer_code(100 * kMicrosecond), 7);  // 120 us
  EXPECT_EQ(rnr_timer_delay(rnr_timer_code(100 * kMicrosecond)), 120 * kMicrosecond);
  const Aeth nak = Aeth::nak(NakCode::kRemoteAccessError, 7);
  EXPECT_EQ(nak.syndrome, 0x62);
  EXPECT_EQ(nak.type(), AckType::kNak);
  EXPECT_EQ(Aeth::rnr_nak(7, 0).syndrome, 0x27);
}

TEST(BaselineMemory, KeysBoundsAndRights) {
  MemoryTable mem(1);
  std::vector<std::uint8_t> bytes(100);
  MrKeys k;
  ASSERT_EQ(mem.reg(1000, 100, access::kLocalWrite | access::kRemoteRead, bytes.data(), &k),
            Errc::kOk);
  std::uint8_t* host = nullptr;
  EXPECT_EQ(mem.check(k.rkey, 1010, 90, access::kRemoteRead, &host), MemCheck::kOk);
  EXPECT_EQ(host, bytes.data() + 10);
  EXPECT_EQ(mem.check(k.rkey, 1010, 91, access::kRemoteRead, &host), MemCheck::kOutOfRange);
  EXPECT_EQ(mem.check(k.rkey, 999, 1, access::kRemoteRead, &host), MemCheck::kOutOfRange);
  EXPECT_EQ(mem.check(k.rkey, ~0ull, 2, 0, &host), MemCheck::kOutOfRange);
  EXPECT_EQ(mem.check(k.rkey, 1000, 8, access::kRemoteWrite, &host), MemCheck::kAccessDenied);
  EXPECT_EQ(mem.check(k.rkey + 1, 1000, 8, 0, &host), MemCheck::kBadKey);
  EXPECT_EQ(mem.check(0, 1000, 8, 0, &host), MemCheck::kBadKey);
  ASSERT_EQ(mem.dereg(k.lkey), Errc::kOk);
  EXPECT_EQ(mem.check(k.rkey, 1000, 8, 0, &host), MemCheck::kBadKey);
  MrKeys k2;
  ASSERT_EQ(mem.reg(1000, 100, access::kAll, nullptr, &k2), Errc::kOk);
  EXPECT_NE(k2.rkey, k.rkey);  // the slot is reused, the key is not
  EXPECT_EQ(mem.check(k2.rkey, 1000, 8, access::kRemoteAtomic, &host), MemCheck::kOk);
  EXPECT_EQ(host, nullptr);  // no bytes behind this region
}

}  // namespace
}  // namespace mroce::baseline
