#include "net/datapath.h"

#include <pthread.h>
#include <sys/prctl.h>

namespace mroce::net {

namespace {

// Reads taken from one socket per wake-up before the others get their turn.
constexpr int kMaxReadsPerSocket = 8;
// Largest read: a GRO-coalesced train of datagrams.
constexpr std::size_t kGroSlot = 65536;
// Manual progress reads the listening sockets (data) on every call and asks epoll about
// the source-port sockets (acknowledgements) on every this many calls.
constexpr std::uint32_t kPoolPollEvery = 4;

thread_local const Datapath* progress_thread_of = nullptr;

}  // namespace

Datapath::Datapath(std::unique_ptr<Transport> transport, SocketTable sockets,
                   const DatapathConfig& config)
    : transport_(std::move(transport)),
      sockets_(std::move(sockets)),
      config_(config),
      tx_(config.tx_batch, transport_->max_packet_size(), config.gso),
      rx_(config.rx_slots, kGroSlot, transport_->max_packet_size()),
      rxq_drops_(sockets_.size()),
      ready_(64) {}

Datapath::~Datapath() {
  stop();
}

bool Datapath::start(std::string* error) {
  if (!poller_.open(error)) return false;
  const bool manual = config_.progress == Progress::kManual;
  for (std::size_t i = 0; i < sockets_.size(); ++i) {
    if (manual && sockets_.is_listener(i)) listeners_.push_back(i);
    if (!poller_.add(sockets_.at(i).fd(), i, error)) return false;
  }
  if (config_.progress != Progress::kManual) thread_ = std::thread([this] { run(); });
  return true;
}

void Datapath::stop() {
  stop_.store(true);
  if (thread_.joinable()) {
    poller_.wake();
    thread_.join();
  }
}

void Datapath::run() {
  progress_thread_of = this;
  pthread_setname_np(pthread_self(), "mroce-progress");
  // Deadlines are microseconds apart (ACK delay, pacing): no timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  const bool busy = config_.progress == Progress::kBusyPoll;
  while (!stop_.load(std::memory_order_relaxed)) {
    const Time now = monotonic_now();
    Time wake = now;
    if (!busy) {
      MutexLock lock(engine_mutex_);
      wake = transport_->next_deadline();
      const Time earliest = last_service_.load() + config_.tick;
      if (wake > now && wake < earliest) wake = earliest;
      armed_.store(wake);
    }
    const int n = poller_.wait(now, wake, ready_);
    armed_.store(0);
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    service(receive_ready(std::span<const std::uint64_t>(ready_.data(), std::size_t(n)), true));
  }
}

void Datapath::service(bool now_due) {
  const Time now = monotonic_now();
  if (!now_due && now < last_service_.load() + config_.tick) return;
  last_service_.store(now);
  run_timers();
  flush();
}

void Datapath::wait(Time max_wait) {
  if (config_.progress != Progress::kManual) {
    // A thread does the work; there is nothing to wait for here but time.
    progress();
    return;
  }
  Time wake;
  {
    MutexLock lock(engine_mutex_);
    wake = transport_->next_deadline();
  }
  const Time now = monotonic_now();
  wake = std::min(wake, now + max_wait);
  std::uint64_t ready[64];
  const int n = poller_.wait(now, wake, ready);
  const bool arrived = receive_ready(std::span<const std::uint64_t>(ready, std::size_t(n)), false);
  service(arrived || owed_flush_.exchange(false));
}

void Datapath::progress() {
  // With a progress thread the sockets are its own: a read here could swallow the
  // wake-up meant for it.
  if (config_.progress != Progress::kManual) {
    service(false);
    return;
  }
  bool arrived = false;
  for (std::size_t i : listeners_) arrived |= receive_socket(i, false);
  if (manual_polls_.fetch_add(1, std::memory_order_relaxed) % kPoolPollEvery == 0) {
    std::uint64_t ready[64];
    const Time now = monotonic_now();
    const int n = poller_.wait(now, now, ready);
    arrived |= receive_ready(std::span<const std::uint64_t>(ready, std::size_t(n)), false);
  }
  if (arrived) {
    // What arrived may make the application answer: let its answer go out first, with
    // our acknowledgements in the same flush (its post, or our next call). Manual
    // progress relies on the application calling again anyway (delayed ACKs, timers).
    owed_flush_.store(true);
    return;
  }
  service(owed_flush_.exchange(false));
}

bool Datapath::receive_ready(std::span<const std::uint64_t> ready, bool flush_each) {
  bool any = false;
  for (std::uint64_t token : ready) {
    if (token != Poller::kWakeToken) {
      any |= receive_socket(static_cast<std::size_t>(token), flush_each);
    }
  }
  return any;
}

bool Datapath::receive_socket(std::size_t index, bool flush_each) {
  const UdpSocket& s = sockets_.at(index);
  const std::uint8_t plane = sockets_.plane_of(index);
  bool any = false;
  for (int round = 0; round < kMaxReadsPerSocket; ++round) {
    int reads;
    {
      MutexLock rx_lock(rx_mutex_);
      reads = rx_.receive(s, plane, config_.rx_ecn_threshold, &rxq_drops_[index], &rx_counters_);
      if (reads == 0) return any;
      any = true;
      MutexLock lock(engine_mutex_);
      const Time now = monotonic_now();
      Transport& transport = *transport_;
      rx_.for_each([&](const RxMeta& meta, std::span<const std::uint8_t> bytes) {
        transport.on_packet(now, meta, bytes);
      });
      wake_if_earlier();
    }
    if (flush_each) flush();  // acknowledgements and freed window go out before the next read
    if (std::size_t(reads) < config_.rx_slots) return any;
  }
  return any;
}

void Datapath::run_timers() {
  MutexLock lock(engine_mutex_);
  const Time now = monotonic_now();
  if (transport_->next_deadline() <= now) transport_->on_timer(now);
  wake_if_earlier();
}

void Datapath::flush() {
  flush_pending_.store(true);
  for (;;) {
    // The progress thread waits its turn (else it would spin on a deadline the holder is
    // about to move); others leave the note and go.
    if (progress_thread_of == this) {
      tx_mutex_.lock();
    } else if (!tx_mutex_.try_lock()) {
      return;  // the holder sees flush_pending_ and loops
    }
    flush_pending_.store(false);
    transmit_all();
    tx_mutex_.unlock();
    if (!flush_pending_.load()) return;
  }
}

void Datapath::transmit_all() {
  for (;;) {
    {
      MutexLock lock(engine_mutex_);
      const Time now = monotonic_now();
      while (!tx_.full() && transport_->poll_transmit(now, tx_.slot(), tx_.slot_meta())) {
        tx_.commit();
      }
      wake_if_earlier();
    }
    if (tx_.empty()) return;
    const bool was_full = tx_.full();
    tx_.send(sockets_, &tx_counters_);
    if (!was_full) return;
  }
}

void Datapath::wake_if_earlier() {
  if (progress_thread_of == this || config_.progress != Progress::kThread) return;
  const Time armed = armed_.load();
  if (armed != 0 && transport_->next_deadline() < armed) {
    armed_.store(0);
    poller_.wake();
  }
}

DatapathCounters Datapath::counters() const {
  DatapathCounters c;
  {
    MutexLock lock(tx_mutex_);
    c = tx_counters_;
  }
  MutexLock lock(rx_mutex_);
  c.rx_datagrams = rx_counters_.rx_datagrams;
  c.rx_syscalls = rx_counters_.rx_syscalls;
  c.rx_gro_reads = rx_counters_.rx_gro_reads;
  c.rx_truncated = rx_counters_.rx_truncated;
  c.rx_socket_drops = rx_counters_.rx_socket_drops;
  c.rx_local_ce = rx_counters_.rx_local_ce;
  c.wakeups = wakeups_.load();
  return c;
}

}  // namespace mroce::net
