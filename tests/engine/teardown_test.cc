// Destroying streams returns every table entry they held: the sender's count of the
// peer's message slots (open_messages), its READ/atomic response slots, and the
// receiver's table of messages partly received. A long-lived connection whose queue pairs
// come and go must not fill the peer's tables.
#include <tuple>

#include "engine/fixture.h"

namespace mroce::testing {
namespace {

constexpr Time kLimit = 200 * kMillisecond;

class Teardown : public ::testing::Test {
 protected:
  // A keeps one stream bound to B for the whole test, so the connection outlives the
  // streams under test.
  Teardown() : cl(2, 1, 4, 3) { keep = cl.connect(0, 1); }
  Engine& A() { return cl.engine(0); }
  Engine& B() { return cl.engine(1); }
  Time now() { return cl.net.now(); }
  ConnStats stats(Engine& e, StreamId s) {
    ConnStats st;
    EXPECT_TRUE(e.connection_stats(e.stream_connection(s), &st));
    return st;
  }
  void run_for(Time t) {
    cl.net.run_until([] { return false; }, now() + t);
  }

  Cluster cl;
  std::pair<StreamId, StreamId> keep;
};

// One stream's send queue holds a work request in every state when it is destroyed:
// done but queued behind an unfinished READ, failed behind it, in flight, and queued.
TEST_F(Teardown, DestroyingAStreamReleasesEverySlotItHeld) {
  StreamId a = 0, b = 0;
  std::tie(a, b) = cl.connect(0, 1);
  Buffer local(A(), 4 << 20), remote(B(), 4 << 20);
  auto write = [&](std::uint32_t offset, std::uint32_t len, std::uint64_t id, std::uint32_t rkey) {
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, local, offset, len, id);
    wr.remote_addr = remote.addr() + offset;
    wr.rkey = rkey;
    return A().post_send(now(), a, wr);
  };
  SendWr rd = make_wr(WrOpcode::kRdmaRead, local, 0, 2 << 20, 1);
  rd.remote_addr = remote.addr();
  rd.rkey = remote.keys.rkey;
  ASSERT_EQ(A().post_send(now(), a, rd), Errc::kOk);
  ASSERT_EQ(write(2 << 20, 4096, 2, remote.keys.rkey), Errc::kOk);      // done behind the READ
  ASSERT_EQ(write(2 << 20, 4096, 3, remote.keys.rkey + 1), Errc::kOk);  // failed behind it
  ASSERT_EQ(write(3 << 20, 1 << 20, 4, remote.keys.rkey), Errc::kOk);   // in flight
  // The READ's 2 MiB response takes about 1.7 ms at 10 Gbit/s: stop well before.
  ASSERT_TRUE(cl.net.run_until([&] { return stats(A(), a).open_messages == 4; },
                               now() + 300 * kMicrosecond));
  run_for(200 * kMicrosecond);
  ASSERT_EQ(write(0, 64, 5, remote.keys.rkey), Errc::kOk);  // queued, never sent
  ASSERT_TRUE(cl.rec(0).completions.empty()) << "the READ finished before the teardown";
  ASSERT_GT(
      B().counters().drop(DropReason::kAccessDenied) + B().counters().drop(DropReason::kBadKey), 0u)
      << "the failing WRITE has not been refused yet";

  ASSERT_EQ(A().destroy_stream(now(), a), Errc::kOk);
  ASSERT_EQ(B().destroy_stream(now(), b), Errc::kOk);
  run_for(20 * kMillisecond);
  EXPECT_EQ(stats(A(), keep.first).open_messages, 0u);
  EXPECT_EQ(stats(A(), keep.first).inbound_messages, 0u);
  EXPECT_EQ(stats(B(), keep.second).open_messages, 0u);
  EXPECT_EQ(stats(B(), keep.second).inbound_messages, 0u);
}

// Verbs' move to ERR: the stream's posted work completes with WR_FLUSH_ERR (a WRITE in
// flight, a receive), later work is flushed at once, its slots are free again, and the
// connection's other stream still moves data.
TEST_F(Teardown, FailingAStreamFlushesItsWork) {
  StreamId a = 0, b = 0;
  std::tie(a, b) = cl.connect(0, 1);
  Buffer local(A(), 1 << 20), remote(B(), 1 << 20);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, local, 0, 1 << 20, 1);
  wr.remote_addr = remote.addr();
  wr.rkey = remote.keys.rkey;
  ASSERT_EQ(A().post_send(now(), a, wr), Errc::kOk);
  ASSERT_EQ(A().post_recv(now(), a, make_recv(local, 0, 64, 2)), Errc::kOk);
  run_for(50 * kMicrosecond);  // the WRITE is on its way, not done
  ASSERT_TRUE(cl.rec(0).completions.empty());

  ASSERT_EQ(A().fail_stream(now(), a), Errc::kOk);
  EXPECT_EQ(A().stream_state(a), StreamState::kError);
  ASSERT_EQ(cl.rec(0).completions.size(), 2u);
  for (const auto& c : cl.rec(0).completions) {
    EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
    EXPECT_EQ(c.stream, a);
  }
  ASSERT_EQ(A().post_recv(now(), a, make_recv(local, 0, 64, 3)), Errc::kOk);
  ASSERT_EQ(cl.rec(0).completions.size(), 3u);
  EXPECT_EQ(cl.rec(0).completions.back().wr_id, 3u);
  EXPECT_EQ(cl.rec(0).completions.back().status, WcStatus::kWrFlushErr);
  EXPECT_EQ(A().fail_stream(now(), a), Errc::kOk);  // again: nothing more
  EXPECT_EQ(cl.rec(0).completions.size(), 3u);
  EXPECT_EQ(stats(A(), keep.first).open_messages, 0u);

  SendWr w2 = make_wr(WrOpcode::kRdmaWrite, local, 0, 4096, 4);
  w2.remote_addr = remote.addr();
  w2.rkey = remote.keys.rkey;
  w2.flags |= send_flags::kSignaled;
  ASSERT_EQ(A().post_send(now(), keep.first, w2), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, now() + kLimit, [](const Completion& c) {
    return c.wr_id == 4 && c.status == WcStatus::kSuccess;
  }));
}

// Queue pairs created and destroyed one after another on one connection, each leaving a
// WRITE acknowledged behind an unfinished READ: far more of them than the peer's
// message table holds, and the surviving stream still moves data afterwards.
TEST_F(Teardown, StreamsThatComeAndGoNeverFillThePeersTable) {
  const std::uint32_t table = A().config().max_inbound_messages;
  Buffer local(A(), 1 << 20), remote(B(), 1 << 20);
  for (std::uint32_t i = 0; i < table + 16; ++i) {
    auto [a, b] = cl.connect(0, 1);
    SendWr rd = make_wr(WrOpcode::kRdmaRead, local, 0, 512 << 10, 1);
    rd.remote_addr = remote.addr();
    rd.rkey = remote.keys.rkey;
    ASSERT_EQ(A().post_send(now(), a, rd), Errc::kOk);
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, local, 600 << 10, 64, 2);
    wr.remote_addr = remote.addr() + (600 << 10);
    wr.rkey = remote.keys.rkey;
    ASSERT_EQ(A().post_send(now(), a, wr), Errc::kOk);
    run_for(100 * kMicrosecond);
    ASSERT_EQ(A().destroy_stream(now(), a), Errc::kOk);
    ASSERT_EQ(B().destroy_stream(now(), b), Errc::kOk);
  }
  run_for(20 * kMillisecond);
  EXPECT_EQ(stats(A(), keep.first).open_messages, 0u);
  EXPECT_EQ(stats(B(), keep.second).inbound_messages, 0u);

  const std::size_t before = cl.rec(0).completions.size();
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, local, 0, 64 << 10, 99);
  wr.remote_addr = remote.addr();
  wr.rkey = remote.keys.rkey;
  ASSERT_EQ(A().post_send(now(), keep.first, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, before + 1, kLimit));
  EXPECT_EQ(cl.rec(0).completions.back().wr_id, 99u);
  EXPECT_EQ(cl.rec(0).completions.back().status, WcStatus::kSuccess);
}

}  // namespace
}  // namespace mroce::testing
