// Two (or more) engines on the in-memory network, with helpers to open stream pairs,
// register buffers and run until work completes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/engine.h"
#include "harness/network.h"

namespace mroce::testing {

inline Address host_address(int host, int plane) {
  return Address::ipv4(0x0a000000u | std::uint32_t(plane) << 16 | std::uint32_t(host + 1));
}

struct Host {
  std::unique_ptr<Engine> engine;
  Recorder recorder;
  int index = 0;
  Endpoint endpoint() const {
    return Endpoint{engine->config().planes[0], engine->config().listen_port};
  }
};

inline EngineConfig test_config(int host, int planes) {
  EngineConfig c;
  for (int p = 0; p < planes; ++p) c.planes.push_back(host_address(host, p));
  c.seed = 1000 + std::uint64_t(host);
  c.line_rate_bps = 10'000'000'000;
  c.initial_rtt = 50 * kMicrosecond;
  c.min_rto = 1 * kMillisecond;
  c.probe_interval = 1 * kMillisecond;
  return c;
}

class Cluster {
 public:
  Cluster(int hosts, int planes, int spines, std::uint64_t seed,
          const std::function<void(int, EngineConfig&)>& tweak = {})
      : net(planes, spines, seed) {
    for (int h = 0; h < hosts; ++h) {
      EngineConfig c = test_config(h, planes);
      if (tweak) tweak(h, c);
      auto host = std::make_unique<Host>();
      host->engine = std::make_unique<Engine>(c);
      host->engine->set_sink(&host->recorder);
      host->index = net.add_host(host->engine.get(), c.planes, c.listen_port);
      this->hosts.push_back(std::move(host));
    }
  }

  Engine& engine(int h) { return *hosts[h]->engine; }
  Recorder& rec(int h) { return hosts[h]->recorder; }

  // Creates a stream on each of a and b and binds them to each other.
  std::pair<StreamId, StreamId> connect(int a, int b, StreamConfig cfg = {}) {
    StreamId sa = 0, sb = 0;
    EXPECT_EQ(engine(a).create_stream(cfg, &sa), Errc::kOk);
    EXPECT_EQ(engine(b).create_stream(cfg, &sb), Errc::kOk);
    EXPECT_EQ(engine(a).connect_stream(net.now(), sa, hosts[b]->endpoint(), sb), Errc::kOk);
    EXPECT_EQ(engine(b).connect_stream(net.now(), sb, hosts[a]->endpoint(), sa), Errc::kOk);
    return {sa, sb};
  }

  // Runs until `count` completions matching `pred` are recorded on host h.
  bool run_until_completions(int h, std::size_t count, Time limit,
                             const std::function<bool(const Completion&)>& pred = {}) {
    return net.run_until(
        [&] {
          std::size_t n = 0;
          for (const auto& c : rec(h).completions) n += !pred || pred(c);
          return n >= count;
        },
        net.now() + limit);
  }

  Network net;
  std::vector<std::unique_ptr<Host>> hosts;
};

inline SendWr make_wr(WrOpcode op, const Buffer& local, std::uint32_t offset, std::uint32_t len,
                      std::uint64_t wr_id) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.num_sge = 1;
  wr.sg[0] = Sge{local.addr() + offset, len, local.keys.lkey};
  return wr;
}

inline RecvWr make_recv(const Buffer& local, std::uint32_t offset, std::uint32_t len,
                        std::uint64_t wr_id) {
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sg[0] = Sge{local.addr() + offset, len, local.keys.lkey};
  return wr;
}

inline void fill_pattern(std::vector<std::uint8_t>& v, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = std::uint8_t(x);
  }
}

}  // namespace mroce::testing
