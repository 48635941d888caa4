// Congestion told apart from failure: a black-holed route is abandoned (the path gets a
// new source port and a fresh sequence space, its packets move to healthy paths) and the
// transfer completes; a whole plane's failure is handled the same way and its recovery
// brings traffic back.
#include <numeric>
#include <set>

#include "engine/workload.h"

namespace mroce::testing {
namespace {

std::uint64_t path_failures(Engine& e, ConnId c) {
  ConnStats st;
  e.connection_stats(c, &st);
  return st.path_failures;
}

class Blackhole : public ::testing::TestWithParam<int> {};

TEST_P(Blackhole, SpineBlackholedMidTransferIsSurvived) {
  const int seed = GetParam();
  Cluster cl(2, 1, 4, std::uint64_t(seed));
  Workload w(cl, 4, 200, 60000, std::uint64_t(seed), /*with_reads=*/true);
  w.post_all();
  const int dead = seed % 4;
  cl.net.at(cl.net.now() + 2 * kMillisecond, [&] { cl.net.spine(0, dead).blackhole = true; });
  ASSERT_TRUE(w.run(30 * kSecond));
  w.verify();
  cl.net.run_for(50 * kMillisecond);  // let the probes settle

  // Every path whose data or ACKs crossed the dead spine was retired; the paths in use
  // now avoid it both ways.
  const ConnId conn = cl.engine(0).stream_connection(1);
  ASSERT_NE(conn, 0u);
  EXPECT_GT(path_failures(cl.engine(0), conn), 0u);
  ConnStats st;
  cl.engine(0).connection_stats(conn, &st);
  int active = 0;
  for (std::uint16_t i = 0; i < st.paths; ++i) {
    PathStats ps;
    ASSERT_TRUE(cl.engine(0).path_stats(conn, i, &ps));
    if (ps.state != PathState::kActive) continue;
    ++active;
    const Address a = host_address(0, 0), b = host_address(1, 0);
    EXPECT_NE(cl.net.spine_of(a, b, ps.src_port, kDefaultPort), dead)
        << "active path " << i << " still sends through the black hole";
    EXPECT_NE(cl.net.spine_of(b, a, kDefaultPort, ps.src_port), dead)
        << "active path " << i << " still gets its ACKs through the black hole";
  }
  EXPECT_GE(active, 12);  // failed paths found new routes
  bool failed_event = false;
  for (const auto& e : cl.rec(0).events) failed_event |= e.kind == EventKind::kPathFailed;
  EXPECT_TRUE(failed_event);
}

INSTANTIATE_TEST_SUITE_P(Seeds, Blackhole, ::testing::Range(1, 9));

TEST(Failure, AckRouteBlackholedIsTreatedAsFailure) {
  // Only the reverse direction of one spine dies: data arrives, its ACKs do not.
  Cluster cl(2, 1, 4, 5);
  Workload w(cl, 2, 300, 50000, 5, false);
  w.post_all();
  cl.net.run_for(1 * kMillisecond);
  cl.net.spine(0, 2).blackhole_from = 1;
  ASSERT_TRUE(w.run(30 * kSecond));
  w.verify();
  cl.net.run_for(50 * kMillisecond);
  const ConnId conn = cl.engine(0).stream_connection(1);
  EXPECT_GT(path_failures(cl.engine(0), conn), 0u);
  ConnStats st;
  cl.engine(0).connection_stats(conn, &st);
  for (std::uint16_t i = 0; i < st.paths; ++i) {
    PathStats ps;
    cl.engine(0).path_stats(conn, i, &ps);
    if (ps.state == PathState::kActive) {
      EXPECT_NE(cl.net.spine_of(host_address(1, 0), host_address(0, 0), kDefaultPort, ps.src_port),
                2);
    }
  }
}

TEST(Failure, PlaneFailureMovesTrafficAndRecoveryBringsItBack) {
  Cluster cl(2, 2, 4, 3, [](int, EngineConfig& c) { c.max_probe_interval = 4 * kMillisecond; });
  Workload w(cl, 4, 400, 60000, 3, false);
  w.post_all();
  cl.net.run_for(1 * kMillisecond);
  for (int s = 0; s < 4; ++s) cl.net.spine(1, s).blackhole = true;
  cl.net.run_for(20 * kMillisecond);
  const ConnId conn = cl.engine(0).stream_connection(1);
  bool down = false;
  for (const auto& e : cl.rec(0).events) down |= e.kind == EventKind::kPlaneDown && e.plane == 1;
  EXPECT_TRUE(down) << "plane 1 was not declared down";
  ConnStats st;
  ASSERT_TRUE(cl.engine(0).connection_stats(conn, &st));
  EXPECT_EQ(st.plane_failures, 1u);
  for (std::uint16_t i = 0; i < st.paths; ++i) {
    PathStats ps;
    cl.engine(0).path_stats(conn, i, &ps);
    EXPECT_EQ(ps.state, ps.plane == 1 ? PathState::kFailed : PathState::kActive);
  }
  ASSERT_TRUE(w.run(30 * kSecond));
  w.verify();
  // Heal: the probes find the plane again and it carries traffic.
  for (int s = 0; s < 4; ++s) cl.net.spine(1, s).blackhole = false;
  cl.net.run_for(10 * kMillisecond);
  std::uint64_t before = 0;
  for (int s = 0; s < 4; ++s) before += cl.net.spine_stats(1, s).data_packets;
  cl.rec(0).completions.clear();
  cl.rec(1).completions.clear();
  Workload again(cl, 2, 200, 60000, 4, false);
  again.post_all();
  ASSERT_TRUE(again.run(30 * kSecond));
  again.verify();
  bool up = false;
  for (const auto& e : cl.rec(0).events) up |= e.kind == EventKind::kPlaneUp && e.plane == 1;
  EXPECT_TRUE(up);
  std::uint64_t after = 0;
  for (int s = 0; s < 4; ++s) after += cl.net.spine_stats(1, s).data_packets;
  EXPECT_GT(after, before + 100) << "healed plane carries no traffic";
}

TEST(Failure, ConnectionFailsWhenEveryPathStaysDead) {
  Cluster cl(2, 1, 2, 9, [](int, EngineConfig& c) {
    c.connect_timeout = 50 * kMillisecond;
    c.max_probe_interval = 5 * kMillisecond;
  });
  auto [a, b] = cl.connect(0, 1);
  (void)b;
  Buffer src(cl.engine(0), 1 << 20), dst(cl.engine(1), 1 << 20);
  cl.net.run_for(1 * kMillisecond);  // let set-up finish
  cl.net.spine(0, 0).blackhole = cl.net.spine(0, 1).blackhole = true;
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 1 << 20, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 2 * kSecond));
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kRetryExcErr);
  bool failed = false;
  for (const auto& e : cl.rec(0).events) failed |= e.kind == EventKind::kConnFailed;
  EXPECT_TRUE(failed);
}

TEST(Failure, SetUpSurvivesABlackholedRoute) {
  // Set-up retries leave from new source ports, so they find a live route.
  Cluster cl(2, 1, 4, 12);
  cl.net.spine(0, 0).blackhole = true;
  cl.net.spine(0, 1).blackhole = true;
  Workload w(cl, 1, 20, 10000, 12, false);
  w.post_all();
  ASSERT_TRUE(w.run(10 * kSecond));
  w.verify();
}

TEST(Failure, AGreySpineAmongCleanOnesIsLeftWithoutFailing) {
  // One spine loses 70% of what crosses it, the others nothing: its paths lose far more
  // than the rest while their ACKs still come, a bad route rather than a dead one. They
  // take new ports and keep working; none is failed.
  Cluster cl(2, 1, 4, 6);
  cl.net.spine(0, 1).loss = 0.7;
  cl.net.spine(0, 1).loss_all = true;
  Workload w(cl, 4, 300, 60000, 6, false);
  w.post_all();
  ASSERT_TRUE(w.run(30 * kSecond));
  w.verify();
  const ConnId conn = cl.engine(0).stream_connection(1);
  ConnStats st;
  ASSERT_TRUE(cl.engine(0).connection_stats(conn, &st));
  EXPECT_GT(st.reentropies, 0u);
  EXPECT_EQ(st.path_failures, 0u);
}

TEST(Failure, AfterAHealPathsSpreadOverEverySpineAgain) {
  // A spine dies mid-transfer: its paths fail and find ports on the other three. Once it
  // heals they go back, so the connection again uses every spine as it did at set-up.
  Cluster cl(2, 1, 4, 21);
  Workload w(cl, 4, 300, 60000, 21, false);
  w.post_all();
  cl.net.run_for(1 * kMillisecond);
  const ConnId conn = cl.engine(0).stream_connection(1);
  ConnStats st;
  ASSERT_TRUE(cl.engine(0).connection_stats(conn, &st));
  const Address a = host_address(0, 0), b = host_address(1, 0);
  const auto per_spine = [&] {
    std::vector<int> n(4);
    for (std::uint16_t i = 0; i < st.paths; ++i) {
      PathStats ps;
      cl.engine(0).path_stats(conn, i, &ps);
      if (ps.state == PathState::kActive) ++n[cl.net.spine_of(a, b, ps.src_port, kDefaultPort)];
    }
    return n;
  };
  const std::vector<int> at_setup = per_spine();
  int dead = 0;
  for (int s = 1; s < 4; ++s) dead = at_setup[s] > at_setup[dead] ? s : dead;
  cl.net.spine(0, dead).blackhole = true;
  cl.net.run_for(100 * kMillisecond);
  EXPECT_GT(path_failures(cl.engine(0), conn), 0u);
  EXPECT_EQ(per_spine()[dead], 0);
  cl.net.spine(0, dead).blackhole = false;
  ASSERT_TRUE(w.run(30 * kSecond));
  w.verify();
  cl.net.run_for(2 * kSecond);
  EXPECT_EQ(per_spine(), at_setup);
}

TEST(Failure, AfterALongOutageTheHealIsFoundWithinTwoSeconds) {
  // A spine is dead for 8 s under a steady stream of 64 KiB WRITEs (four in flight,
  // topped up every millisecond): its paths fail together and one of them keeps trying
  // home. Within 2 s of the heal every path is back where it was at set-up (waits that
  // each path doubled on its own were 8 s or more by then).
  Cluster cl(2, 1, 4, 23);
  StreamConfig cfg;
  cfg.sq_depth = 16;
  const StreamId sa = cl.connect(0, 1, cfg).first;
  constexpr std::uint32_t kLen = 64 << 10;
  Buffer src(cl.engine(0), kLen), dst(cl.engine(1), kLen);
  fill_pattern(src.bytes, 23);
  std::uint64_t posted = 0;
  // Runs the network for `d`, topping the WRITEs up every millisecond.
  const auto drive = [&](Time d) {
    for (Time t = 0; t < d; t += kMillisecond) {
      while (posted < cl.rec(0).completions.size() + 4) {
        SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, kLen, posted);
        wr.remote_addr = dst.addr();
        wr.rkey = dst.keys.rkey;
        ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), sa, wr), Errc::kOk);
        ++posted;
      }
      cl.net.run_for(kMillisecond);
    }
  };
  drive(50 * kMillisecond);
  const ConnId conn = cl.engine(0).stream_connection(sa);
  ConnStats st;
  ASSERT_TRUE(cl.engine(0).connection_stats(conn, &st));
  const Address a = host_address(0, 0), b = host_address(1, 0);
  const auto per_spine = [&] {
    std::vector<int> n(4);
    for (std::uint16_t i = 0; i < st.paths; ++i) {
      PathStats ps;
      cl.engine(0).path_stats(conn, i, &ps);
      if (ps.state == PathState::kActive) ++n[cl.net.spine_of(a, b, ps.src_port, kDefaultPort)];
    }
    return n;
  };
  const std::vector<int> at_setup = per_spine();
  ASSERT_EQ(std::accumulate(at_setup.begin(), at_setup.end(), 0), int(st.paths));
  int dead = 0;
  for (int s = 1; s < 4; ++s) dead = at_setup[s] > at_setup[dead] ? s : dead;
  cl.net.spine(0, dead).blackhole = true;
  drive(8 * kSecond);
  EXPECT_GE(path_failures(cl.engine(0), conn), std::uint64_t(at_setup[dead]));
  EXPECT_EQ(per_spine()[dead], 0);
  cl.net.spine(0, dead).blackhole = false;
  const std::size_t at_heal = cl.rec(0).completions.size();
  drive(2 * kSecond);
  EXPECT_EQ(per_spine(), at_setup);
  EXPECT_GT(cl.rec(0).completions.size(), at_heal + 1000);
  ASSERT_TRUE(cl.run_until_completions(0, posted, 10 * kSecond));
  for (const Completion& c : cl.rec(0).completions) ASSERT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
}

}  // namespace
}  // namespace mroce::testing
