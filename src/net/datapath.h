// The UDP datapath of one device: drives a transport engine (any Transport: MetaRoCE or
// the RoCEv2 baseline) with real sockets and the monotonic clock. The engine is
// single-threaded, so one mutex guards it and every critical section is one engine call
// or one batch; system calls happen outside it.
//
// Who does what:
//   - application threads post work through call(), then send what it produced at once
//     (a doorbell: no hand-off to another thread on the latency path);
//   - the progress thread (Progress::kThread: sleeps in epoll until a socket is readable
//     or the engine's next deadline; kBusyPoll: spins, and parks while the application's
//     own polls make the steps, serving only what they leave) receives, runs timers and
//     sends; with Progress::kManual the application calls progress() instead;
//   - with more than one thread (kThread, `threads` > 1) the progress thread only runs
//     timers and sends, sleeping on the engine's deadline and a wake-up, and each receive
//     thread owns every (threads - 1)-th socket: it sleeps in its own epoll, reads with
//     recvmmsg outside the engine lock, hands the batch to the engine under the lock, and
//     leaves what the engine now wants sent to the progress thread (a note, and a wake-up
//     when that thread sleeps). One thread reads a socket, so each socket's order holds.
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
#include "net/rx_ring.h"
#include "net/socket_table.h"
#include "net/thread_annotations.h"
#include "net/tx_batch.h"

namespace mroce::net {

struct DatapathConfig {
  Progress progress = Progress::kThread;
  bool gso = true;
  std::size_t tx_batch = 240;          // datagrams taken from the engine per lock
  bool tx_uring = false;               // see DeviceOptions::tx_uring
  bool rx_uring = false;               // see DeviceOptions::rx_uring
  std::size_t rx_slots = 32;           // reads per recvmmsg
  std::uint32_t rx_ecn_threshold = 0;  // see DeviceOptions::rx_ecn_threshold
  // Timer granularity: deadlines closer together than this are served together, so
  // that paced packets leave in batches rather than one per wake-up.
  Time tick = 20 * kMicrosecond;
  bool realtime = false;    // see DeviceOptions::progress_realtime
  std::size_t threads = 1;  // see DeviceOptions::progress_threads
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
  void progress() MROCE_EXCLUDES(engine_mutex_, tx_mutex_);
  // Manual progress: sleeps until something arrives, the engine has something due, or
  // max_wait passes, then makes one step. With a progress thread: one step.
  void wait(Time max_wait) MROCE_EXCLUDES(engine_mutex_, tx_mutex_);

  // Busy polling: the application goes to sleep on a completion event; the progress
  // thread, parked while the application polled, takes over at once.
  void app_sleeps();

  // Returns once no batch staged before the call is still being sent. A staged packet
  // points into registered memory until its sendmsg returns: a region deregistered in
  // the engine waits here before the application may free its bytes.
  void wait_for_staged_sends() MROCE_EXCLUDES(engine_mutex_, tx_mutex_);

  // Never waits on the sender (the receivers' counts wait for a batch in delivery).
  DatapathCounters counters() const;
  const SocketTable& sockets() const { return sockets_; }
  Progress mode() const { return config_.progress; }

 private:
  // What reads one share of the sockets: the progress thread's (or the application's, in
  // manual and busy-poll progress) with one thread, each receive thread's with more.
  struct Receiver {
    Receiver(std::size_t slots, std::size_t max_datagram, std::size_t sockets);
    Mutex mutex;
    RxBatch batch MROCE_GUARDED_BY(mutex);
    DatapathCounters counters MROCE_GUARDED_BY(mutex);
    // Last SO_RXQ_OVFL value, by socket.
    std::vector<std::uint32_t> rxq_drops MROCE_GUARDED_BY(mutex);
    Poller poller;                     // receive threads: their own sockets
    std::vector<std::uint64_t> ready;  // its thread's own
    std::thread thread;
  };
  // What a receiver does once the engine has taken a batch.
  enum class After { kNothing, kFlush, kHandOffFull };

  void run();                      // the progress thread
  void run_transmit();             // the progress thread beside receive threads
  void run_receiver(Receiver& r);  // a receive thread
  bool split() const { return config_.threads > 1; }
  // Receive threads: the engine has something to send; the progress thread sends it.
  void hand_off();
  // Busy polling: stays out of the way while the application's polls make the steps,
  // serving only what they leave (arrivals and deadlines while it waits elsewhere);
  // returns whether it parked.
  bool park_while_polled() MROCE_EXCLUDES(engine_mutex_, tx_mutex_);
  // Sleeps `span` or until unpark().
  void sleep_parked(Time span);
  void unpark();
  // Receives what the ready sockets hold; returns whether anything arrived.
  bool receive_ready(Receiver& r, std::span<const std::uint64_t> ready, After after)
      MROCE_EXCLUDES(engine_mutex_, tx_mutex_, r.mutex);
  bool receive_socket(Receiver& r, std::size_t index, After after)
      MROCE_EXCLUDES(engine_mutex_, tx_mutex_, r.mutex);
  // Hands every datagram of `reads` to the engine, under its lock.
  void deliver(std::span<const RxRead> reads) MROCE_EXCLUDES(engine_mutex_);
  // The progress thread with its receive ring: everything the last wait received,
  // flushing after each batch; returns whether anything arrived.
  bool receive_ring(Receiver& r) MROCE_EXCLUDES(engine_mutex_, tx_mutex_, r.mutex);
  // Timers and sending, at most once per tick unless `now_due` (something arrived).
  void service(bool now_due) MROCE_EXCLUDES(engine_mutex_, tx_mutex_);
  void run_timers() MROCE_EXCLUDES(engine_mutex_);
  // Sends what the engine has to send. Waits for tx_mutex_ on the progress thread or
  // when `wait`; otherwise, finding it taken, leaves the holder a note and returns.
  void flush(bool wait = false) MROCE_EXCLUDES(engine_mutex_, tx_mutex_);
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

  // Held by flush() alone: a flush that finds it taken leaves its packets to the holder,
  // which looks at the note before it lets go. Any other holder would strand them until
  // the engine's next deadline, or for good when it has none (a ping-pong's).
  Mutex tx_mutex_;
  std::atomic<bool> flush_pending_{false};
  TxBatch tx_ MROCE_GUARDED_BY(tx_mutex_);
  // What sending counted; written by the holder of tx_mutex_, read without it.
  struct TxTotals {
    void add(const DatapathCounters& sent);
    std::atomic<std::uint64_t> datagrams{0}, syscalls{0}, gso_sends{0}, dropped{0},
        gso_fallbacks{0};
  };
  TxTotals tx_totals_;

  // One with one thread (or none), else one per receive thread; made at construction.
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::vector<std::uint64_t> ready_;  // the progress thread's own
  // The progress thread's, made by it (rx_uring, one thread, kThread), or null: then it
  // waits in epoll and reads each ready socket.
  std::unique_ptr<RxRing> rx_ring_;
  const std::size_t max_datagram_;
  const std::uint64_t checksum_errors_base_;  // the namespace's UDP checksum drops at start

  std::atomic<Time> last_service_{0};
  std::vector<std::size_t> listeners_;  // manual progress: read directly, not via epoll
  std::atomic<std::uint32_t> manual_polls_{0};
  std::atomic<bool> owed_flush_{false};  // manual: arrivals' output waits for the next call
  std::atomic<std::uint64_t> wakeups_{0};
  std::atomic<Time> app_polled_{0};           // busy polling: the application's last step
  std::atomic<Time> poll_gap_{kMicrosecond};  // busy polling: mean gap between its steps
  int park_fd_ = -1;                          // busy polling: wakes the parked thread
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace mroce::net
