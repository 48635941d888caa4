#include "side_channel.h"

#include "messages.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

namespace mroce::perf {

SideChannel::~SideChannel() {
  if (fd_ >= 0) close(fd_);
}

SideChannel::SideChannel(SideChannel&& other) noexcept {
  *this = std::move(other);
}

SideChannel& SideChannel::operator=(SideChannel&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

bool SideChannel::listen(std::uint16_t port, std::string* error) {
  fd_ = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int family = AF_INET6;
  if (fd_ < 0) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    family = AF_INET;
  }
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  const int on = 1, off = 0;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET6) {
    setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = in6addr_any;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    len = sizeof *a;
  }
  if (bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd_, 4) != 0) {
    *error = "side channel port " + std::to_string(port) + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool SideChannel::accept(SideChannel* out, std::string* error) {
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    *error = std::string("accept: ") + std::strerror(errno);
    return false;
  }
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  *out = SideChannel();
  out->fd_ = fd;
  return true;
}

bool SideChannel::connect(const std::string& host, std::uint16_t port, double timeout,
                          std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *error = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return false;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  int last = 0;
  do {
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        freeaddrinfo(res);
        const int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        fd_ = fd;
        return true;
      }
      last = errno;
      close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  freeaddrinfo(res);
  *error = "no server at " + host + " port " + std::to_string(port) + ": " + std::strerror(last);
  return false;
}

std::string SideChannel::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, text, sizeof text);
    return text;
  }
  const in6_addr& a = reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof text);
  } else {
    inet_ntop(AF_INET6, &a, text, sizeof text);
  }
  return text;
}

bool SideChannel::send(const nlohmann::json& message, std::string* error) {
  const std::string line = message.dump() + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = std::string("side channel: ") + std::strerror(errno);
      return false;
    }
    off += std::size_t(n);
  }
  return true;
}

bool SideChannel::readable() {
  if (buffer_.find('\n') != std::string::npos) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool SideChannel::receive(nlohmann::json* message, double timeout, std::string* error,
                          const std::function<void()>& idle) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      const std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!parse_line(line, message, error)) {
        *error = "side channel: the peer sent " + *error;
        return false;
      }
      return true;
    }
    if (buffer_.size() > kMaxLine) {
      *error = "side channel: the peer sent " + std::string("a line longer than ") +
               std::to_string(kMaxLine >> 20) + " MiB";
      return false;
    }
    int wait_ms = idle ? 1 : -1;
    if (timeout >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        *error = "side channel: the peer did not answer in time";
        return false;
      }
      wait_ms = idle ? 1 : static_cast<int>(left.count());
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      if (idle) idle();
      continue;
    }
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "side channel: the peer closed the connection";
      return false;
    }
    buffer_.append(chunk, std::size_t(n));
  }
}

}  // namespace mroce::perf
