// A random mix of messages on several streams from host 0 to host 1, with everything
// needed to check afterwards that each arrived exactly once, byte-exact, and that
// completions kept stream order.
#pragma once

#include <map>
#include <random>

#include "engine/fixture.h"

namespace mroce::testing {

struct Message {
  StreamId stream;
  WrOpcode op;
  std::uint32_t length;
  std::uint64_t src_offset;
  std::uint64_t dst_offset;
  std::uint32_t imm;
};

class Workload {
 public:
  Workload(Cluster& cl, int streams, int messages, std::uint32_t max_len, std::uint64_t seed,
           bool with_reads = true)
      : cl_(cl),
        src_(cl.engine(0), total(messages, max_len)),
        dst_(cl.engine(1), total(messages, max_len)),
        rsrc_(cl.engine(1), total(messages, max_len)),
        rdst_(cl.engine(0), total(messages, max_len)) {
    std::mt19937_64 rng(seed);
    fill_pattern(src_.bytes, seed);
    fill_pattern(rsrc_.bytes, seed + 1);
    StreamConfig cfg;
    cfg.sq_depth = std::uint32_t(messages);
    cfg.rq_depth = std::uint32_t(messages);
    for (int s = 0; s < streams; ++s) pairs_.push_back(cl.connect(0, 1, cfg));
    std::uint64_t off = 0;
    for (int i = 0; i < messages; ++i) {
      Message m;
      const auto& pair = pairs_[rng() % pairs_.size()];
      m.stream = pair.first;
      const int kinds = with_reads ? 5 : 4;
      const WrOpcode ops[] = {WrOpcode::kRdmaWrite, WrOpcode::kSend, WrOpcode::kRdmaWriteWithImm,
                              WrOpcode::kSendWithImm, WrOpcode::kRdmaRead};
      m.op = ops[rng() % kinds];
      m.length = std::uint32_t(rng() % (max_len + 1));
      if (rng() % 4 == 0) m.length = std::uint32_t(rng() % 64);  // many small ones too
      m.src_offset = m.dst_offset = off;
      m.imm = std::uint32_t(rng());
      off += m.length + 1;
      messages_.push_back(m);
      remote_of_[pair.first] = pair.second;
    }
  }

  void post_all() {
    for (std::size_t i = 0; i < messages_.size(); ++i) {
      const Message& m = messages_[i];
      const Time now = cl_.net.now();
      if (m.op == WrOpcode::kSend || m.op == WrOpcode::kSendWithImm ||
          m.op == WrOpcode::kRdmaWriteWithImm) {
        ASSERT_EQ(
            cl_.engine(1).post_recv(now, remote_of_[m.stream],
                                    make_recv(dst_, std::uint32_t(m.dst_offset), m.length, i)),
            Errc::kOk);
      }
      const bool read = m.op == WrOpcode::kRdmaRead;
      SendWr wr = make_wr(m.op, read ? rdst_ : src_, std::uint32_t(m.src_offset), m.length, i);
      wr.remote_addr = (read ? rsrc_ : dst_).addr() + m.dst_offset;
      wr.rkey = (read ? rsrc_ : dst_).keys.rkey;
      wr.imm = m.imm;
      ASSERT_EQ(cl_.engine(0).post_send(now, m.stream, wr), Errc::kOk);
      ++expected_recv_;
      if (!(m.op == WrOpcode::kSend || m.op == WrOpcode::kSendWithImm ||
            m.op == WrOpcode::kRdmaWriteWithImm)) {
        --expected_recv_;
      }
    }
  }

  bool run(Time limit) {
    return cl_.net.run_until(
        [&] {
          return cl_.rec(0).completions.size() >= messages_.size() &&
                 cl_.rec(1).completions.size() >= expected_recv_;
        },
        cl_.net.now() + limit);
  }

  // Exactly once, byte-exact, in stream order.
  void verify() {
    const auto& sends = cl_.rec(0).completions;
    ASSERT_EQ(sends.size(), messages_.size());
    std::map<StreamId, std::uint64_t> last;
    std::vector<int> seen(messages_.size());
    for (const Completion& c : sends) {
      ASSERT_EQ(c.status, WcStatus::kSuccess) << to_string(c.status);
      ASSERT_LT(c.wr_id, messages_.size());
      EXPECT_EQ(++seen[c.wr_id], 1) << "completed twice: " << c.wr_id;
      EXPECT_EQ(c.stream, messages_[c.wr_id].stream);
      if (last.count(c.stream)) {
        EXPECT_GT(c.wr_id, last[c.stream]) << "out of stream order";
      }
      last[c.stream] = c.wr_id;
    }
    const auto& recvs = cl_.rec(1).completions;
    ASSERT_EQ(recvs.size(), expected_recv_);
    std::map<StreamId, std::uint64_t> last_recv;
    std::vector<int> seen_recv(messages_.size());
    for (const Completion& c : recvs) {
      ASSERT_EQ(c.status, WcStatus::kSuccess);
      ASSERT_LT(c.wr_id, messages_.size());
      EXPECT_EQ(++seen_recv[c.wr_id], 1);
      const Message& m = messages_[c.wr_id];
      EXPECT_EQ(c.byte_len, m.length);
      if (m.op != WrOpcode::kSend) {
        EXPECT_EQ(c.imm, m.imm);
      }
      if (last_recv.count(c.stream)) {
        EXPECT_GT(c.wr_id, last_recv[c.stream]);
      }
      last_recv[c.stream] = c.wr_id;
    }
    for (const Message& m : messages_) {
      const bool read = m.op == WrOpcode::kRdmaRead;
      const auto& from = read ? rsrc_.bytes : src_.bytes;
      const auto& to = read ? rdst_.bytes : dst_.bytes;
      ASSERT_TRUE(std::equal(from.begin() + m.src_offset, from.begin() + m.src_offset + m.length,
                             to.begin() + m.dst_offset))
          << "bytes differ for a " << int(m.op) << " of " << m.length;
    }
  }

  std::uint64_t payload_bytes() const {
    std::uint64_t n = 0;
    for (const auto& m : messages_) n += m.length;
    return n;
  }

 private:
  static std::size_t total(int messages, std::uint32_t max_len) {
    return std::size_t(messages) * (max_len + 1) + 64;
  }

  Cluster& cl_;
  Buffer src_, dst_, rsrc_, rdst_;
  std::vector<std::pair<StreamId, StreamId>> pairs_;
  std::vector<Message> messages_;
  std::map<StreamId, StreamId> remote_of_;
  std::size_t expected_recv_ = 0;
};

}  // namespace mroce::testing
