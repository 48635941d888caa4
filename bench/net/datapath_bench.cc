// Micro-benchmarks of the datapath's pieces, to tell the stack's own costs from the
// kernel's: the engines alone (no sockets) for an 8-byte WRITE round trip and a 64 KiB
// WRITE, the send batch (grouping and GSO) and the receive batch (GRO splitting) over
// loopback sockets.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/engine.h"
#include "net/clock.h"
#include "net/rx_batch.h"
#include "net/socket_table.h"
#include "net/tx_batch.h"

namespace mroce {
namespace {

struct Collect : Sink {
  void on_completion(const Completion&) override { ++completions; }
  int completions = 0;
};

// Two engines wired back to back: every datagram one yields is handed to the other.
struct Pair {
  Pair() {
    for (int i = 0; i < 2; ++i) {
      EngineConfig c;
      c.planes = {Address::ipv4(0x7f000001u + std::uint32_t(i))};
      c.seed = 7 + std::uint64_t(i);
      engines[i] = std::make_unique<Engine>(c);
      engines[i]->set_sink(&sinks[i]);
      memory[i].assign(1 << 20, std::uint8_t(i));
      engines[i]->reg_mr(reinterpret_cast<std::uint64_t>(memory[i].data()), memory[i].size(),
                         access::kAll, memory[i].data(), &keys[i]);
      engines[i]->create_stream(StreamConfig{}, &streams[i]);
    }
    for (int i = 0; i < 2; ++i) {
      engines[i]->connect_stream(net::monotonic_now(), streams[i],
                                 Endpoint{engines[1 - i]->config().planes[0], kDefaultPort},
                                 streams[1 - i]);
    }
    buf.resize(engines[0]->max_packet_size());
    pump();
  }

  // Moves datagrams until neither engine has anything to send.
  void pump() {
    for (bool moved = true; moved;) {
      moved = false;
      for (int i = 0; i < 2; ++i) {
        TxMeta m;
        const Time now = net::monotonic_now();
        while (engines[i]->poll_transmit(now, buf, &m)) {
          RxMeta r;
          r.src = m.src;
          r.dst = m.dst;
          r.src_port = m.src_port;
          r.dst_port = m.dst_port;
          r.plane = m.plane;
          r.ecn = m.ecn;
          engines[1 - i]->on_packet(now, r, std::span<const std::uint8_t>(buf.data(), m.length));
          moved = true;
        }
      }
    }
  }

  void write(std::uint32_t length) {
    SendWr wr;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.num_sge = 1;
    wr.sg[0] = Sge{reinterpret_cast<std::uint64_t>(memory[0].data()), length, keys[0].lkey};
    wr.remote_addr = reinterpret_cast<std::uint64_t>(memory[1].data());
    wr.rkey = keys[1].rkey;
    engines[0]->post_send(net::monotonic_now(), streams[0], wr);
    pump();
  }

  std::unique_ptr<Engine> engines[2];
  Collect sinks[2];
  std::vector<std::uint8_t> memory[2];
  MrKeys keys[2];
  StreamId streams[2];
  std::vector<std::uint8_t> buf;
};

void BM_EnginesWrite(benchmark::State& state) {
  Pair pair;
  const auto length = static_cast<std::uint32_t>(state.range(0));
  for (auto _ : state) pair.write(length);
  state.SetBytesProcessed(state.iterations() * length);
  state.counters["completions"] = pair.sinks[0].completions;
}
BENCHMARK(BM_EnginesWrite)->Arg(8)->Arg(65536);

// A socket table with `pool` source ports on 127.0.0.1 and a sink socket to aim at.
struct Loopback {
  explicit Loopback(std::uint16_t pool) {
    net::SocketTableConfig c;
    c.planes = {Address::ipv4(0x7f000001)};
    c.pool_count = pool;
    std::string error;
    if (!table.open(c, &error)) throw std::runtime_error(error);
    net::SocketOptions o;
    o.rcvbuf = 64 << 20;
    if (!sink.open(Address::ipv4(0x7f000001), 0, o, &error)) throw std::runtime_error(error);
  }
  net::SocketTable table;
  net::UdpSocket sink;
};

void BM_TxBatchSend(benchmark::State& state) {
  const auto paths = static_cast<std::uint16_t>(state.range(0));
  Loopback lo(paths);
  constexpr std::size_t kBatch = 240, kSize = 4152;
  net::TxBatch batch(kBatch, kSize, true);
  net::RxBatch drain(64, 65536, 65536);
  DatapathCounters counters;
  std::uint32_t drops = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      TxMeta* m = batch.slot_meta();
      m->plane = 0;
      m->src_port = static_cast<std::uint16_t>(lo.table.pool_base() + i % paths);
      m->dst = lo.sink.address();
      m->dst_port = lo.sink.port();
      m->ecn = Ecn::kEct0;
      m->length = kSize;
      batch.commit();
    }
    batch.send(lo.table, &counters);
    state.PauseTiming();
    while (drain.receive(lo.sink, 0, 0, &drops, &counters) > 0) {
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["syscalls/batch"] = double(counters.tx_syscalls) / double(state.iterations());
}
BENCHMARK(BM_TxBatchSend)->Arg(1)->Arg(16)->Arg(64);

void BM_RxBatchReceive(benchmark::State& state) {
  Loopback lo(1);
  constexpr std::size_t kSize = 4152;
  net::TxBatch batch(240, kSize, true);
  net::RxBatch rx(32, 65536, 65536);
  DatapathCounters counters;
  std::uint32_t drops = 0;
  std::uint64_t datagrams = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < 240; ++i) {
      TxMeta* m = batch.slot_meta();
      m->src_port = lo.table.pool_base();
      m->dst = lo.sink.address();
      m->dst_port = lo.sink.port();
      m->length = kSize;
      batch.commit();
    }
    batch.send(lo.table, &counters);
    state.ResumeTiming();
    while (rx.receive(lo.sink, 0, 0, &drops, &counters) > 0) {
      for (const net::RxRead& read : rx.reads()) {
        for_each_datagram(
            read, [&](const RxMeta&, std::span<const std::uint8_t> b) { datagrams += !b.empty(); });
      }
    }
  }
  state.SetItemsProcessed(std::int64_t(datagrams));
}
BENCHMARK(BM_RxBatchReceive);

}  // namespace
}  // namespace mroce
