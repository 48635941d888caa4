// The application side of every host: streams, memory, flows and their completions.
// Workloads describe what to send (flows over channels) and when; Traffic turns that
// into create_stream / connect_stream / post_send / post_recv calls and turns
// completions back into flow completion times.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "sim/context.h"
#include "sim/host.h"
#include "sim/network.h"

namespace mroce::sim {

// One message: from its initiator's post to the completion that proves delivery
// (WRITE: the initiator's completion; SEND and WRITE_IMM: the target's receive
// completion; READ: the initiator's completion, data flowing target -> initiator).
struct Flow {
  std::uint32_t workload = 0;
  std::uint32_t channel = 0;
  std::uint32_t initiator = 0;
  std::uint32_t target = 0;
  std::uint64_t bytes = 0;
  WrOpcode op = WrOpcode::kRdmaWrite;
  std::uint32_t step = 0;  // collectives: the step this message belongs to
  // The message is split evenly over `parts` channels, `channel` and the ones after it
  // (one per plane); it is done when every part is.
  std::uint32_t parts = 1;
  std::uint32_t pending = 0;
  SimTime start = kSimNever;
  SimTime end = kSimNever;
  bool failed = false;

  std::uint32_t src() const { return op == WrOpcode::kRdmaRead ? target : initiator; }
  std::uint32_t dst() const { return op == WrOpcode::kRdmaRead ? initiator : target; }
  bool done() const { return end != kSimNever; }
  bool completes_on_receive() const {
    return op == WrOpcode::kSend || op == WrOpcode::kRdmaWriteWithImm;
  }
};

// A pair of connected streams, initiator side a, target side b.
struct Channel {
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  StreamId sa = kNoStream;
  StreamId sb = kNoStream;
  int plane = -1;                       // the plane both streams were asked to use
  std::uint64_t max_bytes = 0;          // largest message, sizes the receive buffers
  std::vector<std::uint32_t> arrivals;  // flows that will complete receives on b, in order
  std::size_t next_arrival = 0;
};

class Traffic;

class Workload {
 public:
  virtual ~Workload() = default;
  // Creates channels and flows, posts receives, schedules the first starts.
  virtual void setup(Traffic& traffic) = 0;
  virtual void on_flow_done(Traffic&, std::uint32_t /*flow*/, SimTime /*now*/) {}
  // Collectives: completion times of each iteration, measured from the workload start,
  // from the run's flows.
  virtual std::vector<SimTime> iteration_ends(const std::vector<Flow>& /*flows*/) const {
    return {};
  }
};

// When the network is split over partitions, hosts of different partitions call in from
// their own threads: what they share (the channels' arrival lists, the counters and the
// event log) is locked, atomic or kept per partition. A flow's own fields are written by
// its two ends only in causal order, which crosses the barrier between windows. Split
// over ranks, each process sees only its own hosts' completions (the run merges the
// flows at the end), a message's place in its channel's arrivals travels to the
// target's rank with the window's packets, and a flow must start on a host of the rank
// that starts it.
class Traffic final : public HostListener, public EventHandler {
 public:
  Traffic(Network& network, std::uint16_t port);

  // Registers one large region per host (no host memory: headers-only simulation).
  void register_memory();
  void add_workload(std::unique_ptr<Workload> w);
  void setup();

  // plane >= 0: both streams are created with that plane hint and address each other
  // on that plane; -1: the transport picks (peers are addressed on plane 0).
  std::uint32_t open_channel(std::uint32_t a, std::uint32_t b, std::uint32_t messages,
                             std::uint64_t max_bytes, int plane = -1);
  // `planes` channels between a and b, one per plane (one unbound channel if planes is 0
  // or 1); returns the first. Flows over them set parts = max(1, planes).
  std::uint32_t open_channels(std::uint32_t a, std::uint32_t b, std::uint32_t messages,
                              std::uint64_t max_bytes, std::uint32_t planes);
  std::uint32_t add_flow(const Flow& f);
  // Posts receives on the target side of `channel` for every flow that needs one.
  void post_receives(std::uint32_t channel, std::uint32_t count);
  void start_at(SimTime at, std::uint32_t flow);
  void start(std::uint32_t flow);

  const std::vector<Flow>& flows() const { return flows_; }
  const Flow& flow(std::uint32_t i) const { return flows_[i]; }
  std::uint32_t workload_count() const { return static_cast<std::uint32_t>(workloads_.size()); }
  const Workload& workload(std::uint32_t i) const { return *workloads_[i]; }
  std::uint32_t current_workload() const { return current_; }
  bool done() const { return remaining_.load(std::memory_order_relaxed) == 0; }
  // Flows that finished in this process.
  std::uint64_t finished() const {
    return flows_.size() - remaining_.load(std::memory_order_relaxed);
  }
  // Over ranks: the arrivals posted since the last call toward hosts of partition `to`,
  // appended to `w`; read_arrivals() adds them to the channels in the target's process.
  void write_arrivals(std::uint32_t to, Writer& w);
  void read_arrivals(Reader& r);
  std::uint64_t completed_bytes() const { return completed_bytes_.load(std::memory_order_relaxed); }
  std::uint64_t transport_event_count(EventKind k) const {
    return event_counts_[static_cast<int>(k)].load(std::memory_order_relaxed);
  }
  struct EventRecord {
    SimTime time;
    std::uint32_t host;
    Event event;
  };
  // In time order (partitions' records of the same time in partition order), at most
  // kEventLogLimit per partition.
  std::vector<EventRecord> event_log() const;
  const std::vector<EventRecord>& partition_event_log(std::uint32_t p) const {
    return event_logs_[p];
  }

  void on_completion(SimTime now, std::uint32_t host, const Completion& c) override;
  void on_transport_event(SimTime now, std::uint32_t host, const Event& e) override;
  void on_event(SimTime now, std::uint64_t flow) override;

  Network& network() { return network_; }

 private:
  void part_done(std::uint32_t flow, SimTime now, bool ok);
  void finish(std::uint32_t flow, SimTime now, bool ok);
  [[noreturn]] void api_error(std::uint32_t host, const char* call, Errc e) const;

  Network& network_;
  std::uint16_t port_;
  std::vector<MrKeys> keys_;
  std::vector<std::unique_ptr<Workload>> workloads_;
  std::uint32_t current_ = 0;  // the workload being set up
  std::vector<Channel> channels_;
  std::mutex arrivals_lock_;  // Channel::arrivals: posted at one end, read at the other
  std::vector<Flow> flows_;
  std::atomic<std::uint64_t> remaining_ = 0;
  std::atomic<std::uint64_t> completed_bytes_ = 0;
  std::atomic<std::uint64_t> event_counts_[8] = {};
  std::vector<std::vector<EventRecord>> event_logs_;  // per partition
  // Over ranks: (channel, flow) arrivals posted for targets in another rank, by the
  // target's partition (under arrivals_lock_).
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> remote_arrivals_;
};

}  // namespace mroce::sim
