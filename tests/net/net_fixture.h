// Helpers for the stack's tests: devices on loopback addresses, a queue pair connected
// across two devices, registered buffers and waiting for completions.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "mroce/mroce.h"

namespace mroce::testing {

inline DeviceOptions loopback_options(std::vector<std::string> addresses = {"127.0.0.1"},
                                      Progress progress = Progress::kThread) {
  DeviceOptions o;
  o.addresses = std::move(addresses);
  o.port = 0;  // any free port: tests run in parallel
  o.progress = progress;
  return o;
}

inline std::unique_ptr<Device> open_device(const DeviceOptions& o) {
  std::string error;
  auto d = Device::open(o, &error);
  EXPECT_NE(d, nullptr) << error;
  return d;
}

// A buffer registered with a device, filled with a pattern.
struct Region {
  Region(Device& dev, std::size_t size, std::uint64_t seed, std::uint32_t access = access::kAll)
      : bytes(size) {
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& b : bytes) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b = std::uint8_t(x);
    }
    mr = dev.reg_mr(bytes.data(), size, access);
    EXPECT_NE(mr, nullptr) << dev.last_error();
  }
  std::uint64_t addr(std::size_t offset = 0) const {
    return reinterpret_cast<std::uint64_t>(bytes.data()) + offset;
  }
  Sge sge(std::size_t offset, std::uint32_t length) const {
    return Sge{addr(offset), length, mr->lkey()};
  }
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<MemoryRegion> mr;
};

struct Side {
  std::unique_ptr<Device> dev;
  std::unique_ptr<CompletionQueue> cq;
  std::vector<std::unique_ptr<QueuePair>> qps;
  QueuePair& qp(std::size_t i = 0) { return *qps.at(i); }
};

inline Side make_side(const DeviceOptions& o, int cq_size = 4096) {
  Side s;
  s.dev = open_device(o);
  if (s.dev) s.cq = s.dev->create_cq(cq_size);
  return s;
}

// Creates a queue pair on each side and binds them to each other.
inline void connect_qps(Side& a, Side& b, QpOptions base = {}) {
  base.stream.sq_depth = base.stream.rq_depth = 1024;
  QpOptions oa = base, ob = base;
  oa.send_cq = oa.recv_cq = a.cq.get();
  ob.send_cq = ob.recv_cq = b.cq.get();
  a.qps.push_back(a.dev->create_qp(oa));
  b.qps.push_back(b.dev->create_qp(ob));
  ASSERT_NE(a.qps.back(), nullptr) << a.dev->last_error();
  ASSERT_NE(b.qps.back(), nullptr) << b.dev->last_error();
  ASSERT_EQ(a.qps.back()->connect(b.dev->endpoint(), b.qps.back()->qp_num()), Errc::kOk);
  ASSERT_EQ(b.qps.back()->connect(a.dev->endpoint(), a.qps.back()->qp_num()), Errc::kOk);
}

// Polls `cq` until `count` completions arrived or `timeout` passed; devices in `pump`
// are progressed meanwhile (manual mode).
inline std::vector<Completion> wait_for(CompletionQueue& cq, std::size_t count,
                                        std::chrono::milliseconds timeout,
                                        const std::vector<Device*>& pump = {}) {
  std::vector<Completion> out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  Completion wc[64];
  while (out.size() < count && std::chrono::steady_clock::now() < end) {
    for (Device* d : pump) d->progress();
    const int n = cq.poll(wc, 64);
    out.insert(out.end(), wc, wc + n);
    if (n == 0 && pump.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return out;
}

inline SendWr make_send(WrOpcode op, Sge local, std::uint64_t wr_id) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.num_sge = 1;
  wr.sg[0] = local;
  return wr;
}

inline RecvWr make_recv(Sge local, std::uint64_t wr_id) {
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sg[0] = local;
  return wr;
}

}  // namespace mroce::testing
