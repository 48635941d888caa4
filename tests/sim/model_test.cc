// The network model against first principles. The go-back-N test transport keeps a
// fixed window and ACKs every packet, so what it measures is the network's own timing:
// serialization, propagation, store-and-forward and queueing. Each expected figure is
// computed here from the scenario's rates, delays and frame sizes, not read from a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "gbn_transport.h"
#include "sim/packet.h"
#include "sim_test_util.h"
#include "transports.h"
#include "wire/packet.h"

namespace mroce::sim::testing {
namespace {

constexpr double kRateGbps = 100;
constexpr double kDelayNs = 1000;
constexpr std::uint32_t kMss = 4096;
// Serialization of a frame of `udp_payload` bytes: buffer bytes plus preamble, SFD and gap.
double ser_ns(std::uint32_t udp_payload) {
  return double(udp_payload + kFrameOverhead + 20) * 8 / kRateGbps;
}

// Two leaves of 8 hosts under 8 spines (non-blocking), 100 Gbit/s and 1 us everywhere.
std::string fabric(const std::string& workload, const std::string& extra = "") {
  return R"(
[topology]
kind = "leaf_spine"
hosts = 16
hosts_per_leaf = 8
spines = 8
link_rate = "100Gbps"
link_delay = "1us"
)" + extra +
         workload;
}

TEST(Model, OneFlowTakesSerializationPlusPropagationAndNothingElse) {
  // Host 0 WRITEs to host 8 on the other leaf: 4 links. The first packet is stored and
  // forwarded at each hop; the rest follow it back to back at line rate (the window of
  // 64 packets exceeds the round trip's 134 KB); the last packet's ACK comes back over
  // the same 4 links.
  for (const std::uint64_t bytes :
       {std::uint64_t{64} << 10, std::uint64_t{1} << 20, std::uint64_t{8} << 20}) {
    const RunResult r = run_toml(fabric(R"(
[[workload]]
kind = "incast"
receiver = 8
senders = 1
bytes = )" + std::to_string(bytes) + "\n"));
    ASSERT_TRUE(r.complete);
    ASSERT_EQ(r.flows.size(), 1u);
    const double packets = double((bytes + kMss - 1) / kMss);
    const double data = ser_ns(kMss + GbnTransport::kHeaderBytes);
    const double ack = ser_ns(GbnTransport::kHeaderBytes);
    const double expected_ns = 4 * (data + kDelayNs) + (packets - 1) * data + 4 * (ack + kDelayNs);
    const double fct_ns = double(r.flows[0].end - r.flows[0].start) / 1e3;
    // The issue's bound is 1%; the model is exact, so 0.1% (a missing inter-frame gap
    // is 0.5%).
    EXPECT_NEAR(fct_ns, expected_ns, 0.001 * expected_ns) << bytes << " bytes";
    EXPECT_EQ(r.drops.total(), 0u);
  }
}

// Mean over flows of bytes / FCT, in Gbit/s.
double mean_flow_gbps(const RunResult& r) {
  double sum = 0;
  for (const Flow& f : r.flows) sum += double(f.bytes) * 8 / (double(f.end - f.start) / 1e3);
  return sum / double(r.flows.size());
}

TEST(Model, APermutationOnANonBlockingFabricRunsAtLineRateWhenSprayed) {
  // Every host of the 16 sends 16 MiB to another. With 8 spines under leaves of 8 hosts
  // the fabric is non-blocking, but a flow on one path (go-back-N: one source port, as a
  // RoCE QP) meets others on a spine link whenever the switches' hash puts them there.
  // MetaRoCE sprays each flow over 16 paths and must come near the payload line rate.
  const std::string toml = fabric(R"(
[[workload]]
kind = "permutation"
bytes = "16MiB"
)",
                                  "[queue]\nbytes = \"1MB\"\necn = false\n");
  const RunResult one_path = run_toml(toml);
  ASSERT_TRUE(one_path.complete);
  const Scenario s = parse_scenario(toml, "test");
  TransportRegistry engines;
  register_builtin_transports(engines);
  const TransportInfo* mroce = engines.find("mroce");
  ASSERT_NE(mroce, nullptr);
  Simulation sim(s, *mroce);
  const RunResult sprayed = sim.run();
  ASSERT_TRUE(sprayed.complete);
  const double share =
      double(kMss) / double(kMss + wire::kCommonSize + wire::kDataBaseSize + kFrameOverhead + 20);
  const double gbn = mean_flow_gbps(one_path), meta = mean_flow_gbps(sprayed);
  std::printf(
      "permutation: mean flow rate one path %.1f Gbit/s, sprayed %.1f Gbit/s "
      "(%.3f of the payload line rate)\n",
      gbn, meta, meta / (kRateGbps * share));
  // The set-up round trip, the first windows and the last flows' tails cost MetaRoCE a
  // few percent of 1.4 ms.
  EXPECT_GT(meta, 0.93 * kRateGbps * share);
  EXPECT_LE(meta, kRateGbps * share);
  EXPECT_LT(gbn, 0.9 * meta) << "one path per flow should lose to hash collisions";
}

TEST(Model, AnIncastQueueGrowsAsTheFluidModelSays) {
  // Four senders on the receiver's leaf start at once, each with a window of W packets.
  // Into the receiver's downlink arrive 4 x C, out of it leaves C: the queue grows at
  // 3 x C until the windows are all in flight; then it holds what the windows put in
  // flight less what the links of the round trip hold (the fluid model's plateau).
  constexpr std::uint32_t kSenders = 4, kWindow = 32;
  const RunResult r =
      run_toml(fabric(R"(
[[workload]]
kind = "incast"
receiver = 0
senders = 4
bytes = "4MiB"
[output]
sample_interval = "500ns"
)",
                      "[queue]\nbytes = \"8MB\"\necn = false\n[transport.gbn]\nwindow = " +
                          std::to_string(kWindow) + "\n"));
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.drops.total(), 0u);
  std::uint32_t downlink = 0;
  for (std::uint32_t i = 0; i < r.link_class_names.size(); ++i) {
    if (r.link_class_names[i] == "leaf>host") downlink = i;
  }
  ASSERT_EQ(r.link_class_names[downlink], "leaf>host");
  const double frame_buffer = double(kMss + GbnTransport::kHeaderBytes + kFrameOverhead);
  const double data = ser_ns(kMss + GbnTransport::kHeaderBytes);
  // Growth: the first packets reach the leaf after one hop (data + delay); from then on
  // the queue grows by 3 frames per frame time.
  const double first_ns = data + kDelayNs;
  // Plateau: the windows in flight less what the round trip outside the queue holds at
  // the downlink's rate: from the end of a frame's service to its successor's arrival,
  // four propagations, the ACK's serialization on two links and the successor's on the
  // sender's link (the frame in service counts as queued).
  const double rtt_ns = 4 * kDelayNs + 2 * ser_ns(GbnTransport::kHeaderBytes) + data;
  const double plateau = kSenders * kWindow * frame_buffer - rtt_ns / data * frame_buffer;
  double peak = 0;
  for (const QueueSample& q : r.queue_samples) {
    if (q.link_class != downlink) continue;
    const double t_ns = double(q.time) / 1e3;
    const double model =
        std::min((t_ns - first_ns) / data * (kSenders - 1) * frame_buffer, plateau);
    peak = std::max(peak, double(q.max_bytes));
    // The sample holds the largest occupancy of the 500 ns up to its time: within
    // two frames (the sample's granularity and the frame in service) of the model while
    // the queue grows, and at the plateau afterwards until the flows start to end.
    if (t_ns > first_ns + 2 * data && t_ns < 200'000 && model > 0) {
      EXPECT_NEAR(double(q.max_bytes), model, 4 * frame_buffer + 0.03 * model)
          << "at " << t_ns << " ns";
    }
  }
  // Within one frame: the largest occupancy includes an arrival just before a departure.
  EXPECT_NEAR(peak, plateau, 1.2 * frame_buffer);
}

}  // namespace
}  // namespace mroce::sim::testing
