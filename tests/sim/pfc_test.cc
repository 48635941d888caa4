#include <gtest/gtest.h>

#include "sim_test_util.h"

namespace mroce::sim::testing {
namespace {

// 15 senders blast one receiver: far more than one queue can hold.
std::string incast(const char* pfc) {
  return std::string(kSmallFabric) + "[pfc]\nmode = \"" + pfc +
         "\"\n[transport.gbn]\nwindow = 256\n[[workload]]\nkind = \"incast\"\nreceiver = "
         "0\nbytes = \"2MiB\"\n";
}

TEST(Pfc, PausesUpstreamAndNeverDrops) {
  RunResult r = run_toml(incast("on"));
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.pfc);
  EXPECT_EQ(r.drops.total(), 0u);
  EXPECT_EQ(r.transport_totals.tx_retransmits, 0u);
  EXPECT_GT(r.pause_frames, 0u);
  std::uint64_t paused = 0;
  for (const auto& c : r.link_classes) paused += c.pauses;
  EXPECT_GT(paused, 0u);
}

TEST(Pfc, OffMeansTailDrops) {
  RunResult r = run_toml(incast("off"));
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.pfc);
  EXPECT_GT(r.drops[DropCause::kQueueFull], 0u);
  EXPECT_EQ(r.pause_frames, 0u);
  EXPECT_GT(r.transport_totals.tx_retransmits, 0u);
}

TEST(Pfc, AutoFollowsTheTransport) {
  RunResult r = run_toml(incast("auto"));
  EXPECT_FALSE(r.pfc);  // gbn does not ask for PFC
}

}  // namespace
}  // namespace mroce::sim::testing
