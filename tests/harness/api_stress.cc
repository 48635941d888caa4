#include "harness/api_stress.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/engine.h"

namespace mroce::testing {

std::uint32_t ByteChoices::pick(std::uint32_t n) {
  if (n <= 1) return 0;
  std::uint32_t v = 0;
  for (std::uint32_t range = 1; range < n && pos_ < bytes_.size(); range <<= 8)
    v = v << 8 | bytes_[pos_++];
  return v % n;
}

std::uint32_t SeededChoices::pick(std::uint32_t n) {
  return n <= 1 ? 0 : static_cast<std::uint32_t>(rng_() % n);
}

namespace {

constexpr int kHosts = 3;
constexpr int kMaxPairs = 6;
constexpr std::uint32_t kChunk = 8192;  // every buffer a work request names is one chunk
constexpr int kChunks = 64;             // per host; chunk 0 holds the atomic words
constexpr int kSpareChunks = 8;         // kept for the receives the drain posts
constexpr std::size_t kMaxInFlight = 256;
constexpr std::uint32_t kSizes[] = {0, 1, 7, 8, 64, 1000, 4096, 4097, 8192};
constexpr Time kSteps[] = {1 * kMicrosecond, 10 * kMicrosecond, 100 * kMicrosecond,
                           1 * kMillisecond, 5 * kMillisecond,  50 * kMillisecond};

std::uint8_t pattern(std::uint64_t id, std::uint32_t i) {
  return static_cast<std::uint8_t>(id * 131 + i * 7 + (i >> 8));
}

bool is_atomic(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpSwp || op == WrOpcode::kAtomicFetchAdd;
}

bool consumes_receive(WrOpcode op) {
  return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm || op == WrOpcode::kRdmaWriteWithImm;
}

struct Wr {
  int host = 0;
  int pair = 0;
  int side = 0;
  StreamId stream = 0;
  bool recv = false;
  WrOpcode op = WrOpcode::kSend;
  std::uint32_t length = 0;
  bool bad_key = false;
  int local_chunk = -1;
  int remote_chunk = -1;  // on the peer's host
  std::uint64_t compare = 0, swap = 0;
  bool done = false;
  bool abandoned = false;
  bool success = false;
  bool matched = false;  // SEND/WRITE_IMM: a receive completed with it
};

struct Pair {
  int host[2];
  StreamId stream[2];
  bool live[2] = {true, true};
  std::uint64_t last_matched[2] = {0, 0};  // receiving side: last peer id it consumed
};

class Stress;

class HostSink final : public Sink {
 public:
  HostSink(Stress* s, int h) : stress_(s), host_(h) {}
  void on_completion(const Completion& c) override;

 private:
  Stress* stress_;
  int host_;
};

struct Host {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<HostSink> sink;
  std::vector<std::uint8_t> mem;
  MrKeys keys;
  std::vector<int> free_chunks;
  std::vector<int> spare_chunks;
  std::uint64_t faa_posted = 0;
  std::set<std::uint64_t> faa_olds;
  std::set<std::uint64_t> cas_values = {0};  // every value the CAS word may hold
  std::set<std::uint64_t> cas_winning_compares;
  std::uint64_t base() const { return reinterpret_cast<std::uint64_t>(mem.data()); }
  std::uint64_t chunk_addr(int c) const { return base() + std::uint64_t(c) * kChunk; }
  std::uint8_t* chunk(int c) { return mem.data() + std::size_t(c) * kChunk; }
  std::uint64_t word(int i) const {
    std::uint64_t v;
    std::memcpy(&v, mem.data() + 8 * i, 8);
    return v;
  }
};

struct Flight {
  int to = 0;
  RxMeta meta;
  std::vector<std::uint8_t> bytes;
};

class Stress {
 public:
  explicit Stress(Choices& ch) : ch_(ch), trace_(std::getenv("MROCE_STRESS_TRACE") != nullptr) {
    for (int h = 0; h < kHosts; ++h) {
      EngineConfig c;
      c.planes = {address(h)};
      c.paths = 4;
      c.src_port_count = 16;
      c.seed = 77 + std::uint64_t(h);
      c.initial_rtt = 50 * kMicrosecond;
      c.connect_timeout = 2 * kSecond;
      Host& host = hosts_[h];
      host.engine = std::make_unique<Engine>(c);
      host.sink = std::make_unique<HostSink>(this, h);
      host.engine->set_sink(host.sink.get());
      host.mem.assign(std::size_t(kChunks) * kChunk, 0);
      host.engine->reg_mr(host.base(), host.mem.size(), access::kAll, host.mem.data(), &host.keys);
      for (int i = kChunks - 1; i > kSpareChunks; --i) host.free_chunks.push_back(i);
      for (int i = kSpareChunks; i >= 1; --i) host.spare_chunks.push_back(i);
    }
    buf_.resize(hosts_[0].engine->max_packet_size());
  }

  StressReport run() {
    while (ok() && ch_.next_step()) {
      step();
      ++report_.steps;
      pump();
      check_stats(false);
      reclaim();
    }
    if (ok()) drain();
    if (ok()) check_end();
    return report_;
  }

  void on_completion(int h, const Completion& c);

 private:
  static Address address(int h) { return Address::ipv4(0x0a000001u + std::uint32_t(h)); }
  bool ok() const { return report_.error.empty(); }
  void fail(const std::string& what) {
    if (ok()) report_.error = "step " + std::to_string(report_.steps) + ": " + what;
  }

  void step() {
    switch (ch_.pick(16)) {
      case 0:
        create_pair();
        break;
      case 1:
        destroy_side();
        break;
      case 2:
      case 3:
      case 4:
      case 5:
      case 6:
        post_send();
        break;
      case 7:
      case 8:
        post_recv();
        break;
      case 9:
      case 10:
      case 11:
      case 12:
        deliver(1 + ch_.pick(16));
        break;
      default:
        if (ch_.pick(8) == 0) {
          // The driver's queue for the host's one plane fills or drains: new data waits.
          const int h = int(ch_.pick(kHosts));
          const auto mask = static_cast<std::uint8_t>(ch_.pick(2));
          trace("host %d planes blocked %u", h, unsigned(mask));
          hosts_[h].engine->set_blocked_planes(mask);
        } else {
          advance(kSteps[ch_.pick(std::size(kSteps))]);
        }
        break;
    }
  }

  void create_pair() {
    if (pairs_.size() >= kMaxPairs * 40) return;  // bounds the run
    int live = 0;
    for (const Pair& p : pairs_) live += p.live[0] || p.live[1];
    if (live >= kMaxPairs) return;
    const int a = int(ch_.pick(kHosts));
    const int b = (a + 1 + int(ch_.pick(kHosts - 1))) % kHosts;
    StreamConfig cfg;
    cfg.sq_depth = 4 + ch_.pick(13);
    cfg.rq_depth = 16;
    Pair p{{a, b}, {0, 0}};
    if (hosts_[a].engine->create_stream(cfg, &p.stream[0]) != Errc::kOk ||
        hosts_[b].engine->create_stream(cfg, &p.stream[1]) != Errc::kOk)
      return fail("create_stream refused");
    const Endpoint ea{address(a), kDefaultPort}, eb{address(b), kDefaultPort};
    if (hosts_[a].engine->connect_stream(now_, p.stream[0], eb, p.stream[1]) != Errc::kOk ||
        hosts_[b].engine->connect_stream(now_, p.stream[1], ea, p.stream[0]) != Errc::kOk)
      return fail("connect_stream refused");
    pairs_.push_back(p);
    trace("pair %zu: host %d stream %u <-> host %d stream %u", pairs_.size() - 1, a, p.stream[0], b,
          p.stream[1]);
  }

  // A live (pair, side), or false when there is none.
  bool pick_side(int* pair, int* side) {
    std::vector<std::pair<int, int>> sides;
    for (int i = 0; i < int(pairs_.size()); ++i)
      for (int s = 0; s < 2; ++s)
        if (pairs_[i].live[s]) sides.push_back({i, s});
    if (sides.empty()) return false;
    std::tie(*pair, *side) = sides[ch_.pick(std::uint32_t(sides.size()))];
    return true;
  }

  void destroy_side() {
    int pi, side;
    if (!pick_side(&pi, &side)) return;
    Pair& p = pairs_[pi];
    if (hosts_[p.host[side]].engine->destroy_stream(now_, p.stream[side]) != Errc::kOk)
      return fail("destroy_stream refused");
    p.live[side] = false;
    trace("destroy pair %d side %d (host %d stream %u)", pi, side, p.host[side], p.stream[side]);
    ++report_.streams_destroyed;
    // Open work is abandoned without completions; its buffers may still be written by
    // packets in flight, so they are never reused.
    for (auto& [id, w] : wrs_)
      if (w.pair == pi && w.side == side && !w.done) {
        w.abandoned = true;
        ++report_.abandoned;
      }
  }

  // Buffers of failed or abandoned work are reused only once their pair is gone (packets
  // in flight may still land there), so the random phase can run short; the drain then
  // uses the spares.
  int take_chunk(int h) {
    auto& f =
        hosts_[h].free_chunks.empty() && draining_ ? hosts_[h].spare_chunks : hosts_[h].free_chunks;
    if (f.empty()) return -1;
    const int c = f.back();
    f.pop_back();
    return c;
  }
  void give_chunk(int h, int* c) {
    if (*c >= 0) hosts_[h].free_chunks.push_back(*c);
    *c = -1;
  }

  // Once both streams of a pair are gone and nothing is in flight, nothing can write
  // into its work's buffers any more: they are reused.
  void reclaim() {
    if (!flights_.empty()) return;
    for (auto& [id, w] : wrs_) {
      const Pair& p = pairs_[w.pair];
      if (p.live[0] || p.live[1]) continue;
      give_chunk(w.host, &w.local_chunk);
      give_chunk(p.host[1 - w.side], &w.remote_chunk);
    }
  }

  // Fills the SGE list for `length` bytes of chunk c, in one or two pieces.
  int sges(int h, int c, std::uint32_t length, Sge* sg) {
    const std::uint64_t addr = hosts_[h].chunk_addr(c);
    const std::uint32_t lkey = hosts_[h].keys.lkey;
    if (length == 0 && ch_.pick(2)) return 0;
    if (length < 2 || ch_.pick(2)) {
      sg[0] = Sge{addr, length, lkey};
      return 1;
    }
    const std::uint32_t first = 1 + ch_.pick(length - 1);
    sg[0] = Sge{addr, first, lkey};
    sg[1] = Sge{addr + first, length - first, lkey};
    return 2;
  }

  void post_send() {
    int pi, side;
    if (!pick_side(&pi, &side)) return;
    Pair& p = pairs_[pi];
    const int h = p.host[side], peer = p.host[1 - side];
    Wr w;
    w.host = h;
    w.pair = pi;
    w.side = side;
    w.stream = p.stream[side];
    w.op = static_cast<WrOpcode>(ch_.pick(7));
    w.length = is_atomic(w.op) ? 8 : kSizes[ch_.pick(std::size(kSizes))];
    w.bad_key = ch_.pick(24) == 0;
    const bool needs_remote = !consumes_receive(w.op) || w.op == WrOpcode::kRdmaWriteWithImm;
    w.local_chunk = take_chunk(h);
    if (w.local_chunk < 0) return;
    if (needs_remote && !is_atomic(w.op)) {
      w.remote_chunk = take_chunk(peer);
      if (w.remote_chunk < 0) return give_chunk(h, &w.local_chunk);
    }
    const std::uint64_t id = next_id_++;
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = w.op;
    wr.imm = static_cast<std::uint32_t>(id);
    std::uint8_t* local = hosts_[h].chunk(w.local_chunk);
    if (w.op == WrOpcode::kRdmaRead) {
      std::memset(local, 0xee, w.length);
      std::uint8_t* src = hosts_[peer].chunk(w.remote_chunk);
      for (std::uint32_t i = 0; i < w.length; ++i) src[i] = pattern(id, i);
    } else if (!is_atomic(w.op)) {
      for (std::uint32_t i = 0; i < w.length; ++i) local[i] = pattern(id, i);
      if (w.length >= 8) std::memcpy(local, &id, 8);
    }
    if (is_atomic(w.op)) {
      wr.num_sge = 1;
      wr.sg[0] = Sge{hosts_[h].chunk_addr(w.local_chunk), 8, hosts_[h].keys.lkey};
      wr.remote_addr = hosts_[peer].base() + (w.op == WrOpcode::kAtomicFetchAdd ? 0 : 8);
      if (w.op == WrOpcode::kAtomicFetchAdd) {
        wr.compare_add = 1;
      } else {
        const auto& values = hosts_[peer].cas_values;
        w.compare = ch_.pick(2)
                        ? hosts_[peer].word(1)
                        : *std::next(values.begin(), ch_.pick(std::uint32_t(values.size())));
        w.swap = id;
        wr.compare_add = w.compare;
        wr.swap = w.swap;
      }
    } else {
      wr.num_sge = static_cast<std::uint8_t>(sges(h, w.local_chunk, w.length, wr.sg));
      if (w.remote_chunk >= 0) wr.remote_addr = hosts_[peer].chunk_addr(w.remote_chunk);
    }
    wr.rkey = hosts_[peer].keys.rkey + (w.bad_key ? 0x100 : 0);
    if (consumes_receive(w.op) && w.op != WrOpcode::kRdmaWriteWithImm) w.bad_key = false;
    if (w.length == 0) w.bad_key = false;  // a zero-length RDMA checks no key (SPEC 7.3)
    wrs_[id] = w;
    const Errc e = hosts_[h].engine->post_send(now_, w.stream, wr);
    if (e != Errc::kOk) {
      if (e != Errc::kNoResources) fail(std::string("post_send: ") + to_string(e));
      wrs_.erase(id);
      give_chunk(h, &w.local_chunk);
      give_chunk(peer, &w.remote_chunk);
      return;
    }
    ++report_.posted;
    trace("post_send %llu pair %d side %d op %d len %u%s", static_cast<unsigned long long>(id), pi,
          side, int(w.op), w.length, w.bad_key ? " bad key" : "");
    if (w.op == WrOpcode::kAtomicFetchAdd) ++hosts_[peer].faa_posted;
    if (w.op == WrOpcode::kAtomicCmpSwp) hosts_[peer].cas_values.insert(w.swap);
  }

  void post_recv() {
    int pi, side;
    if (!pick_side(&pi, &side)) return;
    Pair& p = pairs_[pi];
    post_recv_on(pi, side, p.host[side]);
  }

  bool post_recv_on(int pi, int side, int h) {
    Wr w;
    w.host = h;
    w.pair = pi;
    w.side = side;
    w.stream = pairs_[pi].stream[side];
    w.recv = true;
    w.local_chunk = take_chunk(h);
    if (w.local_chunk < 0) return false;
    std::memset(hosts_[h].chunk(w.local_chunk), 0xdd, kChunk);
    const std::uint64_t id = next_id_++;
    RecvWr r;
    r.wr_id = id;
    r.num_sge = static_cast<std::uint8_t>(sges(h, w.local_chunk, kChunk, r.sg));
    wrs_[id] = w;
    const Errc e = hosts_[h].engine->post_recv(now_, w.stream, r);
    if (e != Errc::kOk) {
      if (e != Errc::kNoResources) fail(std::string("post_recv: ") + to_string(e));
      wrs_.erase(id);
      give_chunk(h, &w.local_chunk);
      return false;
    }
    ++report_.posted;
    trace("post_recv %llu pair %d side %d", static_cast<unsigned long long>(id), pi, side);
    return true;
  }

  // Delivers up to n packets, each picked anywhere in flight (reordering), and may drop,
  // duplicate or CE-mark it.
  void deliver(std::uint32_t n) {
    for (std::uint32_t k = 0; k < n && !flights_.empty() && ok(); ++k) {
      const std::size_t i = ch_.pick(std::uint32_t(flights_.size()));
      const std::uint32_t fate = ch_.pick(16);
      if (fate == 0) {
        flights_.erase(flights_.begin() + std::ptrdiff_t(i));
        ++report_.dropped;
        continue;
      }
      Flight f;
      if (fate == 1) {
        f = flights_[i];  // delivered now and again later
        ++report_.duplicated;
      } else {
        f = std::move(flights_[i]);
        flights_.erase(flights_.begin() + std::ptrdiff_t(i));
      }
      if (fate == 2 && f.meta.ecn != Ecn::kNotEct) f.meta.ecn = Ecn::kCe;
      hosts_[f.to].engine->on_packet(now_, f.meta, f.bytes);
      ++report_.delivered;
      pump();
    }
  }

  void advance(Time dt) {
    now_ += dt;
    trace("advance %llu ns", static_cast<unsigned long long>(dt));
    pump();
  }

  // Runs due timers and collects what every engine sends.
  void pump() {
    for (int h = 0; h < kHosts; ++h) {
      Engine& e = *hosts_[h].engine;
      if (now_ >= e.next_deadline()) e.on_timer(now_);
      TxMeta m;
      for (int n = 0; n < 4096 && e.poll_transmit(now_, buf_, &m); ++n) {
        const int to = int(m.dst.ipv4_value() - 0x0a000001u);
        if (to < 0 || to >= kHosts) {
          fail("packet to an unknown address");
          continue;
        }
        Flight f{to, {}, {buf_.begin(), buf_.begin() + m.length}};
        f.meta.src = m.src;
        f.meta.dst = m.dst;
        f.meta.src_port = m.src_port;
        f.meta.dst_port = m.dst_port;
        f.meta.ecn = m.ecn;
        flights_.push_back(std::move(f));
        if (flights_.size() > kMaxInFlight) {  // a full queue drops its oldest
          flights_.pop_front();
          ++report_.dropped;
        }
      }
    }
  }

  // Open work requests per connection, as counted from outside.
  std::unordered_map<std::uint64_t, std::uint32_t> open_by_connection() const {
    std::unordered_map<std::uint64_t, std::uint32_t> open;
    for (const auto& [id, w] : wrs_)
      if (!w.recv && !w.done && !w.abandoned) {
        const ConnId c = hosts_[w.host].engine->stream_connection(w.stream);
        if (c) ++open[std::uint64_t(w.host) << 32 | c];
      }
    return open;
  }

  // Every connection's messages in progress are work requests still open on its live
  // streams; at rest, none.
  void check_stats(bool idle) {
    const auto open = open_by_connection();
    for (int h = 0; h < kHosts && ok(); ++h) {
      const Engine& e = *hosts_[h].engine;
      e.for_each_connection([&](ConnId c) {
        ConnStats s;
        if (!e.connection_stats(c, &s)) return fail("connection_stats of a listed connection");
        const auto it = open.find(std::uint64_t(h) << 32 | c);
        const std::uint32_t mine = it == open.end() ? 0 : it->second;
        if (s.open_messages > mine)
          fail("host " + std::to_string(h) + " connection " + std::to_string(c) + " counts " +
               std::to_string(s.open_messages) + " open messages, " + std::to_string(mine) +
               " work requests open");
        if (idle && s.inflight_bytes != 0)
          fail("host " + std::to_string(h) + " idle with " + std::to_string(s.inflight_bytes) +
               " bytes in flight (connection " + to_string(s.state) + ", " +
               std::to_string(s.streams) + " streams)");
      });
    }
  }

  bool all_done() const {
    for (const auto& [id, w] : wrs_)
      if (!w.done && !w.abandoned && !w.recv) return false;
    return true;
  }

  // Whether a connection is still setting up or closing.
  bool transient() const {
    bool any = false;
    for (const Host& h : hosts_)
      h.engine->for_each_connection([&](ConnId c) {
        ConnStats s;
        h.engine->connection_stats(c, &s);
        any |= s.state != ConnState::kEstablished && s.state != ConnState::kFailed &&
               s.state != ConnState::kClosed;
      });
    return any;
  }

  // Lossless, in-order delivery and timers until every send work request completes.
  void drain() {
    draining_ = true;
    for (Host& h : hosts_) h.engine->set_blocked_planes(0);
    const Time limit = now_ + 60 * kSecond;
    int settle = 0;
    for (int round = 0; ok() && now_ < limit && round < 100000; ++round) {
      while (!flights_.empty() && ok()) {
        Flight f = std::move(flights_.front());
        flights_.pop_front();
        hosts_[f.to].engine->on_packet(now_, f.meta, f.bytes);
        pump();
      }
      // Done once closings have ended and acknowledgements had time to flow.
      if (all_done() && !transient() && ++settle > 50) break;
      if (!all_done()) feed_receives();
      Time next = kNever;
      for (const Host& h : hosts_) next = std::min(next, h.engine->next_deadline());
      now_ = std::max(now_ + kMicrosecond, std::min(next, now_ + 10 * kMillisecond));
      pump();
    }
    if (ok() && !all_done()) {
      for (const auto& [id, w] : wrs_)
        if (!w.done && !w.abandoned && !w.recv) {
          const Engine& e = *hosts_[w.host].engine;
          ConnStats cs;
          e.connection_stats(e.stream_connection(w.stream), &cs);
          return fail("not quiescent after 60 s: work request " + std::to_string(id) + " (opcode " +
                      std::to_string(int(w.op)) + ", pair " + std::to_string(w.pair) + " side " +
                      std::to_string(w.side) + ") never completed; stream " +
                      to_string(e.stream_state(w.stream)) + ", connection " + to_string(cs.state) +
                      " with " + std::to_string(cs.open_messages) + " open messages, " +
                      std::to_string(cs.inflight_bytes) + " bytes in flight, peer side " +
                      (pairs_[w.pair].live[1 - w.side] ? "live" : "destroyed"));
        }
    }
  }

  // Posts receives where SENDs wait for them.
  void feed_receives() {
    for (int pi = 0; pi < int(pairs_.size()); ++pi)
      for (int side = 0; side < 2; ++side) {
        if (!pairs_[pi].live[side]) continue;
        std::uint32_t waiting = 0, posted = 0;
        for (const auto& [id, w] : wrs_) {
          if (w.pair != pi || w.done || w.abandoned) continue;
          if (w.recv && w.side == side) ++posted;
          if (!w.recv && w.side != side && consumes_receive(w.op)) ++waiting;
        }
        while (posted < waiting && posted < 16 && post_recv_on(pi, side, pairs_[pi].host[side]))
          ++posted;
      }
  }

  void check_end() {
    check_stats(true);
    for (const auto& [id, w] : wrs_) {
      if (!ok()) return;
      if (!w.recv && w.success && consumes_receive(w.op) && !w.matched &&
          pairs_[w.pair].live[1 - w.side])
        fail("successful SEND/WRITE_IMM " + std::to_string(id) + " consumed no receive");
    }
    for (int h = 0; h < kHosts && ok(); ++h) {
      const Host& host = hosts_[h];
      const std::uint64_t faa = host.word(0), cas = host.word(1);
      if (faa < host.faa_olds.size() || faa > host.faa_posted)
        fail("fetch-and-add word " + std::to_string(faa) + " after " +
             std::to_string(host.faa_olds.size()) + " successes of " +
             std::to_string(host.faa_posted));
      if (!host.faa_olds.empty() && *host.faa_olds.rbegin() >= faa)
        fail("fetch-and-add returned a value the word never passed");
      if (!host.cas_values.count(cas)) fail("compare-and-swap word holds a value never swapped in");
    }
  }

  void check_send_completion(int h, const Completion& c, Wr& w, std::uint64_t id);
  void check_recv_completion(int h, const Completion& c, Wr& w);

  // MROCE_STRESS_TRACE set: every call and completion on stderr, to read a failure.
  template <typename... Args>
  void trace(const char* fmt, Args... args) const {
    if (!trace_) return;
    std::fprintf(stderr, "[%llu t=%llu] ", static_cast<unsigned long long>(report_.steps),
                 static_cast<unsigned long long>(now_));
    std::fprintf(stderr, fmt, args...);
    std::fputc('\n', stderr);
  }

  Choices& ch_;
  const bool trace_;
  Host hosts_[kHosts];
  std::vector<Pair> pairs_;
  std::unordered_map<std::uint64_t, Wr> wrs_;
  std::deque<Flight> flights_;
  std::vector<std::uint8_t> buf_;
  std::uint64_t next_id_ = 1;
  bool draining_ = false;
  Time now_ = 1000;
  StressReport report_;
};

void HostSink::on_completion(const Completion& c) {
  stress_->on_completion(host_, c);
}

void Stress::on_completion(int h, const Completion& c) {
  const auto it = wrs_.find(c.wr_id);
  if (it == wrs_.end()) return fail("completion for unknown wr_id " + std::to_string(c.wr_id));
  Wr& w = it->second;
  trace("completion %llu host %d status %s", static_cast<unsigned long long>(c.wr_id), h,
        to_string(c.status));
  const std::string what = "wr " + std::to_string(c.wr_id) + ": ";
  if (w.host != h || w.stream != c.stream) return fail(what + "completed on the wrong stream");
  if (w.recv != c.is_recv) return fail(what + "completion of the wrong kind");
  if (w.done) return fail(what + "completed twice");
  if (w.abandoned) return fail(what + "completed after its stream was destroyed");
  w.done = true;
  w.success = c.status == WcStatus::kSuccess;
  if (!w.success) {
    // Packets in flight may still land in its buffers: never reuse them.
    ++report_.failed;
    return;
  }
  if (w.recv) {
    check_recv_completion(h, c, w);
  } else {
    check_send_completion(h, c, w, c.wr_id);
  }
}

void Stress::check_send_completion(int h, const Completion& c, Wr& w, std::uint64_t id) {
  const std::string what = "wr " + std::to_string(id) + ": ";
  if (c.opcode != completion_opcode(w.op)) return fail(what + "wrong completion opcode");
  if (w.bad_key) return fail(what + "succeeded with a bad rkey");
  ++report_.succeeded[int(w.op)];
  const int peer = pairs_[w.pair].host[1 - w.side];
  Host& local = hosts_[h];
  const std::uint8_t* l = local.chunk(w.local_chunk);
  if (w.op == WrOpcode::kRdmaWrite) {
    const std::uint8_t* r = hosts_[peer].chunk(w.remote_chunk);
    if (std::memcmp(l, r, w.length) != 0) return fail(what + "WRITE data differs at the target");
  } else if (w.op == WrOpcode::kRdmaRead) {
    const std::uint8_t* r = hosts_[peer].chunk(w.remote_chunk);
    if (std::memcmp(l, r, w.length) != 0) return fail(what + "READ data differs from the source");
  } else if (w.op == WrOpcode::kAtomicFetchAdd) {
    std::uint64_t old;
    std::memcpy(&old, l, 8);
    if (!hosts_[peer].faa_olds.insert(old).second)
      return fail(what + "fetch-and-add returned " + std::to_string(old) + " twice");
  } else if (w.op == WrOpcode::kAtomicCmpSwp) {
    std::uint64_t old;
    std::memcpy(&old, l, 8);
    if (!hosts_[peer].cas_values.count(old))
      return fail(what + "compare-and-swap returned a value never swapped in");
    if (old == w.compare && !hosts_[peer].cas_winning_compares.insert(old).second)
      return fail(what + "compare-and-swap replaced the same value twice");
  }
  // WRITE_IMM's target is checked by the receive completion: free once both are in.
  if (w.op == WrOpcode::kRdmaWrite || w.op == WrOpcode::kRdmaRead ||
      (w.op == WrOpcode::kRdmaWriteWithImm && w.matched))
    give_chunk(peer, &w.remote_chunk);
  give_chunk(h, &w.local_chunk);
}

void Stress::check_recv_completion(int h, const Completion& c, Wr& w) {
  const std::string what = "recv " + std::to_string(c.wr_id) + ": ";
  Pair& p = pairs_[w.pair];
  const std::uint8_t* data = hosts_[h].chunk(w.local_chunk);
  std::uint64_t id = 0;
  if (c.has_imm) {
    id = c.imm;
  } else if (c.byte_len >= 8) {
    std::memcpy(&id, data, 8);
  } else {
    // A short SEND without immediate: the first unmatched one the peer side posted.
    for (const auto& [k, s] : wrs_)
      if (!s.recv && s.pair == w.pair && s.side != w.side && s.op == WrOpcode::kSend &&
          !s.matched && k > p.last_matched[w.side] && s.length == c.byte_len && (!id || k < id))
        id = k;
  }
  const auto it = wrs_.find(id);
  if (it == wrs_.end() || it->second.recv || it->second.pair != w.pair ||
      it->second.side == w.side || !consumes_receive(it->second.op))
    return fail(what + "matches no SEND or WRITE_IMM of the peer stream (id " + std::to_string(id) +
                ")");
  Wr& s = it->second;
  if (s.matched) return fail(what + "a second receive for " + std::to_string(id));
  if (id <= p.last_matched[w.side]) return fail(what + "receives out of order");
  if (c.byte_len != s.length) return fail(what + "wrong byte_len");
  const bool imm = s.op != WrOpcode::kSend;
  if (c.has_imm != imm) return fail(what + "immediate flag wrong");
  const bool write = s.op == WrOpcode::kRdmaWriteWithImm;
  if ((c.opcode == WcOpcode::kRecvRdmaWithImm) != write) return fail(what + "wrong opcode");
  s.matched = true;
  p.last_matched[w.side] = id;
  ++report_.recv_matched;
  const std::uint8_t* got = write ? hosts_[h].chunk(s.remote_chunk) : data;
  for (std::uint32_t i = s.length >= 8 ? 8 : 0; i < s.length; ++i)
    if (got[i] != pattern(id, i)) return fail(what + "data differs at byte " + std::to_string(i));
  if (write && s.done && s.success) give_chunk(h, &s.remote_chunk);
  give_chunk(h, &w.local_chunk);
}

}  // namespace

StressReport run_api_stress(Choices& choices) {
  auto stress = std::make_unique<Stress>(choices);
  return stress->run();
}

}  // namespace mroce::testing
