// A deterministic in-memory network for driving transports in tests: hosts with one
// address per plane, each plane a set of parallel "spines" chosen by a hash of the
// 5-tuple (as ECMP does), then a downlink into the destination host. Every spine can
// delay, jitter (never reordering within itself), lose, duplicate, corrupt and CE-mark
// packets, be rate-limited, or black-hole everything; downlinks model the receiver's
// port: a rate, a queue and an ECN threshold. Same seed, same run.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <span>
#include <vector>

#include "core/transport.h"

namespace mroce::testing {

struct SpineParams {
  Time delay = 10 * kMicrosecond;
  Time jitter = 0;  // extra random delay, FIFO order kept
  double loss = 0;  // probability, applied to data packets only unless loss_all
  bool loss_all = false;
  double duplicate = 0;
  double corrupt = 0;  // flip one random bit and deliver anyway
  double ce = 0;       // probability of CE-marking an ECT packet
  bool blackhole = false;
  int blackhole_from = -1;     // drop only what this host sends (one direction of a link)
  std::uint64_t rate_bps = 0;  // 0: unlimited
  std::uint32_t queue_packets = 1000;
};

struct DownlinkParams {
  std::uint64_t rate_bps = 0;  // 0: unlimited
  std::uint32_t queue_packets = 1000;
  std::uint32_t ecn_threshold = 0;  // mark ECT packets when the queue is at least this; 0: off
};

struct LinkStats {
  std::uint64_t packets = 0;       // offered
  std::uint64_t data_packets = 0;  // offered DATA packets
  std::uint64_t dropped = 0;       // random loss and black hole
  std::uint64_t data_dropped = 0;
  std::uint64_t content_dropped = 0;  // DATA packets that carried something (not NOPs)
  std::uint64_t queue_drops = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t corrupted = 0;
  std::uint64_t ce_marked = 0;
  std::uint32_t max_queue = 0;
};

class Network {
 public:
  Network(int planes, int spines_per_plane, std::uint64_t seed);

  // Attaches a transport whose plane addresses are `addresses`; returns its host index.
  int add_host(Transport* transport, std::vector<Address> addresses, std::uint16_t listen_port);

  SpineParams& spine(int plane, int index) { return spines_[plane * spines_per_plane_ + index].p; }
  DownlinkParams& downlink(int host, int plane) { return hosts_[host].downlinks[plane].p; }
  // The host's NIC: packets leave it one after another at this rate (0: at once).
  std::uint64_t& uplink_rate(int host, int plane) { return hosts_[host].uplinks[plane].rate_bps; }
  const LinkStats& spine_stats(int plane, int index) const {
    return spines_[plane * spines_per_plane_ + index].stats;
  }
  const LinkStats& downlink_stats(int host, int plane) const {
    return hosts_[host].downlinks[plane].stats;
  }
  int spines_per_plane() const { return spines_per_plane_; }
  int planes() const { return planes_; }

  // Which spine of its plane a datagram with this 5-tuple takes.
  int spine_of(const Address& src, const Address& dst, std::uint16_t sport,
               std::uint16_t dport) const;

  Time now() const { return now_; }
  void at(Time t, std::function<void()> fn);
  // Runs events until done() holds (checked after each event) or time passes limit.
  bool run_until(const std::function<bool()>& done, Time limit);
  void run_for(Time duration);

  // Sees every datagram a host sends, before the network acts on it.
  using Tap = std::function<void(int host, const TxMeta&, std::span<const std::uint8_t>)>;
  void set_tap(Tap tap) { tap_ = std::move(tap); }
  // Drops every datagram a host sends for which `drop` returns true, before the network.
  using Drop = std::function<bool(int host, const TxMeta&, std::span<const std::uint8_t>)>;
  void set_drop(Drop drop) { drop_ = std::move(drop); }
  // Puts another transport at a host's addresses, as a process restarted there would.
  void replace(int host, Transport* transport);
  // Delivers arbitrary bytes to a host now, as if received on `meta`.
  void inject(int host, const RxMeta& meta, std::span<const std::uint8_t> bytes);

  std::uint64_t events() const { return events_; }
  std::uint64_t total_data_drops() const;
  std::uint64_t total_content_drops() const;

 private:
  struct Packet {
    std::vector<std::uint8_t> bytes;
    TxMeta meta;
    Ecn ecn;
  };
  struct Queue {
    Time free_at = 0;           // when the serializer is next idle
    Time last_exit = 0;         // FIFO: nothing leaves before the previous packet
    std::deque<Time> in_queue;  // departure times of queued packets
  };
  struct Spine {
    SpineParams p;
    LinkStats stats;
    std::map<std::pair<int, int>, Queue> queues;  // by (destination host, plane)
  };
  struct Downlink {
    DownlinkParams p;
    LinkStats stats;
    Queue q;
  };
  struct Uplink {
    std::uint64_t rate_bps = 0;
    Queue q;
  };
  struct Host {
    Transport* t;
    std::vector<Address> addresses;
    std::uint16_t port;
    std::vector<Downlink> downlinks;
    std::vector<Uplink> uplinks;
    Time timer_at = kNever;  // earliest armed timer event
  };
  struct Event {
    Time t;
    std::uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  void schedule(Time t, std::function<void()> fn);
  void pump(int host);  // after any call into a transport: send and re-arm its timer
  void send(int host, Packet pkt);
  void through_spine(int src_host, int dst_host, int plane, Packet pkt);
  void to_downlink(int dst_host, int plane, Packet pkt);
  void deliver(int dst_host, int plane, const Packet& pkt);
  int host_of(const Address& a, int* plane) const;
  Time serialize(Queue& q, std::uint64_t rate_bps, std::uint32_t limit, std::size_t bytes,
                 bool* dropped, std::uint32_t* depth);

  int planes_;
  int spines_per_plane_;
  std::uint64_t salt_;
  std::mt19937_64 rng_;
  std::vector<Spine> spines_;
  std::vector<Host> hosts_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_q_;
  std::uint64_t seq_ = 0;
  std::uint64_t events_ = 0;
  Time now_ = 0;
  Tap tap_;
  Drop drop_;
  std::vector<std::uint8_t> tx_buf_;
};

// Records completions and events of one transport.
class Recorder : public Sink {
 public:
  void on_completion(const Completion& c) override { completions.push_back(c); }
  void on_event(const Event& e) override { events.push_back(e); }
  std::size_t count(bool recv, WcStatus status = WcStatus::kSuccess) const;
  std::vector<Completion> completions;
  std::vector<mroce::Event> events;
};

// A buffer registered with a transport.
struct Buffer {
  Buffer(Transport& t, std::size_t size, std::uint32_t access = access::kAll);
  std::uint64_t addr() const { return reinterpret_cast<std::uint64_t>(bytes.data()); }
  std::vector<std::uint8_t> bytes;
  MrKeys keys;
};

}  // namespace mroce::testing
