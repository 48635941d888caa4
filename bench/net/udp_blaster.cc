// mroce-udp-blaster: the raw UDP limits of this machine, the yardstick for the stack.
//   bandwidth: a sender pushing datagrams of one size with UDP GSO (sendmmsg, up to 64 KiB
//   per message) to a receiver reading with UDP GRO (recvmmsg), in two threads of one
//   process or in two processes (send / recv);
//   latency: a ping-pong of small datagrams between two threads, blocking or spinning;
//   placement (recv --place): what the stack's receiver must do beyond reading, each
//   datagram's payload put into final memory after a 56-byte header: `copy` (GRO read,
//   then memcpy), `peek` (MSG_PEEK the header, then recvmsg into [header, final memory];
//   no GRO: a read takes one datagram) or `scatter` (GRO; peek the first header, then one
//   recvmsg scattering the train's headers and payloads, as if its datagrams were
//   consecutive segments of one WRITE, the best case for reading the header first).
// Prints one JSON object per run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "mroce-udp-blaster: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

sockaddr_in make_addr(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "mroce-udp-blaster: '%s' is not an IPv4 address\n", ip.c_str());
    std::exit(2);
  }
  return a;
}

int open_socket(const std::string& ip, int port, bool gro) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) die("socket");
  const int big = 32 << 20, on = 1;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  if (gro) setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on);
  sockaddr_in a = make_addr(ip, port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind " + ip);
  return fd;
}

int bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Sends `size`-byte datagrams to `to` for `seconds`, `segments` per GSO message.
std::uint64_t blast(int fd, const sockaddr_in& to, int size, int segments, double seconds,
                    const std::atomic<bool>* stop) {
  constexpr int kBatch = 8;
  std::vector<std::uint8_t> payload(std::size_t(size) * segments, 0x5a);
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  alignas(cmsghdr) char control[kBatch][CMSG_SPACE(sizeof(std::uint16_t))];
  for (int i = 0; i < kBatch; ++i) {
    iov[i] = iovec{payload.data(), payload.size()};
    msghdr& h = msgs[i].msg_hdr;
    h = msghdr{};
    h.msg_name = const_cast<sockaddr_in*>(&to);
    h.msg_namelen = sizeof to;
    h.msg_iov = &iov[i];
    h.msg_iovlen = 1;
    if (segments > 1) {
      h.msg_control = control[i];
      h.msg_controllen = sizeof control[i];
      cmsghdr* c = CMSG_FIRSTHDR(&h);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
      const auto seg = static_cast<std::uint16_t>(size);
      std::memcpy(CMSG_DATA(c), &seg, sizeof seg);
    }
  }
  std::uint64_t sent = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end && !(stop && stop->load())) {
    const int n = sendmmsg(fd, msgs, kBatch, 0);
    if (n > 0) sent += std::uint64_t(n) * segments;
  }
  return sent;
}

struct Received {
  std::uint64_t datagrams = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;
};

enum class Place { kNone, kCopy, kPeek, kScatter };
constexpr std::size_t kHeader = 56;                    // a MetaRoCE WRITE packet's headers
constexpr std::size_t kFinal = std::size_t(64) << 20;  // the "registered memory"

// Reads with the header first: `place` kPeek or kScatter (see the top of the file).
Received drain_peeking(int fd, double idle, Place place, std::size_t size) {
  std::vector<std::uint8_t> final_memory(kFinal + 65536);
  const std::size_t payload = size > kHeader ? size - kHeader : 0;
  constexpr int kMaxSegments = 64;
  std::uint8_t headers[kMaxSegments][kHeader];
  iovec iov[2 * kMaxSegments];
  alignas(cmsghdr) char control[64];
  const timeval tv{0, static_cast<suseconds_t>(idle * 1e6)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  Received r;
  Clock::time_point first{}, last{};
  std::size_t at = 0;
  for (;;) {
    // The header says where the payload goes (here: the next free place).
    std::uint8_t peeked[kHeader];
    const ssize_t p = recv(fd, peeked, sizeof peeked, MSG_PEEK);
    if (p <= 0) {
      if (r.datagrams > 0) break;
      continue;
    }
    const int segs = place == Place::kScatter ? kMaxSegments : 1;
    if (at + std::size_t(segs) * payload > kFinal) at = 0;
    for (int k = 0; k < segs; ++k) {
      iov[2 * k] = iovec{headers[k], kHeader};
      iov[2 * k + 1] = iovec{final_memory.data() + at + std::size_t(k) * payload, payload};
    }
    msghdr h{};
    h.msg_iov = iov;
    h.msg_iovlen = std::size_t(2 * segs);
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd, &h, 0);
    if (n <= 0) continue;
    last = Clock::now();
    if (r.datagrams == 0) first = last;
    r.bytes += std::uint64_t(n);
    const std::size_t got = (std::size_t(n) + size - 1) / size;
    r.datagrams += got;
    at += got * payload;
  }
  r.seconds = std::chrono::duration<double>(last - first).count();
  return r;
}

// Reads until nothing arrived for `idle` seconds after the first datagram; kCopy also
// copies every payload (after its header) into final memory.
Received drain(int fd, double idle, Place place = Place::kNone, std::size_t size = 0) {
  if (place == Place::kPeek || place == Place::kScatter)
    return drain_peeking(fd, idle, place, size);
  std::vector<std::uint8_t> final_memory(place == Place::kCopy ? kFinal + 65536 : 0);
  std::size_t at = 0;
  constexpr int kBatch = 32;
  constexpr std::size_t kSlot = 65536;
  std::vector<std::uint8_t> buf(kBatch * kSlot);
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  alignas(cmsghdr) char control[kBatch][64];
  const timeval tv{0, static_cast<suseconds_t>(idle * 1e6)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  Received r;
  Clock::time_point first{}, last{};
  for (;;) {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = iovec{buf.data() + i * kSlot, kSlot};
      msghdr& h = msgs[i].msg_hdr;
      h = msghdr{};
      h.msg_iov = &iov[i];
      h.msg_iovlen = 1;
      h.msg_control = control[i];
      h.msg_controllen = sizeof control[i];
    }
    const int n = recvmmsg(fd, msgs, kBatch, MSG_WAITFORONE, nullptr);
    if (n <= 0) {
      if (r.datagrams > 0) break;
      continue;
    }
    last = Clock::now();
    if (r.datagrams == 0) first = last;
    for (int i = 0; i < n; ++i) {
      int seg = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
          std::memcpy(&seg, CMSG_DATA(c), sizeof seg);
      }
      const std::uint32_t len = msgs[i].msg_len;
      r.bytes += len;
      r.datagrams += seg > 0 ? (len + seg - 1) / std::uint32_t(seg) : 1;
      if (place == Place::kCopy) {
        const std::uint32_t step = seg > 0 ? std::uint32_t(seg) : len;
        for (std::uint32_t off = 0; off < len; off += step) {
          const std::uint32_t one = std::min(step, len - off);
          if (one <= kHeader) continue;
          if (at + one > kFinal) at = 0;
          std::memcpy(final_memory.data() + at, buf.data() + std::size_t(i) * kSlot + off + kHeader,
                      one - kHeader);
          at += one - kHeader;
        }
      }
    }
  }
  r.seconds = std::chrono::duration<double>(last - first).count();
  return r;
}

void print_bw(const char* mode, int size, int segments, std::uint64_t sent, const Received& r) {
  const double gbps = r.seconds > 0 ? double(r.bytes) * 8 / r.seconds / 1e9 : 0;
  std::printf(
      "{\"test\": \"bw\", \"mode\": \"%s\", \"size\": %d, \"gso_segments\": %d, \"sent\": %llu, "
      "\"received\": %llu, \"seconds\": %.3f, \"gbit_s\": %.3f}\n",
      mode, size, segments, static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(r.datagrams), r.seconds, gbps);
}

void pingpong(const std::string& ip, int size, int iters, bool busy) {
  const int a = open_socket(ip, 0, false), b = open_socket(ip, 0, false);
  const sockaddr_in to_a = make_addr(ip, bound_port(a)), to_b = make_addr(ip, bound_port(b));
  const int flags = busy ? MSG_DONTWAIT : 0;
  const auto recv_one = [&](int fd, std::uint8_t* buf) {
    for (;;) {
      if (recv(fd, buf, 65536, flags) >= 0) return;
      if (errno != EAGAIN && errno != EINTR) die("recv");
    }
  };
  std::thread echo([&] {
    std::vector<std::uint8_t> buf(65536);
    for (int i = 0; i < iters; ++i) {
      recv_one(b, buf.data());
      sendto(b, buf.data(), std::size_t(size), 0, reinterpret_cast<const sockaddr*>(&to_a),
             sizeof to_a);
    }
  });
  std::vector<std::uint8_t> buf(65536, 1);
  std::vector<double> rtt;
  rtt.reserve(std::size_t(iters));
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    sendto(a, buf.data(), std::size_t(size), 0, reinterpret_cast<const sockaddr*>(&to_b),
           sizeof to_b);
    recv_one(a, buf.data());
    rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  echo.join();
  close(a);
  close(b);
  std::sort(rtt.begin(), rtt.end());
  double sum = 0;
  for (double x : rtt) sum += x;
  std::printf(
      "{\"test\": \"lat\", \"mode\": \"%s\", \"size\": %d, \"iterations\": %d, "
      "\"half_rtt_us\": {\"min\": %.2f, \"median\": %.2f, \"avg\": %.2f, \"p99\": %.2f}}\n",
      busy ? "busy" : "blocking", size, iters, rtt.front() / 2, rtt[rtt.size() / 2] / 2,
      sum / double(rtt.size()) / 2, rtt[rtt.size() * 99 / 100] / 2);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Raw UDP limits of this machine: GSO/GRO bandwidth and ping-pong latency."};
  app.require_subcommand(1);
  std::string ip = "127.0.0.1", to;
  int size = 4172, segments = 15, port = 0, iters = 20000;
  double seconds = 3;
  bool busy = false;

  auto* bw = app.add_subcommand("bw", "sender and receiver threads in this process");
  bw->add_option("--addr", ip, "local IPv4 address");
  bw->add_option("--size", size, "datagram size")->check(CLI::Range(1, 65507));
  bw->add_option("--gso", segments, "datagrams per GSO message (1: no GSO)")
      ->check(CLI::Range(1, 64));
  bw->add_option("--seconds", seconds)->check(CLI::PositiveNumber);

  auto* send = app.add_subcommand("send", "sender only, to a receiver elsewhere");
  send->add_option("--to", to, "receiver IPv4 address")->required();
  send->add_option("--port", port, "receiver port")->required()->check(CLI::Range(1, 65535));
  send->add_option("--size", size)->check(CLI::Range(1, 65507));
  send->add_option("--gso", segments)->check(CLI::Range(1, 64));
  send->add_option("--seconds", seconds)->check(CLI::PositiveNumber);

  auto* recv = app.add_subcommand("recv", "receiver only; prints its port, then the result");
  recv->add_option("--addr", ip);
  recv->add_option("--port", port)->check(CLI::Range(0, 65535));
  std::string place_name = "none";
  recv->add_option("--place", place_name, "none, copy, peek or scatter (see the source's top)")
      ->check(CLI::IsMember({"none", "copy", "peek", "scatter"}));
  recv->add_option("--size", size, "datagram size (peek, scatter)")->check(CLI::Range(57, 65507));

  auto* lat = app.add_subcommand("lat", "ping-pong between two threads of this process");
  lat->add_option("--addr", ip);
  lat->add_option("--size", size)->check(CLI::Range(1, 65507));
  lat->add_option("--iters", iters)->check(CLI::PositiveNumber);
  lat->add_flag("--busy", busy, "spin on non-blocking reads instead of sleeping");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "mroce-udp-blaster: %s\n", e.what());
    return 2;
  }
  if (size * segments > 65507) {
    std::fprintf(stderr, "mroce-udp-blaster: --size x --gso exceeds 65507 bytes\n");
    return 2;
  }

  if (*bw) {
    const int rx = open_socket(ip, 0, true), tx = open_socket(ip, 0, false);
    const sockaddr_in dst = make_addr(ip, bound_port(rx));
    Received r;
    std::thread receiver([&] { r = drain(rx, 0.3); });
    const std::uint64_t sent = blast(tx, dst, size, segments, seconds, nullptr);
    receiver.join();
    print_bw("threads", size, segments, sent, r);
  } else if (*send) {
    const int tx = open_socket("0.0.0.0", 0, false);
    const std::uint64_t sent = blast(tx, make_addr(to, port), size, segments, seconds, nullptr);
    std::printf("{\"test\": \"bw-send\", \"sent\": %llu}\n", static_cast<unsigned long long>(sent));
  } else if (*recv) {
    const Place place = place_name == "copy"      ? Place::kCopy
                        : place_name == "peek"    ? Place::kPeek
                        : place_name == "scatter" ? Place::kScatter
                                                  : Place::kNone;
    const int rx = open_socket(ip, port, place != Place::kPeek);
    std::printf("%d\n", bound_port(rx));
    std::fflush(stdout);
    print_bw("processes", 0, 0, 0, drain(rx, 0.5, place, std::size_t(size)));
  } else if (*lat) {
    pingpong(ip, size, iters, busy);
  }
  return 0;
}
