#include "net/datapath.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>

#include "net/udp_stats.h"

namespace mroce::net {

namespace {

// Reads taken from one socket per wake-up before the others get their turn.
constexpr int kMaxReadsPerSocket = 8;
// Largest read: a GRO-coalesced train of datagrams.
constexpr std::size_t kGroSlot = 65536;
// Manual progress reads the listening sockets (data) on every call and asks epoll about
// the source-port sockets (acknowledgements) on every this many calls.
constexpr std::uint32_t kPoolPollEvery = 4;
// Busy polling: the progress thread stays parked while the application's polls came
// this recently; past that it sleeps on the sockets as a kThread one does (the
// application is likely descheduled: spinning would take the core it needs), and only
// after kPollPause without a poll does it spin again.
constexpr Time kParkFor = kMillisecond;
constexpr Time kPollPause = 20 * kMillisecond;
// A parked thread still watches the sockets and the engine's deadline. When one wakes
// it, it gives the application a turn to poll again (four times its mean gap between polls,
// within bounds): if it does, the thread holds off, kHoldMin at first and twice as long
// while the application polls during each hold, up to kParkFor; if not (the application
// spins on memory, as ib_write_lat does, or computes) the thread serves the arrival itself.
constexpr Time kGraceMin = 2 * kMicrosecond;
constexpr Time kGraceMax = 20 * kMicrosecond;
constexpr Time kHoldMin = 5 * kMicrosecond;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

thread_local const Datapath* progress_thread_of = nullptr;

}  // namespace

Datapath::Datapath(std::unique_ptr<Transport> transport, SocketTable sockets,
                   const DatapathConfig& config)
    : transport_(std::move(transport)),
      sockets_(std::move(sockets)),
      config_(config),
      tx_(config.tx_batch, transport_->max_packet_size(), config.gso, config.tx_uring),
      ready_(64),
      max_datagram_(transport_->max_packet_size()),
      checksum_errors_base_(udp_checksum_errors()) {
  const std::size_t receivers = config_.threads > 1 ? config_.threads - 1 : 1;
  for (std::size_t i = 0; i < receivers; ++i) {
    receivers_.push_back(std::make_unique<Receiver>(config_.rx_slots, transport_->max_packet_size(),
                                                    sockets_.size()));
  }
}

Datapath::Receiver::Receiver(std::size_t slots, std::size_t max_datagram, std::size_t sockets)
    : batch(slots, kGroSlot, max_datagram), rxq_drops(sockets), ready(64) {}

Datapath::~Datapath() {
  stop();
  if (park_fd_ >= 0) close(park_fd_);
}

bool Datapath::start(std::string* error) {
  if (!poller_.open(error)) return false;
  if (config_.progress == Progress::kBusyPoll) {
    park_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (park_fd_ < 0) {
      *error = std::string("eventfd: ") + std::strerror(errno);
      return false;
    }
  }
  const bool polled = config_.progress != Progress::kThread;
  if (split()) {
    for (auto& r : receivers_) {
      if (!r->poller.open(error)) return false;
    }
  }
  for (std::size_t i = 0; i < sockets_.size(); ++i) {
    if (polled && sockets_.is_listener(i)) listeners_.push_back(i);
    // Beside receive threads, socket i is read by receiver i mod their number alone.
    Poller& p = split() ? receivers_[i % receivers_.size()]->poller : poller_;
    if (!p.add(sockets_.at(i).fd(), i, error)) return false;
  }
  std::vector<std::thread*> threads;
  if (split()) {
    thread_ = std::thread([this] { run_transmit(); });
    threads.push_back(&thread_);
    for (auto& r : receivers_) {
      Receiver* rp = r.get();
      r->thread = std::thread([this, rp] { run_receiver(*rp); });
      threads.push_back(&r->thread);
    }
  } else if (config_.progress != Progress::kManual) {
    thread_ = std::thread([this] { run(); });
    threads.push_back(&thread_);
  }
  if (config_.realtime) {
    for (std::thread* t : threads) {
      const sched_param param{.sched_priority = 1};
      const int e = pthread_setschedparam(t->native_handle(), SCHED_FIFO, &param);
      if (e != 0) {
        *error = std::string("progress_realtime: SCHED_FIFO refused (") + std::strerror(e) +
                 "; needs CAP_SYS_NICE or RLIMIT_RTPRIO)";
        stop();
        return false;
      }
    }
  }
  return true;
}

void Datapath::stop() {
  stop_.store(true);
  if (thread_.joinable()) {
    poller_.wake();
    unpark();
    thread_.join();
  }
  for (auto& r : receivers_) {
    if (r->thread.joinable()) {
      r->poller.wake();
      r->thread.join();
    }
  }
}

void Datapath::run() {
  progress_thread_of = this;
  pthread_setname_np(pthread_self(), "mroce-progress");
  // Deadlines are microseconds apart (ACK delay, pacing): no timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  const bool busy = config_.progress == Progress::kBusyPoll;
  if (config_.rx_uring && config_.progress == Progress::kThread) {
    // Made here: the ring belongs to the thread that waits on it. Where the kernel
    // refuses it, epoll and recvmmsg do the same work.
    std::string why;
    rx_ring_ = std::make_unique<RxRing>();
    if (!rx_ring_->open(sockets_, poller_.wake_fd(), max_datagram_, &why)) rx_ring_.reset();
  }
  while (!stop_.load(std::memory_order_relaxed)) {
    if (busy && park_while_polled()) {
      // The application stopped polling: what its last step received may still owe a
      // flush, and timers may be due.
      service(owed_flush_.exchange(false));
      continue;
    }
    const Time now = monotonic_now();
    const Time polled = app_polled_.load(std::memory_order_relaxed);
    const bool spin = busy && (polled == 0 || now >= polled + kPollPause);
    Time wake = now;
    if (!spin) {
      MutexLock lock(engine_mutex_);
      wake = transport_->next_deadline();
      // Deadlines within a tick of the last service wait for the tick, past ones too:
      // service() would refuse them until then, and the loop would spin.
      const Time earliest = last_service_.load() + config_.tick;
      if (wake < earliest) wake = earliest;
      armed_.store(wake);
    }
    if (rx_ring_) {
      rx_ring_->wait(now, wake);
      armed_.store(0);
      wakeups_.fetch_add(1, std::memory_order_relaxed);
      service(receive_ring(*receivers_[0]));
      continue;
    }
    const int n = poller_.wait(now, wake, ready_);
    armed_.store(0);
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    service(receive_ready(*receivers_[0],
                          std::span<const std::uint64_t>(ready_.data(), std::size_t(n)),
                          After::kFlush));
  }
  rx_ring_.reset();
}

void Datapath::run_transmit() {
  progress_thread_of = this;
  pthread_setname_np(pthread_self(), "mroce-progress");
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  while (!stop_.load(std::memory_order_relaxed)) {
    const Time now = monotonic_now();
    Time wake;
    {
      MutexLock lock(engine_mutex_);
      wake = transport_->next_deadline();
      const Time earliest = last_service_.load() + config_.tick;
      if (wake < earliest) wake = earliest;
      armed_.store(wake);
    }
    // A receive thread notes first and then looks at armed_; this thread arms first and
    // then looks at the note: one of the two sees the other (both sequentially
    // consistent), so a note never waits for the deadline.
    bool due = flush_pending_.load();
    if (!due) due = poller_.wait(now, wake, ready_) > 0;
    armed_.store(0);
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    service(due || flush_pending_.load());
  }
}

void Datapath::run_receiver(Receiver& r) {
  pthread_setname_np(pthread_self(), "mroce-rx");
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  while (!stop_.load(std::memory_order_relaxed)) {
    const int n = r.poller.wait(monotonic_now(), kNever, r.ready);
    // A hand-off after every full batch (more waits: let the sending run beside the
    // reading) and one when every ready socket is read: one datagram or two a socket,
    // as acknowledgements spread over the paths' sockets come, are handed off together,
    // so the sender finds the window they all freed and sends it in longer trains.
    if (receive_ready(r, std::span<const std::uint64_t>(r.ready.data(), std::size_t(n)),
                      After::kHandOffFull)) {
      hand_off();
    }
  }
}

void Datapath::hand_off() {
  flush_pending_.store(true);
  if (armed_.load() != 0) {
    armed_.store(0);
    poller_.wake();
  }
}

bool Datapath::park_while_polled() {
  bool parked = false;
  while (!stop_.load(std::memory_order_relaxed)) {
    const Time polled = app_polled_.load(std::memory_order_relaxed);
    Time now = monotonic_now();
    if (polled == 0 || now >= polled + kParkFor) break;
    parked = true;
    // Watch the sockets and the engine's deadline: whatever the application's polls do
    // not pick up at once is the thread's to serve.
    Time wake;
    {
      MutexLock lock(engine_mutex_);
      wake = std::max(transport_->next_deadline(), last_service_.load() + config_.tick);
    }
    wake = std::min(wake, polled + kParkFor);
    armed_.store(wake);
    const int n = poller_.wait(now, wake, ready_);
    armed_.store(0);
    now = monotonic_now();
    const auto ready = std::span<const std::uint64_t>(ready_.data(), std::size_t(n));
    const Time grace =
        std::clamp(4 * poll_gap_.load(std::memory_order_relaxed), kGraceMin, kGraceMax);
    if (app_polled_.load(std::memory_order_relaxed) + grace > now) {
      // The application is in its poll loop; give it one more turn.
      while (app_polled_.load(std::memory_order_relaxed) <= now && monotonic_now() < now + grace) {
        cpu_relax();
      }
    }
    if (app_polled_.load(std::memory_order_relaxed) <= now) {
      // On a loaded machine the application may wait for a core, perhaps this one: let
      // it run before deciding that it waits elsewhere. Otherwise the thread's own
      // wake-up can keep the application off its core, the thread serves in its place,
      // wakes again, and so on.
      sched_yield();
    }
    if (app_polled_.load(std::memory_order_relaxed) > now) {
      // It polled after the wake-up: it serves what woke us. Stay out of its way, longer
      // each time it polls during a hold (a polling loop wakes this thread about once a
      // park; every wake-up is a context switch, the dearest thing here). A hold the
      // application did not poll through ends the holding: what arrives after its last
      // poll is the thread's to serve, so one poll never buys more than kHoldMin.
      for (Time hold = kHoldMin;; hold = std::min(2 * hold, kParkFor)) {
        const std::uint32_t polls = manual_polls_.load(std::memory_order_relaxed);
        sleep_parked(hold);
        if (stop_.load(std::memory_order_relaxed) ||
            app_polled_.load(std::memory_order_relaxed) == 0 ||
            manual_polls_.load(std::memory_order_relaxed) == polls) {
          break;
        }
      }
      continue;
    }
    // The application waits elsewhere (spinning on memory, as ib_write_lat does, or
    // computing): serve the arrival or the deadline now.
    const bool arrived = receive_ready(*receivers_[0], ready, After::kFlush);
    service(owed_flush_.exchange(false) || arrived);
  }
  return parked;
}

void Datapath::sleep_parked(Time span) {
  const timespec timeout = to_timespec(span);
  pollfd p{park_fd_, POLLIN, 0};
  if (ppoll(&p, 1, &timeout, nullptr) > 0) {
    std::uint64_t v;
    [[maybe_unused]] ssize_t r = read(park_fd_, &v, sizeof v);
  }
}

void Datapath::unpark() {
  if (park_fd_ < 0) return;
  app_polled_.store(0, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t r = write(park_fd_, &one, sizeof one);
  poller_.wake();  // it may be asleep on the sockets
}

void Datapath::app_sleeps() {
  if (config_.progress == Progress::kBusyPoll) unpark();
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
  const bool arrived = receive_ready(
      *receivers_[0], std::span<const std::uint64_t>(ready, std::size_t(n)), After::kNothing);
  service(arrived || owed_flush_.exchange(false));
}

void Datapath::progress() {
  // With a sleeping progress thread the sockets are its own: a read here could swallow
  // the wake-up meant for it.
  if (config_.progress == Progress::kThread) {
    service(false);
    return;
  }
  Receiver& r = *receivers_[0];
  // Busy polling: a polling application makes the steps itself, on its own core, and
  // the spinning thread parks until the polls stop (one core per process, not two).
  if (config_.progress == Progress::kBusyPoll) {
    const Time now = monotonic_now();
    const Time last = app_polled_.exchange(now, std::memory_order_relaxed);
    if (last != 0 && now > last) {
      // Each gap counts at most twice the mean: the pause of an application that polls
      // its CQ and then spins on memory must not pass for its polling loop's pace.
      // Concurrent pollers may lose an update; the mean only needs to be about right.
      const Time mean = poll_gap_.load(std::memory_order_relaxed);
      const Time gap = std::min(now - last, 2 * mean);
      poll_gap_.store(mean - mean / 8 + gap / 8, std::memory_order_relaxed);
    }
  }
  bool arrived = false;
  for (std::size_t i : listeners_) arrived |= receive_socket(r, i, After::kNothing);
  if (manual_polls_.fetch_add(1, std::memory_order_relaxed) % kPoolPollEvery == 0) {
    std::uint64_t ready[64];
    const Time now = monotonic_now();
    const int n = poller_.wait(now, now, ready);
    arrived |=
        receive_ready(r, std::span<const std::uint64_t>(ready, std::size_t(n)), After::kNothing);
  }
  if (arrived) {
    // What arrived may make the application answer: let its answer go out first, with
    // our acknowledgements in the same flush (its post, or our next call). Manual
    // progress relies on the application calling again anyway (delayed ACKs, timers).
    owed_flush_.store(true);
    // A busy-poll thread that watches the sockets (the polls have thinned out) serves
    // the flush if the application does not call again within its turn.
    if (config_.progress == Progress::kBusyPoll && armed_.exchange(0) != 0) poller_.wake();
    return;
  }
  service(owed_flush_.exchange(false));
}

bool Datapath::receive_ready(Receiver& r, std::span<const std::uint64_t> ready, After after) {
  bool any = false;
  for (std::uint64_t token : ready) {
    if (token != Poller::kWakeToken) {
      any |= receive_socket(r, static_cast<std::size_t>(token), after);
    }
  }
  return any;
}

bool Datapath::receive_socket(Receiver& r, std::size_t index, After after) {
  const UdpSocket& s = sockets_.at(index);
  const std::uint8_t plane = sockets_.plane_of(index);
  bool any = false;
  for (int round = 0; round < kMaxReadsPerSocket; ++round) {
    int reads;
    {
      MutexLock rx_lock(r.mutex);
      // The system call runs outside the engine lock.
      reads = r.batch.receive(s, plane, config_.rx_ecn_threshold, &r.rxq_drops[index], &r.counters);
      if (reads == 0) return any;
      any = true;
      deliver(r.batch.reads());
    }
    // Acknowledgements and freed window go out before the next read.
    if (after == After::kFlush) flush();
    if (after == After::kHandOffFull && std::size_t(reads) == config_.rx_slots) hand_off();
    if (std::size_t(reads) < config_.rx_slots) return any;
  }
  return any;
}

void Datapath::deliver(std::span<const RxRead> reads) {
  MutexLock lock(engine_mutex_);
  const Time now = monotonic_now();
  Transport& transport = *transport_;
  for (const RxRead& read : reads) {
    for_each_datagram(read, [&](const RxMeta& meta, std::span<const std::uint8_t> bytes) {
      transport.on_packet(now, meta, bytes);
    });
  }
  wake_if_earlier();
}

bool Datapath::receive_ring(Receiver& r) {
  bool any = false;
  for (;;) {
    {
      MutexLock rx_lock(r.mutex);
      // The wait has received them already: larger batches than a recvmmsg's, so that
      // one flush answers more of them.
      if (rx_ring_->take(4 * config_.rx_slots, config_.rx_ecn_threshold, r.rxq_drops.data(),
                         &r.counters) == 0) {
        return any;
      }
      any = true;
      deliver(rx_ring_->reads());
      rx_ring_->release();  // the engine placed or dropped every payload
    }
    // Acknowledgements and freed window go out before the next batch.
    flush();
  }
}

void Datapath::run_timers() {
  MutexLock lock(engine_mutex_);
  const Time now = monotonic_now();
  if (transport_->next_deadline() <= now) transport_->on_timer(now);
  wake_if_earlier();
}

void Datapath::flush(bool wait) {
  flush_pending_.store(true);
  for (;;) {
    // The progress thread waits its turn (else it would spin on a deadline the holder is
    // about to move); others leave the note and go.
    if (wait || progress_thread_of == this) {
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
    DatapathCounters sent;
    tx_.send(sockets_, &sent);
    tx_totals_.add(sent);
    if (!was_full) return;
  }
}

void Datapath::wait_for_staged_sends() {
  // Batches are staged and sent under tx_mutex_ and leave nothing staged when it is
  // released; taking it as a flush does, this one also sends what others noted meanwhile.
  flush(/*wait=*/true);
}

void Datapath::TxTotals::add(const DatapathCounters& sent) {
  // One writer (the holder of tx_mutex_): no read-modify-write needed.
  const auto bump = [](std::atomic<std::uint64_t>& total, std::uint64_t n) {
    if (n != 0) total.store(total.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  };
  bump(datagrams, sent.tx_datagrams);
  bump(syscalls, sent.tx_syscalls);
  bump(gso_sends, sent.tx_gso_sends);
  bump(dropped, sent.tx_dropped);
  bump(gso_fallbacks, sent.tx_gso_fallbacks);
}

void Datapath::wake_if_earlier() {
  // armed_ is 0 unless the thread sleeps on the sockets (kThread, or busy polling while
  // the application pauses).
  if (progress_thread_of == this || config_.progress == Progress::kManual) return;
  const Time armed = armed_.load();
  if (armed != 0 && transport_->next_deadline() < armed) {
    armed_.store(0);
    poller_.wake();
  }
}

DatapathCounters Datapath::counters() const {
  DatapathCounters c;
  c.tx_datagrams = tx_totals_.datagrams.load(std::memory_order_relaxed);
  c.tx_syscalls = tx_totals_.syscalls.load(std::memory_order_relaxed);
  c.tx_gso_sends = tx_totals_.gso_sends.load(std::memory_order_relaxed);
  c.tx_dropped = tx_totals_.dropped.load(std::memory_order_relaxed);
  c.tx_gso_fallbacks = tx_totals_.gso_fallbacks.load(std::memory_order_relaxed);
  DatapathCounters rx;
  for (const auto& r : receivers_) {
    MutexLock lock(r->mutex);
    rx.rx_datagrams += r->counters.rx_datagrams;
    rx.rx_syscalls += r->counters.rx_syscalls;
    rx.rx_ring_reads += r->counters.rx_ring_reads;
    rx.rx_gro_reads += r->counters.rx_gro_reads;
    rx.rx_truncated += r->counters.rx_truncated;
    rx.rx_socket_drops += r->counters.rx_socket_drops;
    rx.rx_local_ce += r->counters.rx_local_ce;
  }
  c.rx_datagrams = rx.rx_datagrams;
  c.rx_syscalls = rx.rx_syscalls;
  c.rx_ring_reads = rx.rx_ring_reads;
  c.rx_gro_reads = rx.rx_gro_reads;
  c.rx_truncated = rx.rx_truncated;
  // The sockets' drop counts include datagrams with a bad checksum; the namespace's
  // count of those, since we opened, is taken out (never more than the sockets lost).
  const std::uint64_t checksum = udp_checksum_errors() - checksum_errors_base_;
  c.rx_checksum_errors = std::min(checksum, rx.rx_socket_drops);
  c.rx_socket_drops = rx.rx_socket_drops - c.rx_checksum_errors;
  c.rx_local_ce = rx.rx_local_ce;
  c.wakeups = wakeups_.load();
  return c;
}

}  // namespace mroce::net
