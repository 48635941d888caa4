#include "net/device_core.h"

#include "net/options.h"
#include "net/transport_factory.h"

namespace mroce::net {

namespace {

constexpr std::size_t kMaxEvents = 4096;

// The listening socket takes every data packet of every peer: give it room for a burst
// of many windows; pool sockets only take acknowledgements.
constexpr int kListenRcvbuf = 32 << 20;
constexpr int kPoolRcvbuf = 2 << 20;
constexpr int kSndbuf = 4 << 20;

}  // namespace

std::shared_ptr<DeviceCore> DeviceCore::open(const DeviceOptions& options, std::string* error) {
  ResolvedOptions resolved;
  if (!resolve_options(options, &resolved, error)) return nullptr;

  SocketTableConfig sc;
  sc.planes = resolved.planes;
  sc.listen_port = options.port;
  sc.pool_base = options.src_port_base;
  sc.pool_count = options.src_port_count;
  sc.listen_options = SocketOptions{kListenRcvbuf, kSndbuf, options.gro};
  sc.pool_options = SocketOptions{kPoolRcvbuf, kSndbuf, options.gro};
  SocketTable sockets;
  if (!sockets.open(sc, error)) return nullptr;

  TransportSetup setup;
  setup.planes = resolved.planes;
  setup.listen_port = sockets.listen_port();
  setup.pool_base = sockets.pool_base();
  setup.pool_count = sockets.pool_count();
  setup.seed = resolved.seed;
  std::unique_ptr<Transport> transport = make_transport(options, setup, error);
  if (!transport) return nullptr;

  auto core = std::shared_ptr<DeviceCore>(new DeviceCore);
  core->options_ = options;
  core->options_.addresses.clear();
  for (const Address& a : resolved.planes) core->options_.addresses.push_back(a.to_string());
  core->options_.port = sockets.listen_port();
  core->options_.src_port_base = sockets.pool_base();
  core->options_.seed = resolved.seed;
  core->planes_ = resolved.planes;
  transport->set_sink(core.get());

  DatapathConfig dc;
  dc.progress = options.progress;
  dc.gso = options.gso;
  dc.tx_uring = options.tx_uring;
  dc.rx_uring = options.rx_uring;
  dc.realtime = options.progress_realtime && options.progress == Progress::kThread;
  dc.rx_ecn_threshold = options.rx_ecn_threshold;
  dc.threads = options.progress_threads;
  core->datapath_ = std::make_unique<Datapath>(std::move(transport), std::move(sockets), dc);
  if (!core->datapath_->start(error)) return nullptr;
  return core;
}

DeviceCore::~DeviceCore() {
  datapath_.reset();
}

void DeviceCore::on_completion(const Completion& c) {
  auto it = routes_.find(c.stream);
  if (it == routes_.end()) return;  // the queue pair is gone
  const auto& ring = c.is_recv ? it->second.recv : it->second.send;
  if (ring) ring->push(c);
}

void DeviceCore::on_event(const Event& e) {
  MutexLock lock(events_mutex_);
  if (events_.size() == kMaxEvents) events_.pop_front();
  events_.push_back(e);
  if (event_hook_) event_hook_(e);
}

void DeviceCore::set_event_hook(std::function<void(const Event&)> hook) {
  MutexLock lock(events_mutex_);
  event_hook_ = std::move(hook);
}

void DeviceCore::set_route(StreamId stream, std::shared_ptr<CompletionRing> send,
                           std::shared_ptr<CompletionRing> recv) {
  routes_[stream] = Route{std::move(send), std::move(recv)};
}

void DeviceCore::clear_route(StreamId stream) {
  routes_.erase(stream);
}

std::vector<Event> DeviceCore::take_events() {
  MutexLock lock(events_mutex_);
  std::vector<Event> out(events_.begin(), events_.end());
  events_.clear();
  return out;
}

void DeviceCore::set_error(std::string line) {
  MutexLock lock(error_mutex_);
  last_error_ = std::move(line);
}

std::string DeviceCore::last_error() const {
  MutexLock lock(error_mutex_);
  return last_error_;
}

}  // namespace mroce::net
