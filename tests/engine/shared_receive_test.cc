// Shared receive queues in the engine: streams on one SRQ take receives as their
// messages open, in any order and through loss, each receive used once; the limit event
// fires once; a stream's rights refuse what its peer may not do.
#include <algorithm>
#include <map>
#include <set>

#include "engine/fixture.h"

namespace mroce::testing {
namespace {

constexpr Time kLimit = 2 * kSecond;

class SharedReceive : public ::testing::Test {
 protected:
  SharedReceive() : cl(2, 1, 4, 7) {
    EXPECT_EQ(B().create_srq(256, &srq), Errc::kOk);
    StreamConfig on_srq;
    on_srq.srq = srq;
    on_srq.rq_depth = 256;
    for (int i = 0; i < 2; ++i) {
      StreamId sa = 0, sb = 0;
      EXPECT_EQ(A().create_stream({}, &sa), Errc::kOk);
      EXPECT_EQ(B().create_stream(on_srq, &sb), Errc::kOk);
      EXPECT_EQ(A().connect_stream(now(), sa, cl.hosts[1]->endpoint(), sb), Errc::kOk);
      EXPECT_EQ(B().connect_stream(now(), sb, cl.hosts[0]->endpoint(), sa), Errc::kOk);
      senders.push_back(sa);
      receivers.push_back(sb);
    }
  }
  Engine& A() { return cl.engine(0); }
  Engine& B() { return cl.engine(1); }
  Time now() { return cl.net.now(); }

  Cluster cl;
  SrqId srq = kNoSrq;
  std::vector<StreamId> senders, receivers;
};

// Multi-segment messages over four spines with loss arrive out of order; each lands
// whole in the one receive it took, and every receive serves one message.
TEST_F(SharedReceive, MessagesOfSeveralStreamsShareTheReceives) {
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).loss = 0.02;
  constexpr int kMessages = 40;
  constexpr std::uint32_t kSize = 20000;  // five segments
  Buffer src(A(), kMessages * kSize), dst(B(), kMessages * kSize);
  for (int m = 0; m < kMessages; ++m) {
    std::fill_n(src.bytes.begin() + m * kSize, kSize, std::uint8_t(m + 1));
    ASSERT_EQ(B().post_srq_recv(now(), srq, make_recv(dst, m * kSize, kSize, m)), Errc::kOk);
  }
  for (int m = 0; m < kMessages; ++m) {
    ASSERT_EQ(
        A().post_send(now(), senders[m % 2], make_wr(WrOpcode::kSend, src, m * kSize, kSize, m)),
        Errc::kOk);
  }
  ASSERT_TRUE(cl.run_until_completions(1, kMessages, kLimit));
  std::set<std::uint64_t> used;
  std::map<StreamId, int> last_tag;
  for (const Completion& c : cl.rec(1).completions) {
    ASSERT_EQ(c.status, WcStatus::kSuccess);
    ASSERT_LT(c.wr_id, std::uint64_t(kMessages));
    used.insert(c.wr_id);
    const std::uint8_t* landed = dst.bytes.data() + c.wr_id * kSize;
    const int tag = landed[0] - 1;  // which message took this receive
    EXPECT_TRUE(std::all_of(landed, landed + kSize, [&](std::uint8_t b) { return b == tag + 1; }));
    EXPECT_EQ(c.stream, receivers[tag % 2]);
    // Within a stream, messages complete in order.
    auto it = last_tag.find(c.stream);
    if (it != last_tag.end()) {
      EXPECT_GT(tag, it->second);
    }
    last_tag[c.stream] = tag;
  }
  EXPECT_EQ(used.size(), std::size_t(kMessages));
  EXPECT_EQ(B().post_recv(now(), receivers[0], make_recv(dst, 0, 64, 99)), Errc::kInvalidArgument);
}

TEST_F(SharedReceive, LimitEventFiresOnceBelowTheLimit) {
  Buffer src(A(), 4096), dst(B(), 4096);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(B().post_srq_recv(now(), srq, make_recv(dst, i * 64, 64, i)), Errc::kOk);
  }
  ASSERT_EQ(B().set_srq_limit(srq, 3), Errc::kOk);
  auto limit_events = [&] {
    return std::count_if(cl.rec(1).events.begin(), cl.rec(1).events.end(),
                         [](const Event& e) { return e.kind == EventKind::kSrqLimitReached; });
  };
  ASSERT_EQ(A().post_send(now(), senders[0], make_wr(WrOpcode::kSend, src, 0, 32, 1)), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(1, 1, kLimit));
  EXPECT_EQ(limit_events(), 0);  // 3 left: not below 3
  ASSERT_EQ(A().post_send(now(), senders[1], make_wr(WrOpcode::kSend, src, 0, 32, 2)), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(1, 2, kLimit));
  EXPECT_EQ(limit_events(), 1);
  std::uint32_t limit = 9, count = 9;
  ASSERT_EQ(B().query_srq(srq, &limit, &count), Errc::kOk);
  EXPECT_EQ(limit, 0u);
  EXPECT_EQ(count, 2u);
  ASSERT_EQ(A().post_send(now(), senders[0], make_wr(WrOpcode::kSend, src, 0, 32, 3)), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(1, 3, kLimit));
  EXPECT_EQ(limit_events(), 1);  // disarmed
  EXPECT_EQ(B().set_srq_limit(srq, 257), Errc::kInvalidArgument);
}

TEST(StreamRights, ReadBeyondTheStreamsRightsIsRefused) {
  Cluster cl(2, 1, 4, 3);
  auto [a, b] = cl.connect(0, 1);
  ASSERT_EQ(cl.engine(1).set_remote_access(b, access::kRemoteWrite), Errc::kOk);
  Buffer local(cl.engine(0), 4096), remote(cl.engine(1), 4096);
  SendWr wr = make_wr(WrOpcode::kRdmaRead, local, 0, 4096, 5);
  wr.remote_addr = remote.addr();
  wr.rkey = remote.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, kLimit));
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(cl.engine(1).counters().drop(DropReason::kAccessDenied), 1u);
}

}  // namespace
}  // namespace mroce::testing
