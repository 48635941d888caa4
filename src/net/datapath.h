// The UDP datapath of one device: drives a transport engine (any Transport: MetaRoCE or
// the RoCEv2 baseline) with real sockets and the monotonic clock. The engine is
// single-threaded, so one mutex guards it and every critical section is one engine call
// or one batch; system calls happen outside it.
//
// Who does what:
//   - application threads post work through call(), then send what it produced at once
//     (a doorbell: no hand-off to another thread on the latency path);
//   - the progress thread (Progress::kThread: sleeps in epoll until a socket is readable
//     or the engine's next deadline; kBusyPoll: never sleeps) receives, runs timers and
//     sends; with Progress::kManual the application calls progress() instead.
// Sending is serialised by its own lock: a sender that finds it taken leaves a note, and
// the holder loops once more, so no datagram waits for the next event.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/transport.h"
#include "mroce/mroce.h"
#include "net/clock.h"
#include "net/poller.h"
#include "net/rx_batch.h"
#include "net/socket_table.h"
#include "net/thread_annotations.h"
#include "net/tx_batch.h"

namespace mroce::net {

struct DatapathConfig {
  Progress progress = Progress::kThread;
  bool gso = true;
  std::size_t tx_batch = 240;          // datagrams taken from the engine per lock
  std::size_t rx_slots = 32;           // reads per recvmmsg
  std::uint32_t rx_ecn_threshold = 0;  // see DeviceOptions::rx_ecn_threshold
  // Timer granularity: deadlines closer together than this are served together, so
  // that paced packets leave in batches rather than one per wake-up.
  Time tick = 20 * kMicrosecond;
};

class Datapath {
 public:
  Datapath(std::unique_ptr<Transport> transport, SocketTable sockets, const DatapathConfig& config);
  ~Datapath();
  Datapath(const Datapath&) = delete;
  Datapath& operator=(const Datapath&) = delete;

  // Registers the sockets and starts the progress thread (unless manual).
  bool start(std::string* error);
  void stop();

  // Runs fn(Transport&, Time now) under the engine lock, then sends what it produced.
  template <typename Fn>
  auto call(Fn&& fn) MROCE_EXCLUDES(engine_mutex_) {
    MutexLock lock(engine_mutex_);
    if constexpr (std::is_void_v<decltype(fn(*transport_, Time{}))>) {
      fn(*transport_, monotonic_now());
      wake_if_earlier();
      lock.unlock();
      flush();
    } else {
      auto result = fn(*transport_, monotonic_now());
      wake_if_earlier();
      lock.unlock();
      flush();
      return result;
    }
  }

  // Runs fn(const Transport&) under the engine lock.
  template <typename Fn>
  decltype(auto) inspect(Fn&& fn) const MROCE_EXCLUDES(engine_mutex_) {
    MutexLock lock(engine_mutex_);
    return fn(static_cast<const Transport&>(*transport_));
  }

  // One step that never blocks: whatever arrived, what is due, what can be sent.
  void progress() MROCE_EXCLUDES(engine_mutex_, tx_mutex_, rx_mutex_);
  // Manual progress: sleeps until something arrives, the engine has something due, or
  // max_wait passes, then makes one step. With a progress thread: one step.
  void wait(Time max_wait) MROCE_EXCLUDES(engine_mutex_, tx_mutex_, rx_mutex_);

  DatapathCounters counters() const MROCE_EXCLUDES(tx_mutex_, rx_mutex_);
  const SocketTable& sockets() const { return sockets_; }
  Progress mode() const { return config_.progress; }

 private:
  void run();  // the progress thread
  // Receives what the ready sockets hold; returns whether anything arrived.
  bool receive_ready(std::span<const std::uint64_t> ready, bool flush_each)
      MROCE_EXCLUDES(engine_mutex_, tx_mutex_, rx_mutex_);
  bool receive_socket(std::size_t index, bool flush_each)
      MROCE_EXCLUDES(engine_mutex_, tx_mutex_, rx_mutex_);
  // Timers and sending, at most once per tick unless `now_due` (something arrived).
  void service(bool now_due) MROCE_EXCLUDES(engine_mutex_, tx_mutex_);
  void run_timers() MROCE_EXCLUDES(engine_mutex_);
  void flush() MROCE_EXCLUDES(engine_mutex_, tx_mutex_);
  void transmit_all() MROCE_REQUIRES(tx_mutex_) MROCE_EXCLUDES(engine_mutex_);
  // Under the engine lock: wake the sleeping progress thread when the engine now wants
  // it earlier than it planned to wake.
  void wake_if_earlier() MROCE_REQUIRES(engine_mutex_);

  mutable Mutex engine_mutex_;
  std::unique_ptr<Transport> transport_ MROCE_PT_GUARDED_BY(engine_mutex_);
  SocketTable sockets_;
  DatapathConfig config_;
  Poller poller_;

  // When the sleeping progress thread will wake by itself; 0 while it is awake.
  std::atomic<Time> armed_{0};

  mutable Mutex tx_mutex_;
  std::atomic<bool> flush_pending_{false};
  TxBatch tx_ MROCE_GUARDED_BY(tx_mutex_);
  DatapathCounters tx_counters_ MROCE_GUARDED_BY(tx_mutex_);

  mutable Mutex rx_mutex_;
  RxBatch rx_ MROCE_GUARDED_BY(rx_mutex_);
  DatapathCounters rx_counters_ MROCE_GUARDED_BY(rx_mutex_);
  // Last SO_RXQ_OVFL value, by socket.
  std::vector<std::uint32_t> rxq_drops_ MROCE_GUARDED_BY(rx_mutex_);
  std::vector<std::uint64_t> ready_;  // the progress thread's own

  std::atomic<Time> last_service_{0};
  std::vector<std::size_t> listeners_;  // manual progress: read directly, not via epoll
  std::atomic<std::uint32_t> manual_polls_{0};
  std::atomic<bool> owed_flush_{false};  // manual: arrivals' output waits for the next call
  std::atomic<std::uint64_t> wakeups_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace mroce::net
