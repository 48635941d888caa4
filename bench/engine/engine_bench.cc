// The engine's cost per packet, in memory: sender building DATA packets, receiver
// placing them, receiver building ACKs, sender processing ACKs; with and without real
// payload bytes. Then goodput through the in-memory network at 0, 1 and 10% loss.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>

#include "core/engine.h"
#include "harness/network.h"
#include "wire/codec.h"

namespace mroce {
namespace {

// Phases are timed on this thread's CPU clock: the machines these run on are shared,
// and wall time would count other processes' turns.
struct Clock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock, duration>;
  static time_point now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return time_point(duration(std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec));
  }
};

struct Datagram {
  std::vector<std::uint8_t> bytes;
  RxMeta meta;
};

RxMeta rx_of(const TxMeta& m) {
  RxMeta r;
  r.src = m.src;
  r.dst = m.dst;
  r.src_port = m.src_port;
  r.dst_port = m.dst_port;
  r.plane = m.plane;
  r.ecn = m.ecn;
  return r;
}

struct Counter : Sink {
  void on_completion(const Completion&) override { ++completions; }
  std::uint64_t completions = 0;
};

// Two engines joined back to back, with a WRITE stream that never runs dry.
class Pair {
 public:
  explicit Pair(bool payload, std::uint16_t paths = 16)
      : a_(config(1, payload, paths)),
        b_(config(2, payload, paths)),
        src_(payload ? kMessage : 0),
        dst_(payload ? kMessage : 0) {
    StreamConfig sc;
    sc.sq_depth = 64;
    a_.create_stream(sc, &sa_);
    b_.create_stream(sc, &sb_);
    a_.connect_stream(now_, sa_, Endpoint{Address::ipv4(0x0a000002), kDefaultPort}, sb_);
    b_.connect_stream(now_, sb_, Endpoint{Address::ipv4(0x0a000001), kDefaultPort}, sa_);
    a_.reg_mr(0x10000, kMessage, access::kAll, payload ? src_.data() : nullptr, &ka_);
    b_.reg_mr(0x10000, kMessage, access::kAll, payload ? dst_.data() : nullptr, &kb_);
    buf_.resize(a_.max_packet_size());
    a_.set_sink(&done_);
    for (int i = 0; i < 16; ++i) exchange_all();  // set-up
    for (int i = 0; i < 32; ++i) post();
  }

  void post() {
    SendWr wr;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.num_sge = 1;
    wr.sg[0] = Sge{0x10000, kMessage, ka_.lkey};
    wr.remote_addr = 0x10000;
    wr.rkey = kb_.rkey;
    if (a_.post_send(now_, sa_, wr) == Errc::kOk) ++posted_;
  }

  // Moves everything each side has to send to the other.
  void exchange_all() {
    drain(a_, to_b_);
    deliver(b_, to_b_);
    drain(b_, to_a_);
    deliver(a_, to_a_);
  }
  std::size_t drain(Engine& e, std::deque<Datagram>& q, std::size_t max = ~std::size_t{0}) {
    TxMeta m;
    std::size_t n = 0;
    while (n < max && e.poll_transmit(now_, buf_, &m)) {
      q.push_back({{buf_.begin(), buf_.begin() + m.length}, rx_of(m)});
      ++n;
    }
    return n;
  }
  void deliver(Engine& e, std::deque<Datagram>& q) {
    for (auto& d : q) e.on_packet(now_, d.meta, d.bytes);
    q.clear();
  }
  void refill() {
    while (posted_ < done_.completions + 32) post();
    now_ += 1000;
    if (now_ >= a_.next_deadline()) a_.on_timer(now_);
    if (now_ >= b_.next_deadline()) b_.on_timer(now_);
  }

  static EngineConfig config(int host, bool payload, std::uint16_t paths) {
    EngineConfig c;
    c.planes = {Address::ipv4(0x0a000000u | std::uint32_t(host))};
    c.carry_payload = payload;
    c.paths = paths;
    // As fast as an ACK's rate hint can say (32 bits of kbit/s): pacing, not yet the
    // engine, would otherwise set the pace.
    c.line_rate_bps = 4'000'000'000'000;
    c.initial_window_bytes = 64 << 20;
    c.path_window_packets = 256;
    c.seed = std::uint64_t(host);
    return c;
  }

  static constexpr std::uint32_t kMessage = 1 << 20;
  Engine a_, b_;
  std::vector<std::uint8_t> src_, dst_, buf_;
  StreamId sa_ = 0, sb_ = 0;
  MrKeys ka_, kb_;
  Time now_ = 1000;
  std::deque<Datagram> to_a_, to_b_;
  std::uint64_t posted_ = 0;
  Counter done_;
};

// Each phase timed on its own, 64 data packets at a time.
enum Phase { kSenderData, kReceiverData, kReceiverAck, kSenderAck };

void BM_Phase(benchmark::State& state) {
  const Phase phase = Phase(state.range(0));
  const bool payload = state.range(1);
  Pair p(payload);
  std::uint64_t packets = 0;
  for (auto _ : state) {
    p.refill();
    double seconds = 0;
    auto t0 = Clock::now();
    const std::size_t n = p.drain(p.a_, p.to_b_, 64);
    if (phase == kSenderData) seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    packets += n;
    t0 = Clock::now();
    p.deliver(p.b_, p.to_b_);
    if (phase == kReceiverData) seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    p.drain(p.b_, p.to_a_);
    if (phase == kReceiverAck) seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    p.deliver(p.a_, p.to_a_);
    if (phase == kSenderAck) seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(seconds);
  }
  state.counters["ns_per_data_packet"] = benchmark::Counter(
      double(packets), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(std::int64_t(packets));
  if (payload) state.SetBytesProcessed(std::int64_t(packets) * 4096);
}
BENCHMARK(BM_Phase)
    ->ArgNames({"phase", "payload"})
    ->ArgsProduct({{kSenderData, kReceiverData, kReceiverAck, kSenderAck}, {0, 1}})
    ->UseManualTime();

// The whole exchange per data packet (both engines, DATA and ACK).
void BM_RoundTrip(benchmark::State& state) {
  Pair p(state.range(0), std::uint16_t(state.range(1)));
  std::uint64_t packets = 0;
  for (auto _ : state) {
    p.refill();
    packets += p.drain(p.a_, p.to_b_, 64);
    p.deliver(p.b_, p.to_b_);
    p.drain(p.b_, p.to_a_);
    p.deliver(p.a_, p.to_a_);
  }
  state.counters["ns_per_data_packet"] = benchmark::Counter(
      double(packets), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(std::int64_t(packets));
}
BENCHMARK(BM_RoundTrip)
    ->ArgNames({"payload", "paths"})
    ->ArgsProduct({{0, 1}, {1, 16, 128}})
    ->MeasureProcessCPUTime();

// Goodput of 40 x 1 MiB WRITEs through a 10 Gbit/s receiver port, 4 spines, random loss
// on every spine for data and ACKs alike. Reported in simulated Gbit/s.
void BM_Goodput(benchmark::State& state) {
  const double loss = double(state.range(0)) / 1000;
  double gbps = 0;
  std::uint64_t retransmits = 0;
  for (auto _ : state) {
    testing::Network net(1, 4, 31);
    std::vector<std::unique_ptr<Engine>> engines;
    for (int h = 0; h < 2; ++h) {
      EngineConfig c;
      c.planes = {Address::ipv4(0x0a000001u + std::uint32_t(h))};
      c.line_rate_bps = 10'000'000'000;
      c.seed = std::uint64_t(h) + 1;
      engines.push_back(std::make_unique<Engine>(c));
      net.add_host(engines.back().get(), c.planes, c.listen_port);
    }
    testing::Recorder rec;
    engines[0]->set_sink(&rec);
    for (int s = 0; s < 4; ++s) {
      net.spine(0, s).loss = loss;
      net.spine(0, s).loss_all = true;
    }
    net.downlink(1, 0).rate_bps = 10'000'000'000;
    net.downlink(1, 0).ecn_threshold = 30;
    net.uplink_rate(0, 0) = 10'000'000'000;
    StreamConfig sc;
    sc.sq_depth = 64;
    StreamId a = 0, b = 0;
    engines[0]->create_stream(sc, &a);
    engines[1]->create_stream(sc, &b);
    engines[0]->connect_stream(0, a, Endpoint{Address::ipv4(0x0a000002), kDefaultPort}, b);
    engines[1]->connect_stream(0, b, Endpoint{Address::ipv4(0x0a000001), kDefaultPort}, a);
    MrKeys ka, kb;
    std::vector<std::uint8_t> src(1 << 20), dst(1 << 20);
    engines[0]->reg_mr(0x1000, 1 << 20, access::kAll, src.data(), &ka);
    engines[1]->reg_mr(0x1000, 1 << 20, access::kAll, dst.data(), &kb);
    for (int i = 0; i < 40; ++i) {
      SendWr wr;
      wr.opcode = WrOpcode::kRdmaWrite;
      wr.num_sge = 1;
      wr.sg[0] = Sge{0x1000, 1 << 20, ka.lkey};
      wr.remote_addr = 0x1000;
      wr.rkey = kb.rkey;
      engines[0]->post_send(0, a, wr);
    }
    net.run_until([&] { return rec.completions.size() >= 40; }, 10 * kSecond);
    gbps = 40.0 * (1 << 20) * 8 / double(net.now());
    retransmits = engines[0]->counters().tx_retransmits;
  }
  state.counters["goodput_gbps"] = gbps;
  state.counters["retransmits"] = double(retransmits);
}
BENCHMARK(BM_Goodput)
    ->ArgName("loss_permille")
    ->Arg(0)
    ->Arg(10)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond);

// A flood of CONNECTs from distinct sources that never confirm: what each costs the
// server (decode, half-open state, its ACCEPT) with the half-open table full.
void BM_ConnectFlood(benchmark::State& state) {
  EngineConfig c;
  c.planes = {Address::ipv4(0x0a000001)};
  Engine server(c);
  wire::CommonHeader common;
  common.type = wire::PacketType::kConnect;
  wire::HandshakeHeader hs;
  hs.mss = 4096;
  hs.paths = 16;
  hs.max_messages = 256;
  hs.max_responses = 64;
  hs.address_count = 1;
  std::vector<std::uint8_t> pkt(256), out(server.max_packet_size());
  std::uint32_t n = 0;
  for (auto _ : state) {
    ++n;
    const Address src = Address::ipv4(0x7f000000u | (n & 0xffffff));
    hs.src_conn = n;
    hs.src_token = n * 0x9e3779b97f4a7c15ull | 1;
    hs.listen_port = 4791;
    hs.addresses[0] = src.bytes;
    const std::size_t len = wire::encode_handshake(common, hs, pkt);
    RxMeta m;
    m.src = src;
    m.src_port = 4791;
    m.dst = c.planes[0];
    m.dst_port = 4791;
    server.on_packet(Time(n) * 200'000, m, {pkt.data(), len});
    TxMeta tx;
    while (server.poll_transmit(Time(n) * 200'000, out, &tx)) {
    }
  }
  state.counters["half_open_evicted"] = double(server.counters().drop(DropReason::kSetupEvicted));
}
BENCHMARK(BM_ConnectFlood)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mroce

BENCHMARK_MAIN();
