// The connection manager's side-channel messages: round trips, and strict decoding.
#include "rdmacm/wire.h"

#include <gtest/gtest.h>

namespace mroce::rdmacm {
namespace {

Message req() {
  Message m;
  m.type = MsgType::kReq;
  for (int i = 0; i < 16; ++i) m.ep.gid[i] = static_cast<std::uint8_t>(i + 1);
  m.ep.qpn = 0x020001;
  m.ep.psn = 0xabcdef;
  m.ep.qkey = 0x01234567;
  m.ep.port_space = 0x0106;
  m.ep.responder_resources = 4;
  m.ep.initiator_depth = 3;
  m.ep.retry_count = 7;
  m.ep.rnr_retry_count = 6;
  m.private_data = {9, 8, 7};
  return m;
}

std::vector<std::uint8_t> bytes_of(const Message& m) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(encode(m, &out));
  return out;
}

TEST(RdmacmWire, RequestRoundTrips) {
  const auto b = bytes_of(req());
  Message m;
  std::size_t used = 0;
  ASSERT_EQ(decode(b, &m, &used), DecodeResult::kOk);
  EXPECT_EQ(used, b.size());
  EXPECT_EQ(m.type, MsgType::kReq);
  EXPECT_EQ(m.ep.gid, req().ep.gid);
  EXPECT_EQ(m.ep.qpn, 0x020001u);
  EXPECT_EQ(m.ep.psn, 0xabcdefu);
  EXPECT_EQ(m.ep.qkey, 0x01234567u);
  EXPECT_EQ(m.ep.port_space, 0x0106);
  EXPECT_EQ(m.ep.responder_resources, 4);
  EXPECT_EQ(m.ep.initiator_depth, 3);
  EXPECT_EQ(m.ep.retry_count, 7);
  EXPECT_EQ(m.ep.rnr_retry_count, 6);
  EXPECT_EQ(m.private_data, (std::vector<std::uint8_t>{9, 8, 7}));
}

TEST(RdmacmWire, RejectAndEmptyMessagesRoundTrip) {
  Message rej;
  rej.type = MsgType::kRej;
  rej.reason = 28;
  rej.private_data.assign(kMaxRejPrivate, 0x5a);
  auto b = bytes_of(rej);
  Message dreq;
  dreq.type = MsgType::kDreq;
  const auto d = bytes_of(dreq);
  EXPECT_EQ(d.size(), kHeaderSize);
  b.insert(b.end(), d.begin(), d.end());  // two messages back to back
  Message m;
  std::size_t used = 0;
  ASSERT_EQ(decode(b, &m, &used), DecodeResult::kOk);
  EXPECT_EQ(m.type, MsgType::kRej);
  EXPECT_EQ(m.reason, 28);
  EXPECT_EQ(m.private_data.size(), kMaxRejPrivate);
  ASSERT_EQ(decode(std::span(b).subspan(used), &m, &used), DecodeResult::kOk);
  EXPECT_EQ(m.type, MsgType::kDreq);
}

TEST(RdmacmWire, PrivateDataOverTheLimitIsRefused) {
  Message m = req();
  m.private_data.assign(kMaxReqPrivate + 1, 1);
  std::vector<std::uint8_t> out;
  EXPECT_FALSE(encode(m, &out));
  EXPECT_TRUE(out.empty());
  m.type = MsgType::kRep;  // REP allows more
  EXPECT_TRUE(encode(m, &out));
}

TEST(RdmacmWire, EveryPrefixNeedsMore) {
  const auto b = bytes_of(req());
  for (std::size_t n = 0; n < b.size(); ++n) {
    Message m;
    std::size_t used = 0;
    EXPECT_EQ(decode(std::span(b).first(n), &m, &used), DecodeResult::kNeedMore) << n;
  }
}

TEST(RdmacmWire, MalformedMessagesAreRefused) {
  const auto good = bytes_of(req());
  auto expect_malformed = [](std::vector<std::uint8_t> b, const char* what) {
    Message m;
    std::size_t used = 0;
    EXPECT_EQ(decode(b, &m, &used), DecodeResult::kMalformed) << what;
  };
  auto b = good;
  b[0] = 'X';
  expect_malformed(b, "magic");
  b = good;
  b[4] = 2;
  expect_malformed(b, "version");
  b = good;
  b[5] = 7;
  expect_malformed(b, "type");
  b = good;
  b[5] = 0;
  expect_malformed(b, "type 0");
  b = good;
  b[kHeaderSize + 36] = 4;  // private length says 4, 3 bytes follow
  expect_malformed(b, "private length");
  b = good;
  b[kHeaderSize + 16] = 0x01;  // QPN above 24 bits
  expect_malformed(b, "qpn");
  b = good;
  b[5] = static_cast<std::uint8_t>(MsgType::kRtu);  // an RTU has no body
  expect_malformed(b, "body on RTU");
  b = good;
  b[6] = 0x02;
  b[7] = 0x01;  // 513 bytes
  expect_malformed(b, "length");
  // A REQ whose private data is over its limit, however well framed.
  Message rep = req();
  rep.type = MsgType::kRep;
  rep.private_data.assign(kMaxReqPrivate + 1, 1);
  b = bytes_of(rep);
  b[5] = static_cast<std::uint8_t>(MsgType::kReq);
  expect_malformed(b, "REQ private data over its limit");
}

}  // namespace
}  // namespace mroce::rdmacm
