#include "runs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "pattern.h"

namespace mroce::perf {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

std::uint64_t wr_id(std::uint32_t qp, std::uint64_t n) {
  return std::uint64_t{qp} << 40 | n;
}
std::uint32_t wr_qp(std::uint64_t id) {
  return static_cast<std::uint32_t>(id >> 40);
}
std::uint64_t wr_seq(std::uint64_t id) {
  return id & ((std::uint64_t{1} << 40) - 1);
}

// Whether the message for latency round trip `n` has fully landed in our receive slot.
// The engine publishes a WRITE's last byte last, with a release store: an acquire load
// of it also makes the rest of the message visible to this thread.
bool landed(Session& s, std::uint32_t size, std::uint8_t tag) {
  const auto* last = reinterpret_cast<const std::uint8_t*>(s.slot(0, kRxSlot)) + size - 1;
  return __atomic_load_n(last, __ATOMIC_ACQUIRE) == tag;
}

}  // namespace

bool run_bandwidth(Session& s, const TestSpec& spec, std::uint32_t size, double interval,
                   std::vector<std::uint64_t>& sent, BandwidthResult* out, std::string* error) {
  const std::uint32_t qps = s.qps();
  std::vector<std::uint64_t> posted(qps, 0), done(qps, 0);
  // The last request posted on each queue pair asked for a completion: the ones before
  // it complete with it.
  std::vector<char> last_signaled(qps, 1);
  const std::uint32_t mod = spec.moderation();
  std::vector<SendWr> list;
  list.reserve(mod);
  const WrOpcode op = spec.test == Test::kWrite  ? WrOpcode::kRdmaWrite
                      : spec.test == Test::kRead ? WrOpcode::kRdmaRead
                                                 : WrOpcode::kSend;
  const double sample = interval > 0 ? interval : 0.05;
  const auto t0 = Clock::now();
  out->start_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto last_done_at = t0;
  auto next_sample = t0 + std::chrono::duration<double>(sample);
  std::uint64_t bytes_at_sample = 0, bytes = 0, messages = 0;
  double sampled_at = 0;  // seconds since t0 of the last sample
  double peak = 0;
  Completion wc[64];
  for (;;) {
    const auto now = Clock::now();
    const bool out_of_time = spec.duration > 0 && seconds_since(t0, now) >= spec.duration;
    bool idle = true;
    for (std::uint32_t q = 0; q < qps; ++q) {
      // Out of time with silent requests outstanding: one more, signaled, completes them.
      const bool tail = spec.duration > 0 && out_of_time && !last_signaled[q];
      const std::uint64_t limit =
          spec.duration > 0 ? (out_of_time ? posted[q] + tail : ~0ull) : spec.iterations;
      if (posted[q] != done[q]) idle = false;
      list.clear();
      while (posted[q] + list.size() < limit && posted[q] + list.size() - done[q] < spec.depth &&
             list.size() < mod) {
        const std::uint64_t n = posted[q] + list.size();
        const std::uint32_t slot = static_cast<std::uint32_t>((sent[q] + list.size()) % spec.depth);
        SendWr wr;
        wr.wr_id = wr_id(q, n);
        wr.opcode = op;
        const bool signaled = tail || (n + 1) % mod == 0 || n + 1 == limit;
        wr.flags = signaled ? send_flags::kSignaled : 0;
        wr.num_sge = 1;
        wr.sg[0] = s.local(q, slot, size);
        wr.remote_addr = s.remote(q, slot);
        wr.rkey = s.rkey();
        list.push_back(wr);
      }
      if (list.empty()) continue;
      std::size_t n = 0;
      const Errc rc = s.qp(q).post_send_list(list, &n);
      posted[q] += n;
      sent[q] += n;
      if (n > 0) last_signaled[q] = (list[n - 1].flags & send_flags::kSignaled) != 0;
      if (rc != Errc::kOk) {
        *error = std::string("post_send: ") + to_string(rc);
        return false;
      }
      idle = false;
    }
    if (idle && (spec.duration > 0 ? out_of_time : true)) {
      bool finished = true;
      for (std::uint32_t q = 0; q < qps; ++q) {
        finished &= spec.duration > 0 || posted[q] >= spec.iterations;
      }
      if (finished) break;
    }
    // Nothing more to post until something completes: sleep on the queue if a thread
    // does the progress (the timeout keeps samples and --duration on time).
    const int n = s.wait(wc, 64, 1, -1, error);
    if (n < 0) return false;
    for (int i = 0; i < n; ++i) {
      const std::uint32_t q = wr_qp(wc[i].wr_id);
      const std::uint64_t seq = wr_seq(wc[i].wr_id);
      if (q >= qps || seq < done[q] || seq >= posted[q]) {
        *error = "completions out of order";
        return false;
      }
      // This completion stands for every request up to it (the others were silent).
      for (; done[q] <= seq; ++done[q]) {
        if (spec.check && spec.test == Test::kRead) {
          const std::uint64_t slot = (sent[q] - (posted[q] - done[q])) % spec.depth;
          if (!matches_pattern(s.slot(q, static_cast<std::uint32_t>(slot)), size,
                               pattern_state(spec.seed ^ 1, q, slot))) {
            *error = "READ of " + std::to_string(size) + " bytes returned wrong data";
            return false;
          }
        }
        ++messages;
        bytes += size;
      }
    }
    if (n > 0) last_done_at = Clock::now();
    if (const auto at = Clock::now(); at >= next_sample) {
      // Goodput over the time since the last sample, however late this one is (a thread
      // descheduled for longer than the interval must not yield made-up samples).
      const double t = seconds_since(t0, at);
      const double g = double(bytes - bytes_at_sample) * 8 / (t - sampled_at) / 1e9;
      peak = std::max(peak, g);
      out->series.emplace_back(t, g);
      if (interval > 0) {
        std::printf(" [%8.3f s] %10.3f Gb/s\n", t, g);
        std::fflush(stdout);
      }
      bytes_at_sample = bytes;
      sampled_at = t;
      while (next_sample <= at) next_sample += std::chrono::duration<double>(sample);
    }
  }
  out->size = size;
  out->messages = messages;
  out->seconds = seconds_since(t0, last_done_at);
  out->gbps = out->seconds > 0 ? double(bytes) * 8 / out->seconds / 1e9 : 0;
  out->peak_gbps = std::max(peak, out->series.empty() ? out->gbps : peak);
  out->mpps = out->seconds > 0 ? double(messages) / out->seconds / 1e6 : 0;
  return true;
}

bool post_latency_receives(Session& s, const TestSpec& spec, std::string* error) {
  if (spec.test == Test::kRead) return true;
  for (std::uint32_t i = 0; i < kLatencyReceives; ++i) {
    RecvWr r;
    r.wr_id = i;
    r.num_sge = 1;
    r.sg[0] = s.local(0, kRxSlot, static_cast<std::uint32_t>(s.slot_size()));
    const Errc rc = s.qp(0).post_recv(r);
    if (rc != Errc::kOk) {
      *error = std::string("post_recv: ") + to_string(rc);
      return false;
    }
  }
  return true;
}

bool run_latency(Session& s, const TestSpec& spec, std::uint32_t size, bool client,
                 std::uint64_t& counter, LatencyResult* out, std::string* error) {
  // One-packet WRITEs are seen by polling memory, as ib_write_lat does; longer ones may
  // land out of order, so they carry an immediate and are seen by their completion.
  const bool poll_memory = spec.test == Test::kWrite && size <= spec.mtu;
  const bool by_receive = spec.test == Test::kSend || (spec.test == Test::kWrite && !poll_memory);
  const std::uint64_t total = kLatencyWarmup + spec.iterations;
  std::vector<double> samples;
  samples.reserve(spec.iterations);
  Completion wc[16];
  std::uint64_t receives = 0;
  // Waits for what answers round trip `tag`: our memory changing, a receive, or (READ)
  // the request's own completion.
  const auto wait_answer = [&](std::uint8_t tag) -> bool {
    for (;;) {
      if (poll_memory && landed(s, size, tag)) return true;
      // Memory is polled; completions may be slept on (when a thread does the progress).
      const int n = poll_memory ? s.poll(wc, 16, error) : s.wait(wc, 16, 100, -1, error);
      if (n < 0) return false;
      for (int i = 0; i < n; ++i) {
        if (wc[i].is_recv) {
          ++receives;
          RecvWr r;
          r.wr_id = wc[i].wr_id;
          r.num_sge = 1;
          r.sg[0] = s.local(0, kRxSlot, static_cast<std::uint32_t>(s.slot_size()));
          if (s.qp(0).post_recv(r) != Errc::kOk) {
            *error = "post_recv failed";
            return false;
          }
          if (by_receive) return true;
        } else if (spec.test == Test::kRead) {
          return true;
        }
      }
    }
  };
  const auto send = [&](std::uint8_t tag) -> bool {
    std::uint8_t* tx = s.slot(0, kTxSlot);
    tx[size - 1] = tag;
    SendWr wr;
    wr.wr_id = counter;
    wr.flags = send_flags::kSignaled;
    wr.num_sge = 1;
    if (spec.test == Test::kRead) {
      wr.opcode = WrOpcode::kRdmaRead;
      wr.sg[0] = s.local(0, kRxSlot, size);
      wr.remote_addr = s.remote(0, kTxSlot);
    } else {
      wr.opcode = spec.test == Test::kSend ? WrOpcode::kSend
                  : poll_memory            ? WrOpcode::kRdmaWrite
                                           : WrOpcode::kRdmaWriteWithImm;
      wr.sg[0] = s.local(0, kTxSlot, size);
      wr.remote_addr = s.remote(0, kRxSlot);
    }
    wr.rkey = s.rkey();
    const Errc rc = s.qp(0).post_send(wr);
    if (rc != Errc::kOk) *error = std::string("post_send: ") + to_string(rc);
    return rc == Errc::kOk;
  };

  for (std::uint64_t i = 0; i < total; ++i, ++counter) {
    const auto tag = static_cast<std::uint8_t>(1 + counter % 255);
    if (client) {
      const auto t0 = Clock::now();
      if (!send(tag) || !wait_answer(tag)) return false;
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      // A ping-pong's latency is half its round trip; a READ's is the whole of it.
      if (i >= kLatencyWarmup) samples.push_back(spec.test == Test::kRead ? us : us / 2);
    } else if (spec.test != Test::kRead) {
      if (!wait_answer(tag) || !send(tag)) return false;
    }
  }
  if (out) *out = summarize(size, samples);
  return true;
}

bool Responder::post_receive(std::uint32_t qp, std::uint32_t slot, std::string* error) {
  RecvWr r;
  r.wr_id = wr_id(qp, slot);
  r.num_sge = 1;
  r.sg[0] = s_.local(qp, slot, static_cast<std::uint32_t>(s_.slot_size()));
  const Errc rc = s_.qp(qp).post_recv(r);
  if (rc != Errc::kOk) *error = std::string("post_recv: ") + to_string(rc);
  return rc == Errc::kOk;
}

bool Responder::post_initial(std::string* error) {
  if (spec_.test != Test::kSend) return true;
  for (std::uint32_t q = 0; q < s_.qps(); ++q) {
    for (std::uint32_t slot = 0; slot < s_.slots(); ++slot) {
      if (!post_receive(q, slot, error)) return false;
    }
  }
  return true;
}

bool Responder::step(int other_fd, std::string* error) {
  Completion wc[64];
  const int n = s_.wait(wc, 64, 100, other_fd, error);
  if (n < 0) return false;
  for (int i = 0; i < n; ++i) {
    if (!wc[i].is_recv) continue;
    const std::uint32_t q = wr_qp(wc[i].wr_id);
    const auto slot = static_cast<std::uint32_t>(wr_seq(wc[i].wr_id));
    if (spec_.check) {
      const std::uint64_t source = received_[q] % spec_.depth;  // the sender's slot
      if (!matches_pattern(s_.slot(q, slot), wc[i].byte_len,
                           pattern_state(spec_.seed, q, source))) {
        ++mismatches_;
      }
    }
    ++received_[q];
    if (!post_receive(q, slot, error)) return false;
  }
  return true;
}

std::uint64_t Responder::check_writes(std::uint32_t size, const std::vector<std::uint64_t>& first,
                                      const std::vector<std::uint64_t>& counts) {
  std::uint64_t bad = 0;
  for (std::uint32_t q = 0; q < s_.qps() && q < counts.size() && q < first.size(); ++q) {
    const std::uint64_t used = std::min<std::uint64_t>(counts[q], spec_.depth);
    for (std::uint64_t k = 0; k < used; ++k) {
      const std::uint64_t slot = (first[q] + k) % spec_.depth;
      bad += !matches_pattern(s_.slot(q, static_cast<std::uint32_t>(slot)), size,
                              pattern_state(spec_.seed, q, slot));
    }
  }
  return bad;
}

}  // namespace mroce::perf
