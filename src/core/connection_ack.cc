// The sending half's feedback: ACKs (SACK per path, RTT, ECN counts, the receiver's
// rate hint), NACKs, loss recovery on the path that lost, timeouts, and the line
// between congestion (marks, RTT growth: shrink the window), a bad route (loss far above
// the other paths', without marks: a new route) and failure (silence: fail the path).
#include <algorithm>
#include <bit>
#include <cmath>

#include "core/connection.h"
#include "core/seq.h"

namespace mroce {

namespace {

constexpr std::uint32_t kHeaderAllowance = 64;  // per-packet header bytes in window sizes
constexpr double kBadRouteLossRate = 0.5;       // loss EWMA that reads as a bad route
constexpr double kLossyPathRate = 1.0 / 16;     // loss EWMA above which tail probes go in pairs
constexpr double kFarMoreLoss = 4;              // a bad route's loss EWMA against the others' mean
// New packets per path since the data last ran out, from which the data's end is chased
// by a probe on every path at once (a 1 MB message over 16 paths has 15).
constexpr std::size_t kChaseBurstPerPath = 8;

// True when the bitmap claims nothing at or beyond snd_nxt.
bool sack_within(const wire::AckHeader& a, std::uint32_t snd_nxt) {
  const std::int32_t limit = seq_diff(a.cum_psn + 1, snd_nxt);  // bits [limit, 256) must be 0
  if (limit >= 256) return true;
  const std::uint32_t first = static_cast<std::uint32_t>(std::max(limit, 0));
  for (std::uint32_t w = first / 64; w < 4; ++w) {
    std::uint64_t bits = a.sack[w];
    if (w == first / 64) bits &= ~std::uint64_t{0} << (first % 64);
    if (bits) return false;
  }
  return true;
}

}  // namespace

std::uint32_t Connection::max_path_window() const {
  return path_window_packets_ * (mss_ + kHeaderAllowance);
}

// A connection that starts at a few hundred KiB and doubles per round trip needs most
// of a long-haul transfer to reach the line rate, where RoCE starts at it: 14 ms of a
// 15 ms ring all-reduce across a 1 ms link. With bdp_start set, slow start opens the
// window at once to bdp_start line-rate round trips, up to every path's limit, and a
// path may hold the whole SACK span when its share of that needs it. The round trip is
// the set-up's at first (a lower bound, whichever copy was answered), then the first
// sample's. Off by default: it needs a true line rate, and a round trip that is mostly
// distance. Inside a fabric, set-ups queue behind data (4,032 at once in E3), and a
// window opened to that round trip is a burst into the queue that inflated it.
void Connection::open_to_bdp(Time rtt) {
  if (cfg_.bdp_start <= 0 || !cc_.slow_start() || paths_.size() == 0) return;
  const double bdp = cfg_.bdp_start * double(cfg_.line_rate_bps) / 8 * double(rtt) / kSecond;
  // Paths that may be opened (max_paths) are sized to the round trip even when the
  // start window already exceeds it.
  const bool may_open = paths_.size() < announced_paths();
  if (bdp <= cc_.window() && !may_open) return;
  if (bdp > double(paths_.size()) * max_path_window() && path_window_packets_ < wire::kSackBits) {
    path_window_packets_ = wire::kSackBits;
    paths_.widen(path_window_packets_);
  }
  // Past the SACK span only more paths hold more.
  add_paths(static_cast<std::size_t>(std::ceil(bdp / max_path_window())));
  if (bdp <= cc_.window()) return;
  const double paths = double(paths_.size());
  const auto target = static_cast<std::uint32_t>(std::min(bdp, paths * max_path_window()));
  cc_.open_to(target);
  const std::uint32_t per_path = target / static_cast<std::uint32_t>(paths_.size());
  for (TxPath& p : paths_) {
    if (p.active() && p.cwnd() < per_path && p.cwnd() < p.ssthresh) {
      paths_.set_cwnd(p, std::min(per_path, p.ssthresh));
    }
  }
}

// Past slow start the windows gain about a packet per round trip, which at a long-haul
// round trip is too slow to matter: a 2 ms connection cut by an eighth at 3.9 MB would
// take over 100 round trips to regain it. Where the RTT floor is longer than increase_interval,
// the gain is a packet per increase_interval instead, as fast in time as a short path's.
std::uint32_t Connection::increase_boost(const TxPath& p) const {
  // Every ACK asks: inside a fabric a comparison answers, not a division.
  const Time floor = p.rtt.min_rtt();
  if (cfg_.increase_interval <= 0 || floor < 2 * cfg_.increase_interval) return 1;
  return static_cast<std::uint32_t>(std::min<Time>(floor / cfg_.increase_interval, 1 << 16));
}

Time Connection::path_rto(const TxPath& p) const {
  const Time base = p.rtt.rto(cfg_.min_rto, cfg_.max_rto, cfg_.ack_delay);
  return std::min(base << std::min<std::uint32_t>(p.timeouts, 6), cfg_.max_rto);
}

TxPath* Connection::feedback_path(const wire::CommonHeader& c) {
  if (c.path >= paths_.size()) {
    ctx_.drop(DropReason::kMalformed);
    return nullptr;
  }
  TxPath& p = paths_[c.path];
  if (c.generation != p.generation) {
    ctx_.drop(DropReason::kStaleGeneration);
    return nullptr;
  }
  return &p;
}

// The steps on_ack takes are defined inline below it: each runs once per ACK, and out of
// line the calls cost about 5% of an ACK's processing.
void Connection::on_ack(Time now, const wire::Packet& pkt) {
  const wire::AckHeader& a = pkt.ack;
  TxPath* path = feedback_path(pkt.common);
  if (!path) return;
  TxPath& p = *path;
  paths_.may_send(p);
  // Every generation counts from the ISN: a cumulative point behind it, or beyond
  // snd_nxt, was never a receiver's.
  if (a.cum_psn - tx_isn_ > p.snd_nxt - tx_isn_ || !sack_within(a, p.snd_nxt)) {
    ctx_.drop(DropReason::kBadAck);
    return;
  }
  const Acked acked = acknowledge(now, p, a);
  if (acked.packets > 0) detect_losses(now, p, acked);
  if (older_than_read(p, a)) {
    // Replayed, duplicated or overtaken: its SACK bits are still true, but its echo
    // and counters are stale, and a replay must not stretch the RTT nor feed the window.
    ctx_.drop(DropReason::kOldAck);
    if (acked.packets > 0) note_progress(now, p, acked.packets);
    return;
  }
  sample_rtt(now, p, a);
  const Reported reported = read_counters(p, a);
  cc_.on_rate_hint(a.rate_kbps);
  if (acked.packets > 0) note_progress(now, p, acked.packets);
  update_windows(now, p, acked.bytes, reported.rx, reported.ce);
  if (p.active() && p.loss_rate > kBadRouteLossRate && p.stats.lost_packets >= 8 &&
      loses_far_more(p)) {
    // Off home too, and back later like a path that failed; home that still loses
    // this much is a failed homecoming.
    if (p.homing) {
      p.home_after = std::min(2 * p.home_after, p.scout ? kLastScouting : kLastHomecoming);
    }
    reroute_path(now, p);
    p.homing = false;
    if (p.home_at == kNever) schedule_home(now, p);
  }
}

// Loss the connection's other paths share (random loss all over the fabric, drops at
// the receiver's socket) is no route's fault, and a new port would not escape it: only
// a path losing several times what the others lose at the same time has a bad route.
bool Connection::loses_far_more(const TxPath& p) const {
  double others = 0;
  std::uint32_t n = 0;
  for (const TxPath& q : paths_) {
    if (&q == &p || !q.active()) continue;
    others += q.loss_rate;
    ++n;
  }
  return n == 0 || p.loss_rate > kFarMoreLoss * others / n;
}

inline Connection::Acked Connection::acknowledge(Time now, TxPath& p, const wire::AckHeader& a) {
  Acked acked;
  acked.highest = p.snd_una;
  const auto one = [&](std::uint32_t psn) {
    TxEntry& e = p.entry(psn);
    if (e.acked) return;
    paths_.acknowledged(p, e);
    ++acked.packets;
    acked.bytes += e.bytes;
    acked.retransmission |= e.retransmitted;
    p.largest_acked_order = std::max(p.largest_acked_order, e.order);
    if (seq_lt(acked.highest, psn + 1)) acked.highest = psn + 1;
    const SegmentRef seg = e.seg;
    segment_acked(now, seg);
  };
  // Everything below the cumulative point, then the bits set above it.
  for (std::uint32_t psn = p.snd_una; seq_lt(psn, a.cum_psn); ++psn) one(psn);
  const std::uint32_t base = a.cum_psn + 1;
  for (std::uint32_t w = 0; w < 4; ++w) {
    for (std::uint64_t bits = a.sack[w]; bits != 0; bits &= bits - 1) {
      const std::uint32_t psn = base + w * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
      if (!seq_lt(psn, p.snd_una)) one(psn);  // bits below snd_una are settled
    }
  }
  while (p.snd_una != p.snd_nxt && p.entry(p.snd_una).acked) ++p.snd_una;
  paths_.settle(p);
  return acked;
}

// On one path packets never overtake each other: whatever was sent before a packet that
// arrived, and did not arrive, was lost. Resend exactly that, on this path. First
// transmissions go out in PSN order, so unless a retransmission was just acknowledged
// only the PSNs below the highest acknowledged can be affected.
inline void Connection::detect_losses(Time now, TxPath& p, const Acked& acked) {
  const std::uint32_t end = acked.retransmission ? p.snd_nxt : acked.highest;
  for (std::uint32_t psn = p.snd_una; seq_lt(psn, end); ++psn) {
    TxEntry& e = p.entry(psn);
    if (e.in_flight && e.order < p.largest_acked_order) declare_lost(now, p, e, true);
  }
}

inline void Connection::sample_rtt(Time now, TxPath& p, const wire::AckHeader& a) {
  const std::uint32_t elapsed = static_cast<std::uint32_t>(now) - a.echo_timestamp;
  if (elapsed >= (1u << 31) || elapsed < a.ack_delay) return;  // from the future, or garbled
  const Time sample = elapsed - a.ack_delay;
  p.rtt.sample(sample);
  latest_rtt_ = sample;
  srtt_ = (7 * srtt_ + sample) / 8;
  if (!rtt_sampled_) {
    rtt_sampled_ = true;
    open_to_bdp(sample);
  }
}

// The receiver counts the packets it accepted on the path and echoes the latest one's
// timestamp: an ACK counting fewer, or as many with an echo no newer, says nothing the
// last one read did not.
inline bool Connection::older_than_read(const TxPath& p, const wire::AckHeader& a) const {
  if (!p.counters_valid) return false;
  const auto rx = std::int32_t(a.rx_packets - p.reported_rx);
  return rx < 0 || (rx == 0 && std::int32_t(a.echo_timestamp - p.reported_echo) <= 0);
}

// The receiver's cumulative counters of packets received and CE-marked on the path:
// what is new since the last ACK read.
inline Connection::Reported Connection::read_counters(TxPath& p, const wire::AckHeader& a) {
  Reported r;
  r.rx = a.rx_packets - (p.counters_valid ? p.reported_rx : 0);
  r.ce = a.ce_packets - (p.counters_valid ? p.reported_ce : 0);
  if (p.counters_valid && (std::int32_t(r.rx) < 0 || std::int32_t(r.ce) < 0)) {
    return Reported{};  // the counters only grow: a late ACK's are older
  }
  p.reported_rx = a.rx_packets;
  p.reported_ce = a.ce_packets;
  p.reported_echo = a.echo_timestamp;
  p.counters_valid = true;
  r.ce = std::min(r.ce, r.rx);  // no more marks than packets: alpha stays <= 1
  p.stats.ce_packets += r.ce;
  cc_.on_marks(r.ce);
  return r;
}

// Something was acknowledged: the path works, whatever its timers thought.
inline void Connection::note_progress(Time now, TxPath& p, std::uint32_t packets) {
  p.last_progress = now;
  p.timeouts = 0;
  p.quiet = false;  // on_ack has put it back in the may-send mask
  p.tail_probes_sent = 0;
  p.stats.acked_packets += packets;
  for (std::uint32_t i = 0; i < packets && p.loss_rate > 1e-6; ++i) p.loss_rate *= 15.0 / 16;
  if (!p.active()) recover_path(now, p);
  if (p.homing) home_answered(now, p);
}

void Connection::on_nack(Time now, const wire::Packet& pkt) {
  const wire::NackHeader& n = pkt.nack;
  TxPath* path = feedback_path(pkt.common);
  if (!path) return;
  TxPath& p = *path;
  if (seq_lt(n.psn, p.snd_una) || !seq_lt(n.psn, p.snd_nxt)) return;  // already settled
  TxEntry& e = p.entry(n.psn);
  if (e.acked) return;
  const SegmentRef seg = e.seg;
  // The receiver did not take this sequence number: fill it with a NOP at once, and
  // deal with the content by what the NACK says.
  e.seg = SegmentRef{};
  if (e.in_flight) declare_lost(now, p, e, false);
  if (seg.kind != SegmentKind::kRequest || !segment_valid(seg)) return;
  Stream& s = *ctx_.stream(seg.stream);
  if (s.remote != n.stream || seg.msn != n.msn) return;
  Wqe& w = s.wqe(seg.msn);
  switch (n.code) {
    case wire::NackCode::kReceiverNotReady:
    case wire::NackCode::kNoResources:
      if (now >= w.rnr_episode_end) {
        if (s.config.rnr_retry != 7) {
          if (w.rnr_left == 0) {
            fail_wqe(now, s, w, WcStatus::kRnrRetryExcErr);
            return;
          }
          --w.rnr_left;
        }
        w.rnr_episode_end = now + s.config.rnr_timer;
      }
      s.rnr_until = now + s.config.rnr_timer;
      rnr_waiting_.push(Waiting{seg, now + s.config.rnr_timer});
      return;
    case wire::NackCode::kRemoteAccess:
      fail_wqe(now, s, w, WcStatus::kRemAccessErr);
      return;
    case wire::NackCode::kInvalidRequest:
      fail_wqe(now, s, w, WcStatus::kRemInvReqErr);
      return;
    case wire::NackCode::kRemoteOperation:
      fail_wqe(now, s, w, WcStatus::kRemOpErr);
      return;
  }
}

void Connection::segment_acked(Time now, const SegmentRef& seg) {
  if (seg.kind == SegmentKind::kResponse) {
    if (seg.stream >= responses_.size()) return;
    Response& r = responses_[seg.stream];
    if (r.used && r.msn == seg.msn && ++r.acked == r.segments) r.used = false;
    return;
  }
  if (seg.kind != SegmentKind::kRequest || !segment_valid(seg)) return;
  Stream& s = *ctx_.stream(seg.stream);
  Wqe& w = s.wqe(seg.msn);
  if (w.is_read() || w.is_atomic()) return;  // complete when the response lands
  if (++w.acked == w.segments) {
    w.done = true;
    complete_sends(now, s);
  }
}

void Connection::declare_lost(Time now, TxPath& p, TxEntry& e, bool congestion_check) {
  if (!paths_.lost(p, e)) return;
  ++p.stats.lost_packets;
  // Loss on a path that is marking or queueing is congestion; loss on a quiet path is
  // damage (a bad link, a hot spot) and does not shrink the window, but counts towards
  // re-routing the path. Where ECN marks, DCTCP's alpha already measures the
  // congestion, and the loss cuts by it as a mark would; without ECN, loss is the only
  // measure, and halves.
  if (congestion_check && (p.avoid_until > now || (!cc_.ecn_seen() && p.rtt.inflated()))) {
    on_congestion_signal(now, p, cc_.ecn_seen() ? std::max(p.alpha, 0.25) : 1.0);
  } else {
    p.loss_rate = p.loss_rate * 15.0 / 16 + 1.0 / 16;
  }
}

Time Connection::path_pto(const TxPath& p) const {
  return 2 * p.rtt.srtt() + (p.ack_requested ? 0 : cfg_.ack_delay);
}

// With nothing left to send, the connection waits for its paths' last packets alone.
// The receiver acknowledges on every path at once when a message completes, so every
// ACK is due a round trip after the last new packet left (or after the path's own later
// send), the round trip being the latest measured on any path: the queues that raised
// a path's SRTT drain as the data runs out. A quarter more allows for the paths'
// different queues; a probe too early costs a NOP and an ACK.
Time Connection::tail_probe_due(const TxPath& p) const {
  const Time pto = p.last_send + path_pto(p);
  if (!rtt_sampled_ || has_unsent()) return pto;
  const Time rtt = latest_rtt_ + latest_rtt_ / 4;
  const Time own = p.last_send + rtt + (p.ack_requested ? 0 : cfg_.ack_delay);
  return std::min({pto, own, std::max(p.last_send, tail_since_) + rtt});
}

// The connection's data has just run out: every path's tail probe may be due sooner.
void Connection::arm_tail_probes() {
  // After a long burst into queues that were marking, every path probes at once (SPEC
  // 6.5): a last packet lost in such a queue has nothing behind it to show the gap, and
  // the losses of the last round trip are not yet known. So does a path losing at random.
  const bool chase = burst_packets_ >= kChaseBurstPerPath * paths_.size();
  const bool marking = last_ce_at_ != kNever && last_ce_at_ + 2 * latest_rtt_ >= tail_since_;
  for (TxPath& p : paths_) {
    if (!p.active() || p.inflight() == 0 || p.timeouts > 0) continue;
    if (chase && (marking || p.loss_rate > kLossyPathRate) && !p.tail_probe() &&
        p.tail_probes_sent == 0) {
      paths_.probes_due(p, p.loss_rate > kLossyPathRate ? 2 : 1);
      ++p.tail_probes_sent;
    }
    arm_path_timer(tail_probe_due(p));
  }
}

void Connection::move_content(TxEntry& e) {
  if (e.seg.kind != SegmentKind::kNop && segment_valid(e.seg)) moved_.push(e.seg);
  e.seg = SegmentRef{};
}

// Tail probes per silent period, PTO apart (no doubling: where loss is normal, a probe
// round trip over a path losing one packet in ten each way fails one time in five, and
// each doubling would lengthen the stall the next probe ends). 16 probes of 44 bytes
// span the default 1 ms minimum RTO on a fabric of 10 us round trips, and bound what a
// dead path costs before its RTO.
constexpr std::uint8_t kMaxTailProbes = 16;

void Connection::check_timeouts(Time now) {
  path_timer_at_ = kNever;
  for (TxPath& p : paths_) {
    if (!p.active()) {
      arm_path_timer(p.probe_at);
      continue;
    }
    if (p.home_at <= now) {
      go_home(now, p, true);
    } else {
      arm_path_timer(p.home_at);
    }
    if (p.inflight() == 0 && p.lost_pending() == 0) continue;
    if (now < p.last_progress + path_rto(p)) {
      arm_path_timer(p.last_progress + path_rto(p));
      // A PTO without an ACK while data is in flight: the route may be dead (a black
      // hole is silent), and the path holds no more than its share of the connection's
      // window (PathSet::pick) until it answers. Else a path with a large window keeps
      // feeding the hole until the RTO, and its bytes, never acknowledged, come to hold
      // the whole connection window: every path stalls.
      const Time quiet_at = p.last_progress + path_pto(p);
      if (now >= quiet_at) {
        p.quiet = true;
      } else {
        arm_path_timer(quiet_at);
      }
      if (!p.tail_probe() && p.inflight() > 0 && p.timeouts == 0 &&
          p.tail_probes_sent < kMaxTailProbes) {
        // A probe, or its ACK, can be lost too: probe again a PTO after the last send.
        // At the end of the connection's data, on a path that loses packets at random,
        // send two: one probe round trip there fails often (one in three at 10% per
        // fabric link each way), two rarely. Before the end, other paths carry on.
        const Time due = tail_probe_due(p);
        if (now >= due) {
          paths_.probes_due(p, p.loss_rate > kLossyPathRate && !has_unsent() ? 2 : 1);
          ++p.tail_probes_sent;
        } else {
          arm_path_timer(due);
        }
      }
      continue;
    }
    // Silence: the content goes to other paths now; this path keeps only NOPs, which
    // probe it, until it answers or is declared failed.
    ++p.timeouts;
    ++p.stats.timeouts;
    for (std::uint32_t psn = p.snd_una; psn != p.snd_nxt; ++psn) {
      TxEntry& e = p.entry(psn);
      if (e.acked) continue;
      move_content(e);
      declare_lost(now, p, e, false);
    }
    p.last_progress = now;
    if (p.timeouts >= cfg_.fail_after_timeouts) {
      fail_path(now, p);
    } else {
      arm_path_timer(now + path_rto(p));
    }
  }
}

void Connection::fail_path(Time now, TxPath& p) {
  const bool was_active = p.active();
  if (was_active && p.port == p.home_port) {
    if (p.homing) {
      // Home was still dead: stay away longer next time.
      p.home_after = std::min(2 * p.home_after, p.scout ? kLastScouting : kLastHomecoming);
    } else {
      // A home route died. The paths whose home routes die within a few RTOs of each
      // other (a spine, a link) share fate: the first one's id labels them all.
      p.fate = now <= fate_until_ ? fate_label_ : p.id;
      fate_label_ = p.fate;
      fate_until_ = now + 4 * p.rtt.rto(cfg_.min_rto, cfg_.max_rto, cfg_.ack_delay);
    }
  }
  p.homing = false;
  p.home_at = kNever;
  for (std::uint32_t psn = p.snd_una; psn != p.snd_nxt; ++psn) {
    TxEntry& e = p.entry(psn);
    if (!e.acked) move_content(e);
  }
  // Re-entropy: a new source port (a new route through ECMP) and a fresh sequence space.
  ++p.generation;
  p.port = fresh_port(p);
  paths_.failed(p, tx_isn_,
                std::max<std::uint32_t>(cfg_.initial_window_bytes / cfg_.paths, 2u * mss_));
  p.ssthresh = ~0u;
  p.alpha = 0;
  p.loss_rate = 0;
  p.timeouts = 0;
  p.avoid_until = 0;
  p.tail_probes_sent = 0;
  p.quiet = false;
  p.probe_at = now;
  p.probe_interval =
      std::max(cfg_.probe_interval, p.rtt.rto(cfg_.min_rto, cfg_.max_rto, cfg_.ack_delay));
  arm_path_timer(now);
  ++p.stats.reentropies;
  ++reentropies_;
  ++ctx_.counters.reentropies;
  if (was_active) {
    ++path_failures_;
    ++ctx_.counters.path_failures;
    emit_event(now, EventKind::kPathFailed, p.id, p.plane);
  }
  update_planes(now);
}

// Heavy loss that ACKs still report is a bad route, not a dead one: the path takes a
// new port and sequence space at once and its content moves to the others, but it stays
// active with its window and RTT, so it costs no probe nor a slow start. Only silence
// (check_timeouts) fails a path.
void Connection::reroute_path(Time now, TxPath& p) {
  for (std::uint32_t psn = p.snd_una; psn != p.snd_nxt; ++psn) {
    TxEntry& e = p.entry(psn);
    if (!e.acked) move_content(e);
  }
  ++p.generation;
  p.port = fresh_port(p);
  const std::uint32_t cwnd = p.cwnd();
  paths_.failed(p, tx_isn_, cwnd);
  paths_.recovered(p);
  p.loss_rate = 0;
  p.timeouts = 0;
  p.tail_probes_sent = 0;
  p.quiet = false;
  p.last_progress = now;
  ++p.stats.reentropies;
  ++reentropies_;
  ++ctx_.counters.reentropies;
}

// A path that failed at home and recovered elsewhere leaves its home route unused, and
// the route it found now carries one path more than its share: after a while it goes
// back (and is failed there again if home is still dead, waiting longer next time).
void Connection::go_home(Time now, TxPath& p, bool scouting) {
  p.home_at = kNever;
  if (p.port == p.home_port) return;
  const std::uint16_t home = p.home_port;
  reroute_path(now, p);
  p.port = home;
  p.homing = scouting;
  ++ctx_.counters.paths_home;
  // A NOP at once, so that even an idle connection learns whether home answers.
  if (scouting) paths_.probes_due(p, 1);
}

// The first progress of a path that went home: its home route works again, and so do
// those of the paths that share its fate, which follow it home now rather than each
// after its own wait.
void Connection::home_answered(Time now, TxPath& p) {
  p.homing = false;
  p.scout = false;
  p.home_after = kFirstHomecoming;
  for (TxPath& q : paths_) {
    if (&q == &p || q.fate != p.fate) continue;
    q.scout = false;
    q.home_after = kFirstHomecoming;
    if (q.active() && q.port != q.home_port) go_home(now, q, false);
  }
}

// One path of a group away from home goes home to see whether the route healed; the
// others wait for its word (home_answered), and go on their own only after the longest
// wait.
void Connection::schedule_home(Time now, TxPath& p) {
  if (p.port == p.home_port || cfg_.src_port_count <= 1) return;
  const bool other_scout = std::any_of(paths_.begin(), paths_.end(), [&](const TxPath& q) {
    return &q != &p && q.fate == p.fate && q.scout;
  });
  if (!other_scout) p.scout = true;
  p.home_at = now + (p.scout ? std::min(p.home_after, kLastScouting) : kLastHomecoming);
  arm_path_timer(p.home_at);
}

void Connection::recover_path(Time now, TxPath& p) {
  paths_.recovered(p);
  schedule_home(now, p);
  p.timeouts = 0;
  p.last_progress = now;
  p.probe_at = kNever;
  emit_event(now, EventKind::kPathRecovered, p.id, p.plane);
  update_planes(now);
}

void Connection::update_planes(Time now) {
  std::uint8_t down = 0;
  bool all_failed = true;
  for (std::uint8_t plane = 0; plane < planes_; ++plane) {
    bool any = false, alive = false;
    for (const TxPath& p : paths_) {
      if (p.plane != plane) continue;
      any = true;
      alive |= p.active();
    }
    if (any && !alive) down |= std::uint8_t(1u << plane);
    all_failed &= any && !alive;
  }
  for (std::uint8_t plane = 0; plane < planes_; ++plane) {
    const std::uint8_t bit = std::uint8_t(1u << plane);
    if ((down & bit) && !(plane_down_mask_ & bit)) {
      ++plane_failures_;
      emit_event(now, EventKind::kPlaneDown, 0, plane);
    } else if (!(down & bit) && (plane_down_mask_ & bit)) {
      emit_event(now, EventKind::kPlaneUp, 0, plane);
    }
  }
  plane_down_mask_ = down;
  if (!all_failed) {
    all_failed_since_ = kNever;
  } else if (all_failed_since_ == kNever) {
    all_failed_since_ = now;
  }
}

void Connection::complete_sends(Time now, Stream& s) {
  (void)now;
  while (s.sq_head != s.sq_tail) {
    Wqe& w = s.wqe(s.sq_head);
    if (!w.done) break;
    retire(s, w);
    Completion c;
    c.wr_id = w.wr.wr_id;
    c.stream = s.id;
    c.status = w.status;
    c.opcode = completion_opcode(w.wr.opcode);
    c.byte_len = w.length;
    ++s.sq_head;
    if (s.sq_cursor - s.sq_head > s.sq_tail - s.sq_head) s.sq_cursor = s.sq_head;
    if (c.status != WcStatus::kSuccess) {
      ctx_.complete(c);
      flush_stream(s, WcStatus::kWrFlushErr);
      return;
    }
    if (w.wr.flags & send_flags::kSignaled) ctx_.complete(c);
  }
  if (s.sq_cursor != s.sq_tail) schedule_stream(s);
}

void Connection::fail_wqe(Time now, Stream& s, Wqe& w, WcStatus status) {
  if (w.done) return;
  w.done = true;
  w.status = status;
  s.error_pending = true;
  complete_sends(now, s);
}

void Connection::on_congestion_signal(Time now, TxPath& p, double cut_alpha) {
  p.avoid_until = now + p.rtt.srtt();
  if (now < p.last_cut + p.rtt.srtt()) return;  // one reduction per round trip
  const std::uint32_t floor =
      cfg_.min_path_window_bytes ? cfg_.min_path_window_bytes : mss_ + kHeaderAllowance;
  paths_.set_cwnd(p, std::max<std::uint32_t>(
                         floor, static_cast<std::uint32_t>(p.cwnd() * (1 - cut_alpha / 2))));
  p.ssthresh = p.cwnd();
  p.last_cut = now;
}

void Connection::update_windows(Time now, TxPath& p, std::uint32_t acked_bytes,
                                std::uint32_t rx_delta, std::uint32_t ce_delta) {
  const double g = cfg_.dctcp_gain;
  // A deep buffer that does not mark fills long before it drops: 8 paths held 33 ms in
  // a 1 Gbit/s switch queue, and the messages waiting on them stalled the other spines'
  // paths. A fabric that marks does so well before a queue holds both delay_target and
  // the path's own floor, so a path whose latest RTT shows that much queueing counts
  // what this ACK reports as marked, on the path alone (the connection's window and
  // ecn_seen follow real marks; a receiver's backlog marks too, so ecn_seen does not
  // prove that the fabric marks).
  const Time rtt_floor = p.rtt.min_rtt();
  const bool queued =
      cfg_.delay_target > 0 && p.rtt.latest() > rtt_floor + std::max(rtt_floor, cfg_.delay_target);
  const std::uint32_t marked = queued ? std::max(ce_delta, rx_delta) : ce_delta;
  // Per path, DCTCP: alpha tracks the marked fraction over each window of data.
  p.window_acked += rx_delta;
  p.window_marked += marked;
  if (seq_le(p.window_end, p.snd_una)) {
    if (p.window_acked > 0) {
      p.alpha = (1 - g) * p.alpha + g * double(p.window_marked) / p.window_acked;
    }
    p.window_acked = p.window_marked = 0;
    p.window_end = p.snd_nxt;
  }
  // Per connection, the same over all paths each round trip.
  cc_.on_counters(now, srtt_, rx_delta, ce_delta, g, 4 * (mss_ + kHeaderAllowance));

  if (ce_delta > 0) last_ce_at_ = now;
  if (marked > 0) {
    // Trim the path that saw the mark and steer the next packets elsewhere.
    on_congestion_signal(now, p, std::max(p.alpha, 0.25));
    return;
  }
  if (acked_bytes == 0 || !p.active()) return;
  const std::uint32_t cap = max_path_window();
  const std::uint32_t boost = increase_boost(p);
  if (p.cwnd() < p.ssthresh) {
    paths_.set_cwnd(p, std::min(cap, p.cwnd() + acked_bytes));
  } else {
    // Coupled increase: all paths together gain about `boost` packets per round trip.
    const std::uint64_t inc = std::uint64_t{mss_} * acked_bytes * boost /
                              std::max<std::uint64_t>(paths_.active_cwnd(), 1);
    paths_.set_cwnd(p, static_cast<std::uint32_t>(std::min<std::uint64_t>(
                           cap, p.cwnd() + std::max<std::uint64_t>(inc, 1))));
  }
  const std::uint64_t held = std::uint64_t{cap} * paths_.size();
  cc_.on_acked(acked_bytes, mss_, paths_.active_paths(), held, boost);
  const std::uint64_t packet = mss_ + kHeaderAllowance;
  if (paths_.size() < announced_paths() && cc_.window() >= held &&
      paths_.inflight() + acked_bytes + paths_.size() * packet >= held) {
    // The paths were full, each within a packet of its limit, and the window has outgrown
    // what they hold (one the pacer holds below that never fills them): widen them to the
    // SACK span, then add a path at a time (each ACK that finds them full adds one more).
    if (path_window_packets_ < wire::kSackBits) {
      path_window_packets_ = wire::kSackBits;
      paths_.widen(path_window_packets_);
    } else {
      add_paths(paths_.size() + 1);
    }
  }
}

}  // namespace mroce
