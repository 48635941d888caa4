// mroce-udp-probe: sends datagrams from chosen UDP source ports and receives them, reading
// each packet's ECN field, so that tests can measure loss, CE marking and which ports get
// through a testbed fabric.
//
// Sending uses unconnected sockets (sendto), the way the MetaRoCE stack sends, unless
// --connect asks for connected ones. In "both" mode one process sends from one network
// namespace and receives in another: each socket stays in the namespace it was created
// in, so no coordination between two processes is needed.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace {

constexpr char kMagic[8] = {'M', 'R', 'O', 'C', 'E', 'P', 'R', 'B'};
constexpr size_t kHeader = sizeof(kMagic) + 8;  // magic, source port, sequence number
constexpr int kIpUdpHeaders = 28;

volatile sig_atomic_t g_signalled = 0;  // recv mode: report and exit on SIGINT/SIGTERM

struct Options {
  std::string mode = "both";
  std::string dst;
  std::string src;
  std::string dst_ns;
  std::string src_ns;
  uint16_t dport = 4793;
  std::string sports = "40000";
  uint64_t count = 1000;
  size_t size = 64;
  uint64_t pps = 0;
  std::string ecn = "ect0";
  bool connect = false;
  int wait_ms = 300;
  int timeout_ms = 2000;
  uint64_t expect = 0;
  bool per_port = false;
  bool json = false;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "mroce-udp-probe: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "mroce-udp-probe: %s\n", what.c_str());
  std::exit(2);
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// "40000", "40000-40015" or "40000,40007,41000".
std::vector<uint16_t> parse_ports(const std::string& text) {
  std::vector<uint16_t> ports;
  auto to_port = [&](const std::string& s) -> uint16_t {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty() || v == 0 || v > 65535) usage_error("bad port '" + s + "'");
    return uint16_t(v);
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-');
    if (dash == std::string::npos) {
      ports.push_back(to_port(item));
    } else {
      uint16_t a = to_port(item.substr(0, dash)), b = to_port(item.substr(dash + 1));
      if (b < a) usage_error("bad port range '" + item + "'");
      for (uint32_t p = a; p <= b; ++p) ports.push_back(uint16_t(p));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ports;
}

int parse_ecn(const std::string& s) {
  if (s == "not-ect") return 0;
  if (s == "ect1") return 1;
  if (s == "ect0") return 2;
  if (s == "ce") return 3;
  usage_error("--ecn must be not-ect, ect0, ect1 or ce");
}

sockaddr_in make_addr(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (ip.empty()) {
    a.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    usage_error("bad IPv4 address '" + ip + "'");
  }
  return a;
}

// Runs fn with the calling thread inside the named network namespace (a name under
// /run/netns, or a path), then returns to the original one. Sockets keep the namespace
// they were created in.
template <typename Fn>
void in_netns(const std::string& ns, Fn fn) {
  if (ns.empty()) {
    fn();
    return;
  }
  std::string path = ns.find('/') == std::string::npos ? "/run/netns/" + ns : ns;
  int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0) fail("open /proc/thread-self/ns/net");
  int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) fail("open " + path);
  if (setns(target, CLONE_NEWNET) != 0) fail("setns " + path);
  fn();
  if (setns(self, CLONE_NEWNET) != 0) fail("setns back");
  close(target);
  close(self);
}

struct PortCount {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t ce = 0;
};

struct Report {
  uint64_t sent = 0, send_errors = 0;
  uint64_t received = 0, ecn[4] = {0, 0, 0, 0}, rcvbuf_drops = 0, bytes = 0;
  uint64_t first_rx_ns = 0, last_rx_ns = 0;
  std::map<uint16_t, PortCount> ports;
};

// The receive side: counts our datagrams by source port and ECN codepoint.
class Receiver {
 public:
  explicit Receiver(const Options& o) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fail("socket");
    int on = 1, buf = 32 << 20;
    // A large buffer, so that the receiver is never where packets are lost.
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    if (setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &on, sizeof on) != 0) fail("IP_RECVTOS");
    if (setsockopt(fd_, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on) != 0) fail("SO_RXQ_OVFL");
    sockaddr_in a = make_addr(o.dst, o.dport);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("bind receiver");
  }
  ~Receiver() { close(fd_); }

  // Receives until stop() is called or, when limits are given, until `expect` packets
  // arrived or `idle_ms` passed without one (counted from the start, then from the last
  // packet), or a SIGINT/SIGTERM came.
  void run(uint64_t expect, int idle_ms) {
    constexpr int kBatch = 64;
    std::vector<std::array<char, 65536>> bufs(kBatch);
    std::vector<std::array<char, 128>> ctrl(kBatch);
    std::vector<sockaddr_in> from(kBatch);
    std::vector<iovec> iov(kBatch);
    std::vector<mmsghdr> msgs(kBatch);
    uint64_t last_activity = now_ns();
    while (!stop_.load() && !g_signalled) {
      pollfd p{fd_, POLLIN, 0};
      int r = poll(&p, 1, 20);
      if (r < 0 && errno != EINTR) fail("poll");
      if (r <= 0) {
        uint64_t idle = (now_ns() - last_activity) / 1'000'000;
        if (idle_ms > 0 && idle >= uint64_t(idle_ms)) break;
        continue;
      }
      for (int i = 0; i < kBatch; ++i) {
        iov[i] = {bufs[i].data(), bufs[i].size()};
        msgs[i].msg_hdr = {};
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof from[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = ctrl[i].data();
        msgs[i].msg_hdr.msg_controllen = ctrl[i].size();
      }
      int n = recvmmsg(fd_, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        fail("recvmmsg");
      }
      uint64_t t = now_ns();
      last_activity = t;
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; ++i) account(msgs[i], bufs[i].data(), from[i], t);
      if (expect > 0 && report_.received >= expect) break;
    }
  }

  void stop() { stop_.store(true); }
  uint64_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return report_.received;
  }
  Report take() {
    std::lock_guard<std::mutex> lock(mu_);
    return report_;
  }

 private:
  void account(mmsghdr& m, const char* data, const sockaddr_in& from, uint64_t t) {
    if (m.msg_len < kHeader || std::memcmp(data, kMagic, sizeof kMagic) != 0) return;
    int tos = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr); c; c = CMSG_NXTHDR(&m.msg_hdr, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) tos = *CMSG_DATA(c);
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
        uint32_t drops = 0;
        std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
        report_.rcvbuf_drops = drops;
      }
    }
    PortCount& pc = report_.ports[ntohs(from.sin_port)];
    ++report_.received;
    ++pc.received;
    report_.bytes += m.msg_len + kIpUdpHeaders;
    if (tos >= 0) {
      ++report_.ecn[tos & 3];
      if ((tos & 3) == 3) ++pc.ce;
    }
    if (report_.first_rx_ns == 0) report_.first_rx_ns = t;
    report_.last_rx_ns = t;
  }

  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  Report report_;
};

// The send side: one socket per source port, round robin over the ports, paced when asked.
struct Sender {
  struct Port {
    uint16_t port;
    int fd;
  };
  std::vector<Port> socks;
  sockaddr_in dst{};

  explicit Sender(const Options& o, const std::vector<uint16_t>& ports) {
    dst = make_addr(o.dst, o.dport);
    int tos = parse_ecn(o.ecn);
    for (uint16_t p : ports) {
      int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0) fail("socket");
      if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) != 0) fail("IP_TOS");
      sockaddr_in a = make_addr(o.src, p);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        fail("bind source port " + std::to_string(p));
      if (o.connect && ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0)
        fail("connect");
      socks.push_back({p, fd});
    }
  }
  ~Sender() {
    for (auto& s : socks) close(s.fd);
  }

  void run(const Options& o, Report& r) {
    std::vector<char> payload(std::max(o.size, kHeader), 0);
    std::memcpy(payload.data(), kMagic, sizeof kMagic);
    uint64_t interval = o.pps ? 1'000'000'000u / o.pps : 0;
    uint64_t next = now_ns();
    for (uint64_t seq = 0; seq < o.count; ++seq) {
      for (auto& s : socks) {
        if (interval) {
          // Paced without catching up: after a stall the schedule restarts rather than
          // bursting, so the sender never exceeds the rate it was given.
          uint64_t t = now_ns();
          if (t > next + interval) next = t;
          if (t < next) {
            timespec ts{time_t(next / 1'000'000'000u), long(next % 1'000'000'000u)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
          }
          next += interval;
        }
        uint32_t port = s.port, sq = uint32_t(seq);
        std::memcpy(payload.data() + sizeof kMagic, &port, 4);
        std::memcpy(payload.data() + sizeof kMagic + 4, &sq, 4);
        ssize_t n = o.connect ? send(s.fd, payload.data(), payload.size(), 0)
                              : sendto(s.fd, payload.data(), payload.size(), 0,
                                       reinterpret_cast<sockaddr*>(&dst), sizeof dst);
        if (n < 0) {
          ++r.send_errors;
          continue;
        }
        ++r.sent;
        ++r.ports[s.port].sent;
      }
    }
  }
};

// Prints what the mode measured: send mode knows only what it sent, recv mode only what
// it received; both modes report loss.
void print_report(const Options& o, const Report& r) {
  bool tx = o.mode != "recv", rx = o.mode != "send";
  double secs = r.last_rx_ns > r.first_rx_ns ? double(r.last_rx_ns - r.first_rx_ns) / 1e9 : 0;
  double mbit = secs > 0 ? double(r.bytes) * 8 / secs / 1e6 : 0;
  uint64_t lost = r.sent > r.received ? r.sent - r.received : 0;
  std::vector<std::pair<std::string, std::string>> f;
  auto add = [&](const char* k, uint64_t v) { f.emplace_back(k, std::to_string(v)); };
  auto addf = [&](const char* k, double v, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    f.emplace_back(k, b);
  };
  if (tx) {
    add("sent", r.sent);
    add("send_errors", r.send_errors);
  }
  if (rx) {
    add("received", r.received);
    if (tx) add("lost", lost);
    add("ce", r.ecn[3]);
    add("ect0", r.ecn[2]);
    add("ect1", r.ecn[1]);
    add("not_ect", r.ecn[0]);
    add("rcvbuf_drops", r.rcvbuf_drops);
    addf("rx_seconds", secs, 6);
    addf("rx_mbit_s", mbit, 3);
  }
  auto port_fields = [&](uint16_t port, const PortCount& pc) {
    std::vector<std::pair<std::string, uint64_t>> pf{{"port", port}};
    if (tx) pf.emplace_back("sent", pc.sent);
    if (rx) {
      pf.emplace_back("received", pc.received);
      pf.emplace_back("ce", pc.ce);
    }
    return pf;
  };
  if (o.json) {
    std::string out = "{";
    for (size_t i = 0; i < f.size(); ++i)
      out += (i ? ", \"" : "\"") + f[i].first + "\": " + f[i].second;
    if (o.per_port) {
      out += ", \"ports\": [";
      const char* sep = "";
      for (auto& [port, pc] : r.ports) {
        out += sep;
        out += "{";
        auto pf = port_fields(port, pc);
        for (size_t i = 0; i < pf.size(); ++i)
          out += (i ? ", \"" : "\"") + pf[i].first + "\": " + std::to_string(pf[i].second);
        out += "}";
        sep = ", ";
      }
      out += "]";
    }
    std::printf("%s}\n", out.c_str());
    return;
  }
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) out += (i ? " " : "") + f[i].first + "=" + f[i].second;
  std::printf("%s\n", out.c_str());
  if (o.per_port) {
    for (auto& [port, pc] : r.ports) {
      std::string line;
      for (auto& [k, v] : port_fields(port, pc))
        line += (line.empty() ? "" : " ") + k + "=" + std::to_string(v);
      std::printf("%s\n", line.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Sends UDP datagrams from given source ports and counts what arrives, with its ECN "
      "field.\nModes: both (send and receive in one process, each side in its own network "
      "namespace), send, recv."};
  app.add_option("--mode", o.mode, "both, send or recv")
      ->check(CLI::IsMember({"both", "send", "recv"}));
  app.add_option("--dst", o.dst, "receiver IPv4 address (recv mode: address to bind, default any)");
  app.add_option("--dport", o.dport, "receiver UDP port");
  app.add_option("--src", o.src, "source address to bind (default: any)");
  app.add_option("--sport", o.sports, "source ports: P, A-B or P,Q,R");
  app.add_option("--src-ns", o.src_ns, "sender's network namespace (name or path)");
  app.add_option("--dst-ns", o.dst_ns, "receiver's network namespace (name or path)");
  app.add_option("--count", o.count, "datagrams per source port");
  app.add_option("--size", o.size, "UDP payload bytes (at least 16)")->check(CLI::Range(16, 65000));
  app.add_option("--pps", o.pps, "total send rate in packets/s, paced (0: as fast as possible)");
  app.add_option("--ecn", o.ecn, "ECN field sent: not-ect, ect0, ect1 or ce");
  app.add_flag("--connect", o.connect, "send from connected sockets (connect + send)");
  app.add_option("--wait-ms", o.wait_ms, "after the last send, wait this long for stragglers");
  app.add_option("--timeout-ms", o.timeout_ms,
                 "recv mode: stop after this long without a packet (0: never)");
  app.add_option("--expect", o.expect, "recv mode: stop after this many packets");
  app.add_flag("--per-port", o.per_port, "also print counts per source port");
  app.add_flag("--json", o.json, "print JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // 0 for --help
  }
  if (o.mode != "recv" && o.dst.empty()) usage_error("--dst is required");
  parse_ecn(o.ecn);
  std::vector<uint16_t> ports = parse_ports(o.sports);

  Report report;
  if (o.mode == "send") {
    std::unique_ptr<Sender> sender;
    in_netns(o.src_ns, [&] { sender = std::make_unique<Sender>(o, ports); });
    sender->run(o, report);
    print_report(o, report);
    return 0;
  }

  std::unique_ptr<Receiver> receiver;
  in_netns(o.dst_ns, [&] { receiver = std::make_unique<Receiver>(o); });
  if (o.mode == "recv") {
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_signalled = 1; };
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::fprintf(stderr, "mroce-udp-probe: listening on port %u\n", unsigned(o.dport));
    receiver->run(o.expect, o.timeout_ms);
    print_report(o, receiver->take());
    return 0;
  }

  std::unique_ptr<Sender> sender;
  in_netns(o.src_ns, [&] { sender = std::make_unique<Sender>(o, ports); });
  std::thread rx([&] { receiver->run(0, 0); });
  sender->run(o, report);
  // Wait for stragglers, but stop early once everything arrived.
  uint64_t deadline = now_ns() + uint64_t(o.wait_ms) * 1'000'000u;
  while (now_ns() < deadline && receiver->received() < report.sent)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  receiver->stop();
  rx.join();
  Report got = receiver->take();
  got.sent = report.sent;
  got.send_errors = report.send_errors;
  for (auto& [port, pc] : report.ports) got.ports[port].sent = pc.sent;
  print_report(o, got);
  return 0;
}
