// Two RoCEv2 baseline engines joined by the in-memory network, each with one QP connected
// to the other's, and helpers to post work and wait for it.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "baseline/roce_engine.h"
#include "harness/network.h"

namespace mroce::baseline::testing {

using mroce::testing::Buffer;
using mroce::testing::Network;
using mroce::testing::Recorder;

inline const Address kAddrA = Address::ipv4(0x0a000001);
inline const Address kAddrB = Address::ipv4(0x0a000002);
inline const Address kAddrA2 = Address::ipv4(0x0a010001);
inline const Address kAddrB2 = Address::ipv4(0x0a010002);

// Timers for the microsecond fabric of the in-memory network.
inline RoceConfig fabric_config() {
  RoceConfig c;
  c.ack_timeout = 100 * kMicrosecond;
  return c;
}

struct PairOptions {
  RoceConfig config = fabric_config();
  StreamConfig stream;
  std::uint64_t seed = 1;
  int planes = 1;
  int spines = 4;
};

class RocePair {
 public:
  explicit RocePair(const PairOptions& o = {})
      : net(o.planes, o.spines, o.seed),
        a(with_planes(o.config, o.planes, kAddrA, kAddrA2)),
        b(with_planes(o.config, o.planes, kAddrB, kAddrB2)) {
    a.set_sink(&ra);
    b.set_sink(&rb);
    ha = net.add_host(&a, a.config().planes, kRoceV2Port);
    hb = net.add_host(&b, b.config().planes, kRoceV2Port);
    EXPECT_EQ(a.create_stream(o.stream, &qa), Errc::kOk);
    EXPECT_EQ(b.create_stream(o.stream, &qb), Errc::kOk);
    connect(qa, qb);
  }

  // Connects QP qa of A with QP qb of B, each to the peer address on its own plane.
  void connect(StreamId qa_, StreamId qb_) {
    const int plane = a.stream_plane(qa_);
    EXPECT_EQ(b.bind_plane(qb_, std::uint8_t(plane)), Errc::kOk);
    EXPECT_EQ(a.connect_stream(net.now(), qa_, {b.config().planes[plane], kRoceV2Port}, qb_),
              Errc::kOk);
    EXPECT_EQ(b.connect_stream(net.now(), qb_, {a.config().planes[plane], kRoceV2Port}, qa_),
              Errc::kOk);
  }

  bool run_until(const std::function<bool()>& done, Time limit = 200 * kMillisecond) {
    return net.run_until(done, net.now() + limit);
  }
  // Runs until A has n send completions and B n receive completions (of any status).
  bool run_for_completions(std::size_t sends, std::size_t recvs = 0,
                           Time limit = 200 * kMillisecond) {
    return run_until([&] { return count(ra, false) >= sends && count(rb, true) >= recvs; }, limit);
  }
  static std::size_t count(const Recorder& r, bool recv) {
    std::size_t n = 0;
    for (const auto& c : r.completions) n += c.is_recv == recv;
    return n;
  }
  void all_spines(const std::function<void(mroce::testing::SpineParams&)>& fn) {
    for (int p = 0; p < net.planes(); ++p)
      for (int s = 0; s < net.spines_per_plane(); ++s) fn(net.spine(p, s));
  }
  std::uint64_t spine_drops() const {
    std::uint64_t n = 0;
    for (int p = 0; p < net.planes(); ++p)
      for (int s = 0; s < net.spines_per_plane(); ++s) n += net.spine_stats(p, s).dropped;
    return n;
  }

  Network net;
  RoceEngine a;
  RoceEngine b;
  Recorder ra;
  Recorder rb;
  int ha = 0;
  int hb = 0;
  StreamId qa = 0;
  StreamId qb = 0;

 private:
  static RoceConfig with_planes(RoceConfig c, int planes, Address first, Address second) {
    c.planes = {first};
    if (planes > 1) c.planes.push_back(second);
    return c;
  }
};

inline void fill_pattern(std::vector<std::uint8_t>& bytes, std::uint32_t seed) {
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = std::uint8_t(x >> 24);
  }
}

inline SendWr make_wr(std::uint64_t id, WrOpcode op, const Buffer& local, std::uint64_t offset,
                      std::uint32_t length, std::uint32_t flags = send_flags::kSignaled) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.flags = flags;
  wr.num_sge = 1;
  wr.sg[0] = {local.addr() + offset, length, local.keys.lkey};
  return wr;
}

inline SendWr remote(SendWr wr, const Buffer& target, std::uint64_t offset) {
  wr.remote_addr = target.addr() + offset;
  wr.rkey = target.keys.rkey;
  return wr;
}

inline RecvWr make_recv(std::uint64_t id, const Buffer& local, std::uint64_t offset,
                        std::uint32_t length) {
  RecvWr wr;
  wr.wr_id = id;
  wr.num_sge = 1;
  wr.sg[0] = {local.addr() + offset, length, local.keys.lkey};
  return wr;
}

inline bool same_bytes(const std::vector<std::uint8_t>& x, std::size_t xoff,
                       const std::vector<std::uint8_t>& y, std::size_t yoff, std::size_t n) {
  return std::memcmp(x.data() + xoff, y.data() + yoff, n) == 0;
}

}  // namespace mroce::baseline::testing
