// Micro-benchmarks of the simulator's hot paths: the event queue under the classic
// "hold" model (pop one, schedule one) and a small network driven by the test transport.
#include <benchmark/benchmark.h>

#include "gbn_registration.h"
#include "sim/event_queue.h"
#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/simulation.h"

namespace mroce::sim {
namespace {

class Reschedule final : public EventHandler {
 public:
  Reschedule(EventQueue& q, std::uint64_t seed) : q_(q), rng_(seed) {}
  void on_event(SimTime now, std::uint64_t arg) override {
    q_.schedule(now + 1 + rng_.below(2 * kUs), this, arg);
  }

 private:
  EventQueue& q_;
  Rng rng_;
};

void BM_EventQueueHold(benchmark::State& state) {
  EventQueue q;
  Reschedule h(q, 1);
  Rng rng(2);
  for (std::int64_t i = 0; i < state.range(0); ++i) q.schedule(rng.below(2 * kUs), &h, 0);
  for (auto _ : state) q.run_one();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueueHold)->Arg(64)->Arg(1024)->Arg(16384)->Arg(262144);

// A 16-host leaf-spine permutation of 256 KiB per host with the go-back-N test transport.
void BM_SmallNetwork(benchmark::State& state) {
  TransportRegistry registry;
  testing::register_gbn(registry);
  const Scenario s = load_scenario("smoke", {"workload.0.bytes=\"256KiB\""});
  std::uint64_t events = 0;
  std::uint64_t packets = 0;
  for (auto _ : state) {
    Simulation sim(s, *registry.find("gbn"));
    RunResult r = sim.run();
    events += r.events;
    packets += r.data_packets_sent;
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["data_pkts/s"] =
      benchmark::Counter(static_cast<double>(packets), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SmallNetwork)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mroce::sim
