// OpenMetaRoCE: the C++ API of the UDP stack, shaped like Verbs.
//
//   auto dev = mroce::Device::open({.addresses = {"10.0.0.1"}}, &err);
//   auto cq = dev->create_cq(256);
//   auto qp = dev->create_qp({.send_cq = cq.get(), .recv_cq = cq.get()});
//   auto mr = dev->reg_mr(buf, len, mroce::access::kAll);
//   qp->connect(peer_endpoint, peer_qp_num);   // learnt out of band, as with Verbs
//   qp->post_send(wr);  cq->poll(wc, 16);
//
// A Device is one endpoint: a set of UDP sockets on one or more local addresses (planes),
// one transport engine, and a progress thread. Queue pairs to the same peer endpoint
// share one connection (they are streams of it). Every object is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/transport.h"
#include "core/types.h"

namespace mroce {

enum class Progress : std::uint8_t {
  kThread,    // a background thread blocks on the sockets and timers (default)
  kBusyPoll,  // a background thread spins, parked while the application polls its CQs
  kManual,    // no thread: the application calls Device::progress()
};

enum class TransportKind : std::uint8_t { kMetaRoce, kRoceV2 };

struct DeviceOptions {
  // Local IPv4 or IPv6 addresses, one per plane. Empty: 127.0.0.1.
  std::vector<std::string> addresses;
  std::uint16_t port = 4793;  // fixed UDP destination port this endpoint listens on; 0: any free
  // Source ports used as path entropy; base 0 lets the device pick a free range.
  std::uint16_t src_port_base = 0;
  std::uint16_t src_port_count = 64;
  std::uint16_t paths = 16;  // paths per connection
  std::uint16_t mtu = 4096;  // payload bytes per packet
  TransportKind transport = TransportKind::kMetaRoce;
  Progress progress = Progress::kThread;
  std::uint64_t line_rate_bps = 10'000'000'000;
  std::uint64_t rx_capacity_bps = 0;  // 0: line_rate_bps
  bool gso = true;                    // batch sends with UDP GSO where the kernel offers it
  bool tx_uring = false;  // one io_uring submission per flush, not a sendmmsg per socket
  // The progress thread (Progress::kThread, one thread) waits for every socket and
  // receives from them in one io_uring call, not epoll and a recvmmsg per ready socket.
  // Where the kernel refuses io_uring, epoll and recvmmsg are used.
  bool rx_uring = false;
  // Runs the sleeping progress thread (Progress::kThread) at real-time priority
  // (SCHED_FIFO 1), so that on a loaded host an arrival is served when it wakes the
  // thread, not after busy tasks' time slices. Needs CAP_SYS_NICE or RLIMIT_RTPRIO;
  // Device::open fails when refused. Ignored in the other progress modes.
  bool progress_realtime = false;
  // Threads driving the device (Progress::kThread only): 1, one progress thread doing
  // everything; N > 1, a transmit thread (timers and sends) and N - 1 receive threads,
  // each reading its share of the sockets outside the engine lock and handing what it
  // read to the engine itself. Range 1..16.
  std::uint16_t progress_threads = 1;
  bool gro = true;
  // The host's own receive queue is a bottleneck too: when more than this many bytes wait
  // in a socket's receive buffer, ECN-capable datagrams read from it are handed to the
  // transport as CE-marked, as a switch marks a queue past its threshold. 0: off.
  std::uint32_t rx_ecn_threshold = 512 * 1024;
  std::uint64_t seed = 0;  // 0: from the system's random source
};

class CompletionQueue;
class SharedReceiveQueue;

struct QpOptions {
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  // Receives come from this queue (of the same device); post_recv is then refused.
  SharedReceiveQueue* srq = nullptr;
  StreamConfig stream;      // queue depths, inline size, RNR retry
  bool sq_sig_all = false;  // every send completes with an entry, as ibv's sq_sig_all
  // A datagram queue pair (Verbs' UD): never connected; post_datagram sends, each
  // receive takes one message behind a 40-byte GRH. Depths and inline size come from
  // `stream`; srq must be null.
  bool datagram = false;
  std::uint32_t qkey = 0;
};

class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual void* addr() const = 0;
  virtual std::size_t length() const = 0;
  virtual std::uint32_t lkey() const = 0;
  virtual std::uint32_t rkey() const = 0;
};

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  // Up to max completions, oldest first; returns how many.
  // With Progress::kManual or kBusyPoll, a poll that finds nothing first runs one
  // progress step of the device, so programs that only poll their CQs (as Verbs programs
  // do) progress; a busy-poll thread parks while such polls keep coming.
  virtual int poll(Completion* out, int max) = 0;
  // True when a poll would find nothing (a look, no progress step).
  virtual bool empty() const = 0;
  // A file descriptor that becomes readable when a completion arrives after
  // request_notify(); read() it (8 bytes) to re-arm, as with a completion channel.
  virtual int fd() const = 0;
  virtual void request_notify(bool solicited_only) = 0;
  virtual int capacity() const = 0;
};

// Receives shared by the queue pairs created on it: each message takes the oldest.
class SharedReceiveQueue {
 public:
  virtual ~SharedReceiveQueue() = default;
  virtual SrqId id() const = 0;
  virtual std::uint32_t depth() const = 0;
  virtual Errc post_recv(const RecvWr& wr) = 0;
  // Arms a one-shot EventKind::kSrqLimitReached for when fewer than `limit` receives
  // remain; 0 disarms. limit() is 0 again once the event fired.
  virtual Errc set_limit(std::uint32_t limit) = 0;
  virtual std::uint32_t limit() const = 0;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  virtual StreamId qp_num() const = 0;
  // Binds to the peer's queue pair; the connection to that endpoint is set up in band
  // (or shared, if one is up already). Returns immediately.
  virtual Errc connect(const Endpoint& peer, StreamId remote_qp_num) = 0;
  virtual Errc post_send(const SendWr& wr) = 0;
  virtual Errc post_recv(const RecvWr& wr) = 0;
  // Receiver-not-ready retries (7: forever) and the wait between them, for work posted
  // from now on (Verbs sets them when the queue pair moves to RTR/RTS).
  virtual Errc set_rnr_policy(std::uint8_t retry, Time timer) = 0;
  // Verbs' move to ERR: posted work completes with WR_FLUSH_ERR, later work too.
  virtual Errc set_error() { return Errc::kNotSupported; }
  // What the peer may do to this endpoint's memory through this queue pair (access::
  // kRemote* bits, Verbs' qp_access_flags); all three until set.
  virtual Errc set_remote_access(std::uint32_t rights) = 0;
  // The application is done with it, but keeps it a moment so that its last
  // acknowledgements leave: it takes no more shared receives and refuses nothing aloud.
  virtual Errc quiesce() = 0;
  virtual StreamState state() const = 0;
  virtual const QpOptions& options() const = 0;
  // Datagram queue pairs: one SEND or SEND_WITH_IMM of at most the MTU to `dest`, and
  // the Q_Key that incoming datagrams must carry.
  virtual Errc post_datagram(const SendWr& wr, const DatagramDest& dest) {
    (void)wr, (void)dest;
    return Errc::kNotSupported;
  }
  virtual Errc set_qkey(std::uint32_t qkey) {
    (void)qkey;
    return Errc::kNotSupported;
  }
  // Posts a list of send work requests with one doorbell (as ibv_post_send does with a
  // chain): the transport sees them all before anything is sent, so their packets leave
  // in larger batches. Stops at the first refused request; *posted (if not null) says
  // how many were posted.
  virtual Errc post_send_list(std::span<const SendWr> wrs, std::size_t* posted) {
    std::size_t n = 0;
    Errc rc = Errc::kOk;
    for (const SendWr& wr : wrs) {
      if ((rc = post_send(wr)) != Errc::kOk) break;
      ++n;
    }
    if (posted) *posted = n;
    return rc;
  }
};

// What the transport did, for one connection and its paths.
struct ConnectionReport {
  ConnId id = 0;
  ConnStats conn;
  std::vector<PathStats> paths;
};

// What the datapath itself did, beside the transport's counters: system calls,
// batching, and datagrams the kernel refused or dropped.
struct DatapathCounters {
  std::uint64_t tx_datagrams = 0;      // handed to the kernel
  std::uint64_t tx_syscalls = 0;       // sendmmsg calls
  std::uint64_t tx_gso_sends = 0;      // messages the kernel split into several datagrams
  std::uint64_t tx_dropped = 0;        // refused by the kernel (buffer full, no route, ...)
  std::uint64_t tx_gso_fallbacks = 0;  // sockets where GSO failed and was turned off
  std::uint64_t rx_datagrams = 0;      // after splitting coalesced (GRO) reads
  std::uint64_t rx_syscalls = 0;       // recvmmsg calls that returned something
  std::uint64_t rx_ring_reads = 0;     // reads the receive ring made (rx_uring): no call each
  std::uint64_t rx_gro_reads = 0;      // reads holding more than one datagram
  std::uint64_t rx_truncated = 0;      // larger than any datagram we send: discarded
  std::uint64_t rx_socket_drops = 0;   // dropped by the kernel for a full receive buffer
  // Dropped by the kernel for a bad UDP checksum: counted for the whole network namespace
  // (the kernel keeps no count per socket), at most what our sockets lost, and not
  // counted in rx_socket_drops.
  std::uint64_t rx_checksum_errors = 0;
  std::uint64_t rx_local_ce = 0;  // marked CE here for a deep receive queue
  std::uint64_t wakeups = 0;      // times the progress thread woke up
};

class Device {
 public:
  // Opens the sockets and starts the progress thread. On failure returns null and sets
  // *error to one line that says what went wrong.
  static std::unique_ptr<Device> open(const DeviceOptions& options, std::string* error);
  virtual ~Device() = default;

  virtual const DeviceOptions& options() const = 0;
  // Where peers reach this device: the first plane's address and the listening port.
  virtual Endpoint endpoint() const = 0;
  virtual std::vector<Address> planes() const = 0;

  virtual std::unique_ptr<MemoryRegion> reg_mr(void* addr, std::size_t length,
                                               std::uint32_t access) = 0;
  // As reg_mr, with the address peers name in WRITE/READ/atomics chosen by the caller.
  virtual std::unique_ptr<MemoryRegion> reg_mr_iova(void* addr, std::size_t length,
                                                    std::uint64_t iova, std::uint32_t access) = 0;
  virtual std::unique_ptr<CompletionQueue> create_cq(int capacity) = 0;
  virtual std::unique_ptr<QueuePair> create_qp(const QpOptions& options) = 0;
  // Outlives the queue pairs created on it.
  virtual std::unique_ptr<SharedReceiveQueue> create_srq(std::uint32_t depth) = 0;

  // Manual progress: handle what arrived and what is due, then return.
  virtual void progress() = 0;
  // Manual progress for a program with nothing else to do: sleeps until a datagram
  // arrives, a timer of the transport is due, or max_wait passes, then does what
  // progress() does. (With a progress thread it is progress(), not a sleep.)
  virtual void wait(Time max_wait) = 0;

  virtual Counters counters() const = 0;
  virtual std::vector<ConnectionReport> connections() const = 0;

  // Read without holding up the sender: a batch being sent may already be in
  // counters().tx_packets and not yet in tx_datagrams, which counts after sendmmsg.
  virtual DatapathCounters datapath_counters() const = 0;
  // Connection and path events (established, path failed, plane down, ...) since the
  // last call, oldest first; the most recent 4096 are kept.
  virtual std::vector<Event> take_events() = 0;
  // Called with every event as it happens, from inside the engine (under its lock): it
  // must not call back into the device. For asynchronous notification (Verbs' async fd).
  virtual void set_event_hook(std::function<void(const Event&)> hook) = 0;
  // Why the last reg_mr, create_cq or create_qp of this device returned null: one line.
  virtual std::string last_error() const = 0;
};

// Parses "a.b.c.d" or an IPv6 literal. False when it is neither.
bool parse_address(const std::string& text, Address* out);

// Overrides options from MROCE_* environment variables (see docs/STACK.md), for
// programs that cannot pass options themselves. False, with one line in *error, when a
// variable is malformed; options is then unchanged.
bool apply_environment(DeviceOptions* options, std::string* error);

}  // namespace mroce
