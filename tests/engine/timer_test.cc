// Timers: delayed acknowledgement, retransmission timeout with exponential backoff,
// probing of a failed path with growing intervals, set-up retries from rotating source
// ports, and the deadline the engine reports.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "engine/workload.h"
#include "wire/codec.h"

namespace mroce::testing {
namespace {

TEST(Timers, DelayedAckWaitsAckDelay) {
  Cluster cl(2, 1, 1, 3, [](int, EngineConfig& c) {
    c.ack_every = 1000;
    c.ack_delay = 50 * kMicrosecond;
    c.paths = 1;
  });
  std::vector<std::pair<Time, wire::PacketType>> from_b;
  Time first_data_sent = 0;
  int data_seen = 0;
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> b) {
    wire::Packet p;
    if (wire::decode(b, {}, &p) != wire::DecodeError::kOk) return;
    if (host == 1) from_b.emplace_back(cl.net.now(), p.common.type);
    if (host == 0 && p.common.type == wire::PacketType::kData && data_seen++ == 0) {
      first_data_sent = cl.net.now();
    }
  });
  auto [a, b] = cl.connect(0, 1);
  (void)b;
  Buffer src(cl.engine(0), 8192), dst(cl.engine(1), 8192);
  cl.net.run_for(1 * kMillisecond);  // set-up done
  // Two segments; drop the second so only the first, without an ACK request, arrives.
  bool dropped = false;
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    wire::Packet p;
    if (wire::decode(bytes, {}, &p) != wire::DecodeError::kOk) return;
    if (host == 1) from_b.emplace_back(cl.net.now(), p.common.type);
    if (host == 0 && p.common.type == wire::PacketType::kData && first_data_sent == 0) {
      first_data_sent = cl.net.now();
    } else if (host == 0 && p.common.type == wire::PacketType::kData && !dropped) {
      dropped = true;
      cl.net.spine(0, 0).blackhole = true;
      cl.net.at(cl.net.now() + 1, [&] { cl.net.spine(0, 0).blackhole = false; });
    }
  });
  from_b.clear();
  first_data_sent = 0;
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 8192, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  cl.net.run_for(200 * kMicrosecond);
  ASSERT_FALSE(from_b.empty());
  EXPECT_EQ(from_b[0].second, wire::PacketType::kAck);
  // One hop (10 us) to arrive, then the delay.
  EXPECT_EQ(from_b[0].first, first_data_sent + 10 * kMicrosecond + 50 * kMicrosecond);
}

// Host 0 writes 100 bytes to host 1 over one path whose only spine then drops
// everything, and records when, and from which source port, host 0 sent DATA (NOPs
// included) over the next `span`.
struct BlackHoledWrite {
  BlackHoledWrite(Cluster& cl, Time span) : src(cl.engine(0), 4096), dst(cl.engine(1), 4096) {
    const StreamId a = cl.connect(0, 1).first;
    cl.net.run_for(1 * kMillisecond);
    cl.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t>) {
      if (host == 0 && m.cls == PacketClass::kData) {
        sends.push_back(cl.net.now());
        ports.push_back(m.src_port);
      }
    });
    cl.net.spine(0, 0).blackhole = true;
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 100, 1);
    wr.remote_addr = dst.addr();
    wr.rkey = dst.keys.rkey;
    EXPECT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
    cl.net.run_for(span);
    cl.net.set_tap({});
  }
  Buffer src, dst;
  std::vector<Time> sends;
  std::vector<std::uint16_t> ports;
};

TEST(Timers, TimeoutBacksOffThenPathFailsAndProbesSlowDown) {
  Cluster cl(2, 1, 1, 4, [](int, EngineConfig& c) {
    c.paths = 1;
    c.min_rto = 1 * kMillisecond;
    c.fail_after_timeouts = 3;
    c.probe_interval = 2 * kMillisecond;
    c.max_probe_interval = 16 * kMillisecond;
    c.connect_timeout = 10 * kSecond;
  });
  const BlackHoledWrite w(cl, 100 * kMillisecond);
  const std::vector<Time>& sends = w.sends;
  const std::vector<std::uint16_t>& ports = w.ports;
  // The moments the path sent something, relative to the first DATA packet.
  std::vector<Time> at;
  std::vector<std::uint16_t> port_at;
  for (std::size_t i = 0; i < sends.size(); ++i) {
    if (!at.empty() && sends[i] - sends[0] == at.back()) continue;
    at.push_back(sends[i] - sends[0]);
    port_at.push_back(ports[i]);
  }
  // DATA; tail probes every PTO = 2 x SRTT (2 x 50 us: the DATA, the last of its
  // message, and every probe ask for an ACK at once, so no ACK delay is waited for)
  // until the RTO; timeouts at 1 ms, then 2 and 4 ms later (the third fails the path and
  // the first probe leaves at once); then probes 2, 4, 8, 16, 16 ... ms apart.
  std::vector<Time> expected = {0};
  for (Time t = 100 * kMicrosecond; t < 1 * kMillisecond; t += 100 * kMicrosecond) {
    expected.push_back(t);
  }
  const std::size_t first_timeout = expected.size();
  for (Time t : {1, 3, 7, 9, 13, 21, 37, 53, 69, 85}) expected.push_back(t * kMillisecond);
  ASSERT_GE(at.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(at[i], expected[i]) << i;
  // Each probe after the first leaves from a new source port (re-entropy).
  for (std::size_t i = first_timeout + 3; i < expected.size(); ++i) {
    EXPECT_NE(port_at[i], port_at[i - 1]) << i;
  }
  // The deadline the engine reports is the next probe.
  EXPECT_GT(cl.engine(0).next_deadline(), cl.net.now());
  EXPECT_LE(cl.engine(0).next_deadline(), cl.net.now() + 16 * kMillisecond);
}

TEST(Timers, TailProbesStopAtTheirBoundThenTheRtoDecides) {
  Cluster cl(2, 1, 1, 4, [](int, EngineConfig& c) {
    c.paths = 1;
    c.min_rto = 5 * kMillisecond;
  });
  const BlackHoledWrite w(cl, 5 * kMillisecond + 1);
  const std::vector<Time>& sends = w.sends;
  // The DATA, 16 probes a PTO (100 us) apart, silence, then the timeout resends what
  // the path holds (its PSNs stay dense).
  ASSERT_GE(sends.size(), 18u);
  for (std::size_t i = 1; i <= 16; ++i) {
    EXPECT_EQ(sends[i] - sends[0], static_cast<Time>(i) * 100 * kMicrosecond) << i;
  }
  EXPECT_EQ(sends[17] - sends[0], 5 * kMillisecond);
}

TEST(Timers, ProbeTimeoutWaitsTheAckDelayOnlyAfterDataThatAskedForNoAck) {
  // Two paths, one black-holed spine, a write of four segments and a window of two:
  // each path carries one of the first two, neither of which asks for an ACK (the
  // message's last two would), so the receiver may hold their ACKs for ack_delay. Each
  // path's first probe waits 2 x SRTT + ack_delay; every later probe, a NOP that asks
  // for its ACK, 2 x SRTT.
  constexpr Time kAckDelay = 20 * kMicrosecond;
  Cluster cl(2, 1, 1, 6, [](int, EngineConfig& c) {
    c.paths = 2;
    c.ack_delay = kAckDelay;
    c.min_rto = 5 * kMillisecond;
    c.initial_window_bytes = 8192;
  });
  const StreamId a = cl.connect(0, 1).first;
  Buffer src(cl.engine(0), 16384), dst(cl.engine(1), 16384);
  cl.net.run_for(1 * kMillisecond);
  std::map<int, std::vector<Time>> sends;  // by path
  std::map<int, std::uint32_t> offset;     // of the segment each path carried first
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> b) {
    wire::Packet p;
    if (host != 0 || wire::decode(b, {}, &p) != wire::DecodeError::kOk ||
        p.common.type != wire::PacketType::kData) {
      return;
    }
    if (sends[p.common.path].empty()) offset[p.common.path] = p.data.offset;
    sends[p.common.path].push_back(cl.net.now());
  });
  cl.net.spine(0, 0).blackhole = true;
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 16384, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  cl.net.run_for(1 * kMillisecond);
  ASSERT_EQ(sends.size(), 2u);
  for (auto& [path, t] : sends) {
    EXPECT_LT(offset[path], 8192u) << path;
    ASSERT_GE(t.size(), 4u) << path;
    const Time pto = t[2] - t[1];
    EXPECT_GT(pto, 0);
    EXPECT_EQ(t[3] - t[2], pto) << path;
    EXPECT_EQ(t[1] - t[0], pto + kAckDelay) << path;
  }
}

// Writes `segments` full segments from host 0 to host 1 over one path (unless `tweak`
// sets more) and returns the DATA packets host 0 sent, in order. `on_data` sees them as
// each one leaves, and may change the network. A `warm_up` write of that many segments
// goes first, unwatched, and completes: the connection has measured its round trip.
std::vector<wire::Packet> one_path_write(
    std::uint32_t segments, const std::function<void(EngineConfig&)>& tweak,
    const std::function<void(Cluster&, const std::vector<wire::Packet>&)>& on_data = {},
    std::uint32_t warm_up = 0) {
  Cluster cl(2, 1, 1, 7, [&](int, EngineConfig& c) {
    c.paths = 1;
    tweak(c);
  });
  const StreamId a = cl.connect(0, 1).first;
  const std::uint32_t most = std::max(segments, warm_up);
  Buffer src(cl.engine(0), most * 4096), dst(cl.engine(1), most * 4096);
  cl.net.run_for(1 * kMillisecond);
  if (warm_up > 0) {
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, warm_up * 4096, 1);
    wr.remote_addr = dst.addr();
    wr.rkey = dst.keys.rkey;
    EXPECT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
    EXPECT_TRUE(cl.run_until_completions(0, 1, 10 * kMillisecond));
    cl.rec(0).completions.clear();
  }
  std::vector<wire::Packet> data;
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> b) {
    wire::Packet p;
    if (host == 0 && wire::decode(b, {}, &p) == wire::DecodeError::kOk &&
        p.common.type == wire::PacketType::kData) {
      data.push_back(p);
      if (on_data) on_data(cl, data);
    }
  });
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, segments * 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  EXPECT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  EXPECT_TRUE(cl.run_until_completions(0, 1, 10 * kMillisecond));
  return data;
}

TEST(Timers, RetransmissionAsksForAnAckAtOnce) {
  // One path, a write of three segments whose first is lost: the ACK for the second
  // shows the hole, and the resent segment asks for its ACK at once.
  const std::vector<wire::Packet> data = one_path_write(
      3, [](EngineConfig&) {},
      [](Cluster& cl, const std::vector<wire::Packet>& d) {
        cl.net.spine(0, 0).blackhole_from = d.size() == 1 ? 0 : -1;  // the first DATA only
      });
  ASSERT_EQ(data.size(), 4u);
  EXPECT_EQ(data[0].common.flags & wire::flags::kAckRequest, 0);
  EXPECT_EQ(data[1].common.flags & wire::flags::kAckRequest, 0);
  EXPECT_NE(data[2].common.flags & wire::flags::kAckRequest, 0);  // the message's last
  const wire::Packet& resent = data[3];
  EXPECT_EQ(resent.data.psn, data[0].data.psn);
  EXPECT_EQ(resent.data.offset, 0u);
  EXPECT_NE(resent.data.flags & wire::data_flags::kRetransmit, 0);
  EXPECT_NE(resent.common.flags & wire::flags::kAckRequest, 0);
}

// The DATA packets of one 8-segment write over one path whose window holds three.
std::vector<wire::Packet> write_through_a_three_packet_window(Time ack_delay) {
  return one_path_write(8, [&](EngineConfig& c) {
    c.initial_window_bytes = 3 * 4096;
    c.ack_delay = ack_delay;
  });
}

TEST(Timers, PacketThatFillsThePathWindowAsksForAnAckWhenTheAckDelayWouldMatter) {
  // The third segment leaves the window full: the path can do nothing more until an ACK
  // returns. With an ACK delay longer than half the round trip (here far longer) the
  // sender asks for that ACK at once; with a short one it leaves the receiver to hold it.
  const std::vector<wire::Packet> slow_acks = write_through_a_three_packet_window(kMillisecond);
  ASSERT_GE(slow_acks.size(), 8u);
  EXPECT_EQ(slow_acks[0].common.flags & wire::flags::kAckRequest, 0);
  EXPECT_EQ(slow_acks[1].common.flags & wire::flags::kAckRequest, 0);
  EXPECT_NE(slow_acks[2].common.flags & wire::flags::kAckRequest, 0);
  EXPECT_EQ(slow_acks[2].data.offset, 2u * 4096);  // not the message's last segment

  const std::vector<wire::Packet> quick_acks = write_through_a_three_packet_window(kMicrosecond);
  ASSERT_GE(quick_acks.size(), 8u);
  EXPECT_EQ(quick_acks[2].data.offset, 2u * 4096);
  EXPECT_EQ(quick_acks[2].common.flags & wire::flags::kAckRequest, 0);
}

bool fresh(const wire::Packet& p) {
  return (p.data.flags & wire::data_flags::kRetransmit) == 0;
}
// A segment's first transmission.
bool first_send(const wire::Packet& p) {
  return p.data.op != wire::DataOp::kNop && fresh(p);
}
// A tail probe: a NOP sent for the first time.
bool fresh_nop(const wire::Packet& p) {
  return p.data.op == wire::DataOp::kNop && fresh(p);
}

// The DATA packets of a write of `segments` segments over one path that loses the first
// transmissions of the segments numbered in `lost` (1-based) and nothing else.
std::vector<wire::Packet> write_losing(std::vector<std::uint32_t> lost, std::uint32_t segments = 16,
                                       std::uint32_t warm_up = 0) {
  std::uint32_t first_sends = 0;
  return one_path_write(
      segments, [](EngineConfig&) {},
      [&](Cluster& cl, const std::vector<wire::Packet>& d) {
        const bool first = first_send(d.back());
        if (first) ++first_sends;
        // Set for each DATA as it leaves; the ACKs, from host 1, always pass.
        const bool drop = first && std::find(lost.begin(), lost.end(), first_sends) != lost.end();
        cl.net.spine(0, 0).blackhole_from = drop ? 0 : -1;
      },
      warm_up);
}

// Index of the first tail probe in `data`.
std::size_t first_tail_probe(const std::vector<wire::Packet>& data) {
  return std::size_t(std::find_if(data.begin(), data.end(), fresh_nop) - data.begin());
}

TEST(Timers, TailProbesGoInPairsAtTheEndOfTheDataOnPathsThatLosePacketsAtRandom) {
  // The last segment is lost, so the path's tail needs a probe. On a path that lost
  // three earlier segments to damage (no marks, no queueing; resent and acknowledged
  // before the last leaves), the probe goes twice at once, two sequence numbers each
  // asking for an ACK; on a clean path, once.
  const std::vector<wire::Packet> lossy = write_losing({2, 4, 6, 16});
  const std::size_t i = first_tail_probe(lossy);
  ASSERT_LT(i + 1, lossy.size());
  const wire::Packet& second = lossy[i + 1];
  EXPECT_EQ(second.data.op, wire::DataOp::kNop);
  EXPECT_EQ(second.data.psn, lossy[i].data.psn + 1);
  EXPECT_LT(second.data.timestamp - lossy[i].data.timestamp, 1000u);  // ns: at once
  EXPECT_NE(lossy[i].common.flags & wire::flags::kAckRequest, 0);
  EXPECT_NE(second.common.flags & wire::flags::kAckRequest, 0);

  const std::vector<wire::Packet> clean = write_losing({16});
  const std::size_t j = first_tail_probe(clean);
  ASSERT_LT(j + 1, clean.size());
  EXPECT_NE(clean[j + 1].data.op, wire::DataOp::kNop);  // the lost segment, resent
  EXPECT_GT(clean[j + 1].data.timestamp, clean[j].data.timestamp);

  // Sixteen paths losing 30% of DATA at random, a 256-segment write: paths probe their
  // tails all along, but in pairs only once every segment has been sent.
  std::size_t first_sends = 0, last_first_send = 0;
  const std::vector<wire::Packet> many = one_path_write(
      256, [](EngineConfig& c) { c.paths = 16; },
      [&](Cluster& cl, const std::vector<wire::Packet>& d) {
        cl.net.spine(0, 0).loss = 0.3;
        if (first_send(d.back()) && ++first_sends == 256) last_first_send = d.size() - 1;
      });
  // A pair is the path's next PSN, also a fresh NOP, sent within pacing's few
  // microseconds; a repeated single probe waits a PTO (over 40 us here).
  int probes_before = 0, pairs_before = 0;
  for (std::size_t n = 0; n < last_first_send; ++n) {
    if (!fresh_nop(many[n])) continue;
    ++probes_before;
    for (std::size_t m = n + 1; m < many.size(); ++m) {
      const wire::Packet& next = many[m];
      if (next.common.path != many[n].common.path) continue;
      pairs_before += fresh_nop(next) && next.data.psn == many[n].data.psn + 1 &&
                      next.data.timestamp - many[n].data.timestamp < 10'000;
      break;
    }
  }
  EXPECT_GT(probes_before, 0);
  EXPECT_EQ(pairs_before, 0);
}

TEST(Timers, AMessageCompletedAtTheReceiverIsAcknowledgedOnEveryPathAtOnce) {
  // A 32-segment write over 16 paths, two segments each; only the message's last asks
  // for an ACK, and the receiver holds the others for a whole millisecond (ack_every
  // 256). The message is complete once every path's packets are placed, and the sender
  // completes it only on every path's ACK: they all go the moment it completes, so the
  // write completes a round trip or so after its last packet, not an ACK delay later,
  // and no path needs a tail probe to draw its ACK.
  Cluster cl(2, 1, 1, 7, [](int, EngineConfig& c) {
    c.paths = 16;
    c.ack_every = 256;
    c.ack_delay = kMillisecond;
  });
  const StreamId a = cl.connect(0, 1).first;
  Buffer src(cl.engine(0), 32 * 4096), dst(cl.engine(1), 32 * 4096);
  cl.net.run_for(1 * kMillisecond);
  Time last_data = 0;
  std::set<std::uint8_t> paths;
  int probes = 0;
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> b) {
    wire::Packet p;
    if (host == 0 && wire::decode(b, {}, &p) == wire::DecodeError::kOk &&
        p.common.type == wire::PacketType::kData) {
      if (p.data.op == wire::DataOp::kNop) {
        ++probes;
        return;
      }
      last_data = cl.net.now();
      paths.insert(p.common.path);
    }
  });
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 32 * 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 10 * kMillisecond));
  EXPECT_EQ(paths.size(), 16u);
  EXPECT_LT(cl.net.now() - last_data, 200 * kMicrosecond);
  EXPECT_EQ(probes, 0);
}

// The SRTT of a lossless write of `segments` segments over one path (the network of
// write_losing adds no queueing, so it is the round trip).
Time one_path_srtt(std::uint32_t segments) {
  Cluster cl(2, 1, 1, 7, [](int, EngineConfig& c) { c.paths = 1; });
  const StreamId a = cl.connect(0, 1).first;
  Buffer src(cl.engine(0), segments * 4096), dst(cl.engine(1), segments * 4096);
  cl.net.run_for(1 * kMillisecond);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, segments * 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  EXPECT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  EXPECT_TRUE(cl.run_until_completions(0, 1, 10 * kMillisecond));
  PathStats ps;
  EXPECT_TRUE(cl.engine(0).path_stats(cl.engine(0).stream_connection(a), 0, &ps));
  return ps.srtt;
}

// Index of the first transmission of the segment at `offset` in `data`.
std::size_t first_send_of(const std::vector<wire::Packet>& data, std::uint64_t offset) {
  return std::size_t(std::find_if(data.begin(), data.end(),
                                  [&](const wire::Packet& p) {
                                    return first_send(p) && p.data.offset == offset;
                                  }) -
                     data.begin());
}

TEST(Timers, AtTheEndOfTheDataATailProbeWaitsTheLatestRoundTripNotTwoSrtt) {
  // One path, a 4-segment write (too short for the chase below; a first write has
  // measured the round trip) whose last segment is lost. Once nothing is left to send,
  // the connection waits for that path alone: its probe goes 1.25 round trips (the
  // latest measured) after the lost packet, not a PTO (2 x SRTT) after it.
  const std::vector<wire::Packet> data = write_losing({4}, 4, 4);
  const std::size_t lost = first_send_of(data, 3 * 4096);
  const std::size_t probe = first_tail_probe(data);
  ASSERT_LT(lost, probe);
  ASSERT_LT(probe, data.size());
  const Time gap = data[probe].data.timestamp - data[lost].data.timestamp;
  const Time srtt = one_path_srtt(4);
  ASSERT_GT(srtt, 0u);
  EXPECT_GE(gap, srtt);
  EXPECT_LT(gap, srtt * 3 / 2);
}

TEST(Timers, AfterALongBurstIntoMarkingQueuesEveryPathChasesItsLastPacketAtOnce) {
  // One path marking 30% of packets CE, a 16-segment write (8 or more per path) whose
  // last segment is lost: the probe follows it at once, and its ACK brings the resend a
  // round trip after the lost packet left, where the timed probe alone would take 1.25
  // round trips more.
  std::uint32_t first_sends = 0;
  const std::vector<wire::Packet> data = one_path_write(
      16, [](EngineConfig&) {},
      [&](Cluster& cl, const std::vector<wire::Packet>& d) {
        cl.net.spine(0, 0).ce = 0.3;
        if (first_send(d.back())) ++first_sends;
        cl.net.spine(0, 0).blackhole_from = first_send(d.back()) && first_sends == 16 ? 0 : -1;
      });
  const std::size_t lost = first_send_of(data, 15 * 4096);
  const std::size_t probe = first_tail_probe(data);
  ASSERT_LT(lost, probe);
  ASSERT_LT(probe, data.size());
  const Time srtt = one_path_srtt(16);
  ASSERT_GT(srtt, 0u);
  EXPECT_LT(data[probe].data.timestamp - data[lost].data.timestamp, srtt / 4);
  const auto resend =
      std::find_if(data.begin() + std::ptrdiff_t(probe), data.end(), [](const wire::Packet& p) {
        return p.data.op != wire::DataOp::kNop && p.data.offset == 15 * 4096;
      });
  ASSERT_NE(resend, data.end());
  EXPECT_LT(resend->data.timestamp - data[lost].data.timestamp, srtt * 3 / 2);

  // Sixteen paths, no loss. With marks, after 16 segments a path every path with packets
  // still in flight (here most) sends one probe the moment the data runs out. After 4 a
  // path none does, nor after 16 without marks: the receiver's ACKs on every path at
  // once, as the message completes, come as soon, and the probes would only add packets.
  const auto probes_of = [](std::uint32_t segments, double ce) {
    std::size_t last_first_send = 0;
    const std::vector<wire::Packet> d = one_path_write(
        segments, [](EngineConfig& c) { c.paths = 16; },
        [&](Cluster& cl, const std::vector<wire::Packet>& sent) {
          cl.net.spine(0, 0).ce = ce;
          if (first_send(sent.back())) last_first_send = sent.size() - 1;
        });
    std::map<std::uint8_t, std::uint32_t> probes;  // path: probes
    std::uint32_t latest = 0;                      // us after the last new packet
    for (std::size_t n = last_first_send; n < d.size(); ++n) {
      if (!fresh_nop(d[n])) continue;
      ++probes[d[n].common.path];
      latest = std::max(latest, (d[n].data.timestamp - d[last_first_send].data.timestamp) / 1000);
    }
    return std::pair(probes, latest);
  };
  const auto [long_burst, latest] = probes_of(256, 0.1);
  EXPECT_GE(long_burst.size(), 8u);
  for (const auto& [path, n] : long_burst) EXPECT_EQ(n, 1u) << "path " << int(path);
  EXPECT_LT(latest, 5u) << "us after the last new packet";
  EXPECT_TRUE(probes_of(64, 0.1).first.empty());
  EXPECT_TRUE(probes_of(256, 0).first.empty());
}

TEST(Timers, MessagesPostedOneAtATimeAreShortBurstsHoweverLongTheStream) {
  // Sixteen paths marking 10% CE; twelve writes of 16 segments (one a path), each posted
  // the moment the previous one's last segment leaves, so packets stay in flight all
  // along while the data runs out at every message's end. Each message is a burst of its
  // own, far under 8 packets a path: no probe chases any of them (192 packets in all,
  // which counted from the last idle moment would pass 128).
  constexpr int kWrites = 12;
  Cluster cl(2, 1, 1, 7, [](int, EngineConfig& c) { c.paths = 16; });
  const StreamId a = cl.connect(0, 1).first;
  Buffer src(cl.engine(0), 16 * 4096), dst(cl.engine(1), 16 * 4096);
  cl.net.run_for(1 * kMillisecond);
  int posted = 0, probes = 0;
  const auto post = [&] {
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 16 * 4096, std::uint64_t(++posted));
    wr.remote_addr = dst.addr();
    wr.rkey = dst.keys.rkey;
    EXPECT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  };
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> b) {
    wire::Packet p;
    if (host != 0 || wire::decode(b, {}, &p) != wire::DecodeError::kOk ||
        p.common.type != wire::PacketType::kData) {
      return;
    }
    cl.net.spine(0, 0).ce = 0.1;
    if (fresh_nop(p)) ++probes;
    if (first_send(p) && p.data.offset == 15 * 4096 && posted < kWrites) {
      cl.net.at(cl.net.now() + 1, post);  // outside the engine's own call
    }
  });
  post();
  ASSERT_TRUE(cl.run_until_completions(0, kWrites, 20 * kMillisecond));
  EXPECT_EQ(posted, kWrites);
  EXPECT_EQ(probes, 0);
}

TEST(Timers, SetUpRetriesBackOffFromRotatingPortsThenFail) {
  Cluster cl(2, 1, 4, 5, [](int, EngineConfig& c) {
    c.connect_retry = 10 * kMillisecond;
    c.connect_timeout = 200 * kMillisecond;
  });
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).blackhole = true;
  std::vector<Time> times;
  std::vector<std::uint16_t> ports;
  cl.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t>) {
    if (host == 0) {
      times.push_back(cl.net.now());
      ports.push_back(m.src_port);
    }
  });
  StreamId s = 0;
  ASSERT_EQ(cl.engine(0).create_stream({}, &s), Errc::kOk);
  ASSERT_EQ(cl.engine(0).connect_stream(0, s, cl.hosts[1]->endpoint(), 1), Errc::kOk);
  Buffer buf(cl.engine(0), 64);
  ASSERT_EQ(cl.engine(0).post_send(0, s, make_wr(WrOpcode::kSend, buf, 0, 64, 1)), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 1 * kSecond));
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(cl.engine(0).stream_state(s), StreamState::kError);
  // Each try is a pair of CONNECTs sent together.
  ASSERT_GE(times.size(), 8u);
  for (std::size_t i = 0; i + 1 < times.size(); i += 2) EXPECT_EQ(times[i], times[i + 1]);
  EXPECT_EQ(times[2] - times[0], 10 * kMillisecond);
  EXPECT_EQ(times[4] - times[2], 20 * kMillisecond);
  EXPECT_EQ(times[6] - times[4], 40 * kMillisecond);
  std::map<std::uint16_t, int> distinct;
  for (auto p : ports) ++distinct[p];
  EXPECT_EQ(distinct.size(), ports.size());
  EXPECT_EQ(cl.engine(0).next_deadline(), kNever);  // nothing left to do
}

TEST(Timers, SetUpPacketsInPairsRideOutLoss) {
  // Every packet, set-up included, is lost with probability 0.3 on every spine, and
  // both ends open at once. With set-up packets sent alone, 18 of these 32 set-ups are
  // complete before the 1 ms retry; sent in pairs over two routes, all 32.
  constexpr int kPeers = 32;
  Cluster cl(kPeers + 1, 1, 4, 11);
  for (int s = 0; s < 4; ++s) {
    cl.net.spine(0, s).loss = 0.3;
    cl.net.spine(0, s).loss_all = true;
  }
  std::vector<std::pair<StreamId, StreamId>> streams;
  for (int i = 1; i <= kPeers; ++i) streams.push_back(cl.connect(0, i));
  cl.net.run_for(900 * kMicrosecond);  // before any retry
  int up = 0;
  for (int i = 1; i <= kPeers; ++i) {
    up += cl.engine(0).stream_state(streams[i - 1].first) == StreamState::kReady &&
          cl.engine(i).stream_state(streams[i - 1].second) == StreamState::kReady;
  }
  std::printf("  %d of %d set-ups complete on both sides before the first retry\n", up, kPeers);
  EXPECT_GE(up, kPeers * 2 / 3);
}

TEST(Timers, IdleEngineHasNoDeadline) {
  Cluster cl(2, 1, 2, 6);
  auto [a, b] = cl.connect(0, 1);
  (void)a;
  (void)b;
  cl.net.run_for(50 * kMillisecond);
  EXPECT_EQ(cl.engine(0).next_deadline(), kNever);
  EXPECT_EQ(cl.engine(1).next_deadline(), kNever);
}

}  // namespace
}  // namespace mroce::testing
