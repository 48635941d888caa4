#include "session.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace mroce::perf {

namespace {

constexpr double kConnectTimeout = 15;  // seconds

}  // namespace

Session::~Session() {
  qps_.clear();
  mr_.reset();
  cq_.reset();
  device_.reset();
  std::free(buffer_);
}

bool Session::open(const DeviceOptions& device, const TestSpec& spec, std::uint32_t slots,
                   std::uint32_t rq_depth, std::string* error) {
  device_ = Device::open(device, error);
  if (!device_) return false;
  manual_ = device.progress == Progress::kManual;
  slots_ = slots;
  slot_size_ = (std::max<std::uint64_t>(spec.max_size(), 8) + 63) / 64 * 64;
  const std::uint64_t bytes = slot_size_ * slots_ * spec.qps;
  buffer_ = static_cast<std::uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
  if (!buffer_) {
    *error = "cannot allocate " + std::to_string(bytes >> 20) + " MiB";
    return false;
  }
  std::memset(buffer_, 0, bytes);
  mr_ = device_->reg_mr(buffer_, bytes, access::kAll);
  cq_ = device_->create_cq(static_cast<int>(spec.qps * (spec.depth + rq_depth) + 64));
  if (!mr_ || !cq_) {
    *error = device_->last_error();
    return false;
  }
  QpOptions qo;
  qo.send_cq = qo.recv_cq = cq_.get();
  qo.stream.sq_depth = std::max<std::uint32_t>(spec.depth, 16);
  qo.stream.rq_depth = std::max<std::uint32_t>(rq_depth, 16);
  for (std::uint32_t i = 0; i < spec.qps; ++i) {
    qps_.push_back(device_->create_qp(qo));
    if (!qps_.back()) {
      *error = device_->last_error();
      return false;
    }
  }
  return true;
}

PeerInfo Session::local_info() const {
  const Endpoint ep = device_->endpoint();
  PeerInfo p;
  p.addr = ep.addr.to_string();
  p.port = ep.port;
  for (const auto& q : qps_) p.qpns.push_back(q->qp_num());
  p.buffer = reinterpret_cast<std::uint64_t>(buffer_);
  p.rkey = mr_->rkey();
  p.slots = slots_;
  return p;
}

bool Session::connect(const PeerInfo& peer, std::string* error) {
  Endpoint ep;
  if (!parse_address(peer.addr, &ep.addr)) {
    *error = "peer sent a bad address";
    return false;
  }
  ep.port = peer.port;
  if (peer.qpns.size() != qps_.size()) {
    *error = "peer has " + std::to_string(peer.qpns.size()) + " queue pairs, we have " +
             std::to_string(qps_.size());
    return false;
  }
  remote_base_ = peer.buffer;
  remote_rkey_ = peer.rkey;
  remote_slots_ = peer.slots;
  for (std::size_t i = 0; i < qps_.size(); ++i) {
    const Errc rc = qps_[i]->connect(ep, peer.qpns[i]);
    if (rc != Errc::kOk) {
      *error = std::string("connect: ") + to_string(rc);
      return false;
    }
  }
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kConnectTimeout);
  for (;;) {
    bool ready = true;
    for (const auto& q : qps_) ready &= q->state() == StreamState::kReady;
    if (ready) return true;
    for (const auto& q : qps_) {
      if (q->state() == StreamState::kError) {
        std::string why;
        for (const Event& e : device_->take_events()) {
          why += std::string(why.empty() ? "" : ", ") + to_string(e.kind);
        }
        *error = "the connection to the peer failed (events: " + why + ")";
        return false;
      }
    }
    if (std::chrono::steady_clock::now() > end) {
      *error = "no connection to the peer within 15 s (is UDP reaching it?)";
      return false;
    }
    pump();
  }
}

int Session::poll(Completion* out, int max, std::string* error) {
  const int n = cq_->poll(out, max);
  for (int i = 0; i < n; ++i) {
    if (out[i].status != WcStatus::kSuccess) {
      *error = std::string("work request failed: ") + to_string(out[i].status);
      return -1;
    }
  }
  return n;
}

int Session::wait(Completion* out, int max, int timeout_ms, int other_fd, std::string* error) {
  int n = poll(out, max, error);
  if (n != 0) return n;
  if (manual_) {
    // We are the progress: sleep in the device until something arrives or is due.
    device_->wait(std::uint64_t(timeout_ms) * kMillisecond);
    return poll(out, max, error);
  }
  // Arm first, then look again: a completion that slipped in between is not missed.
  cq_->request_notify(false);
  n = poll(out, max, error);
  if (n != 0) return n;
  pollfd fds[2] = {{cq_->fd(), POLLIN, 0}, {other_fd, POLLIN, 0}};
  if (::poll(fds, other_fd >= 0 ? 2 : 1, timeout_ms) > 0 && (fds[0].revents & POLLIN)) {
    std::uint64_t v;
    [[maybe_unused]] ssize_t r = read(cq_->fd(), &v, sizeof v);
  }
  return poll(out, max, error);
}

nlohmann::json counters_json(const Counters& c) {
  nlohmann::json drops = nlohmann::json::object();
  for (int r = 0; r < static_cast<int>(DropReason::kCount); ++r) {
    if (c.drops[r]) drops[to_string(static_cast<DropReason>(r))] = c.drops[r];
  }
  return {{"rx_packets", c.rx_packets},           {"rx_bytes", c.rx_bytes},
          {"tx_packets", c.tx_packets},           {"tx_bytes", c.tx_bytes},
          {"tx_data_packets", c.tx_data_packets}, {"tx_retransmits", c.tx_retransmits},
          {"rx_ce_packets", c.rx_ce_packets},     {"drops", drops}};
}

nlohmann::json datapath_json(const DatapathCounters& d) {
  return {{"tx_datagrams", d.tx_datagrams},         {"tx_syscalls", d.tx_syscalls},
          {"tx_gso_sends", d.tx_gso_sends},         {"tx_dropped", d.tx_dropped},
          {"tx_gso_fallbacks", d.tx_gso_fallbacks}, {"rx_datagrams", d.rx_datagrams},
          {"rx_syscalls", d.rx_syscalls},           {"rx_ring_reads", d.rx_ring_reads},
          {"rx_gro_reads", d.rx_gro_reads},         {"rx_truncated", d.rx_truncated},
          {"rx_socket_drops", d.rx_socket_drops},   {"rx_checksum_errors", d.rx_checksum_errors},
          {"rx_local_ce", d.rx_local_ce},           {"wakeups", d.wakeups}};
}

nlohmann::json events_json(const std::vector<Event>& events) {
  nlohmann::json out = nlohmann::json::array();
  for (const Event& e : events) {
    out.push_back({{"kind", to_string(e.kind)},
                   {"monotonic_s", double(e.time) / 1e9},
                   {"path", e.path},
                   {"plane", e.plane}});
  }
  return out;
}

nlohmann::json connections_json(const std::vector<ConnectionReport>& reports) {
  nlohmann::json out = nlohmann::json::array();
  for (const ConnectionReport& r : reports) {
    nlohmann::json paths = nlohmann::json::array();
    for (const PathStats& p : r.paths) {
      paths.push_back({{"state", to_string(p.state)},
                       {"plane", p.plane},
                       {"generation", p.generation},
                       {"src_port", p.src_port},
                       {"tx_packets", p.tx_packets},
                       {"tx_bytes", p.tx_bytes},
                       {"retransmits", p.retransmits},
                       {"acked_packets", p.acked_packets},
                       {"lost_packets", p.lost_packets},
                       {"ce_packets", p.ce_packets},
                       {"timeouts", p.timeouts},
                       {"reentropies", p.reentropies},
                       {"cwnd_bytes", p.cwnd_bytes},
                       {"srtt_ns", p.srtt},
                       {"min_rtt_ns", p.min_rtt}});
    }
    const ConnStats& c = r.conn;
    out.push_back({{"peer", c.peer.addr.to_string() + ":" + std::to_string(c.peer.port)},
                   {"state", to_string(c.state)},
                   {"paths", c.paths},
                   {"planes", c.planes},
                   {"streams", c.streams},
                   {"tx_data_bytes", c.tx_data_bytes},
                   {"rx_data_bytes", c.rx_data_bytes},
                   {"retransmits", c.retransmits},
                   {"reentropies", c.reentropies},
                   {"path_failures", c.path_failures},
                   {"plane_failures", c.plane_failures},
                   {"cwnd_bytes", c.cwnd_bytes},
                   {"pacing_rate_bps", c.pacing_rate_bps},
                   {"rate_hint_bps", c.rate_hint_bps},
                   {"path_stats", paths}});
  }
  return out;
}

}  // namespace mroce::perf
