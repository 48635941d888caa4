#include "rdmacm/service.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <thread>

namespace mroce::rdmacm {
namespace {

class Service {
 public:
  Service() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = 0;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &e);
    std::thread([this] { run(); }).detach();
  }

  void add(Socket* s) {
    s->token = next_token_++;
    sockets_[s->token] = s;
    epoll_event e{};
    e.events = interest(*s);
    e.data.u64 = s->token;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, s->fd, &e);
    s->registered = true;
  }

  void update(Socket* s) {
    if (!s->registered) return;
    epoll_event e{};
    e.events = interest(*s);
    e.data.u64 = s->token;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, s->fd, &e);
  }

  void remove(Socket* s) {
    if (!s->registered) return;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, s->fd, nullptr);
    sockets_.erase(s->token);
    s->registered = false;
  }

  void wake() {
    const std::uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
  }

  template <typename Fn>
  void for_each(Fn fn) {
    std::vector<Socket*> all;
    for (auto& [token, s] : sockets_) all.push_back(s);
    for (Socket* s : all) fn(s);
  }

 private:
  static std::uint32_t interest(const Socket& s) {
    return EPOLLIN | EPOLLRDHUP | ((s.connecting || !s.tx.empty()) ? EPOLLOUT : 0u);
  }

  void run() {
    epoll_event events[32];
    for (;;) {
      int timeout = -1;
      {
        std::lock_guard lock(cm_mutex());
        const std::int64_t at = next_deadline();
        if (at != 0) timeout = static_cast<int>(std::max<std::int64_t>(0, at - now_ms()));
      }
      const int n = epoll_wait(epoll_, events, 32, timeout);
      std::lock_guard lock(cm_mutex());
      for (int i = 0; i < n; ++i) {
        const std::uint64_t token = events[i].data.u64;  // a copy: epoll_event is packed
        const std::uint32_t what = events[i].events;
        if (token == 0) {
          std::uint64_t v;
          (void)!read(wake_, &v, sizeof v);
          continue;
        }
        // Looked up each time: an earlier step may have closed it.
        auto it = sockets_.find(token);
        if (it != sockets_.end()) serve(it->second, what);
      }
      on_deadlines(now_ms());
    }
  }

  void serve(Socket* s, std::uint32_t events);

  int epoll_ = -1;
  int wake_ = -1;
  std::uint64_t next_token_ = 1;
  std::map<std::uint64_t, Socket*> sockets_;
};

Service& service() {
  static auto* s = new Service;  // never freed: its thread runs until exit
  return *s;
}

void flush(Socket* s) {
  while (!s->tx.empty()) {
    const ssize_t n = send(s->fd, s->tx.data(), s->tx.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) break;
    s->tx.erase(s->tx.begin(), s->tx.begin() + n);
  }
}

void Service::serve(Socket* s, std::uint32_t events) {
  const std::uint64_t token = s->token;  // s is freed if a step closes it
  if (s->listening) {
    for (;;) {
      const int fd = accept4(s->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      Socket* link = new_socket(fd, nullptr);
      link->listener = s->id;
      add(link);
    }
    return;
  }
  if (s->connecting) {
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    int error = 0;
    socklen_t len = sizeof error;
    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      on_link_closed(s, error);
      return;
    }
    s->connecting = false;
    on_connected(s);
    if (!sockets_.count(token)) return;
  }
  if (events & EPOLLOUT) flush(s);
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    std::uint8_t buf[4096];
    for (;;) {
      const ssize_t n = recv(s->fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        s->rx.insert(s->rx.end(), buf, buf + n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      // Messages already in are handled before the close.
      const int error = n == 0 ? 0 : errno;
      std::size_t used = 0;
      Message m;
      while (sockets_.count(token) && decode(s->rx, &m, &used) == DecodeResult::kOk) {
        s->rx.erase(s->rx.begin(), s->rx.begin() + static_cast<std::ptrdiff_t>(used));
        on_message(s, m);
      }
      if (sockets_.count(token)) on_link_closed(s, error);
      return;
    }
    while (sockets_.count(token)) {
      Message m;
      std::size_t used = 0;
      const DecodeResult r = decode(s->rx, &m, &used);
      if (r == DecodeResult::kNeedMore) break;
      if (r == DecodeResult::kMalformed) {
        on_link_closed(s, EPROTO);  // a peer that is not ours: drop it
        return;
      }
      s->rx.erase(s->rx.begin(), s->rx.begin() + static_cast<std::ptrdiff_t>(used));
      on_message(s, m);
    }
  }
  if (sockets_.count(token)) update(s);
}

}  // namespace

Socket* new_socket(int fd, Id* owner) {
  auto* s = new Socket;
  s->fd = fd;
  s->id = owner;
  return s;
}

void watch(Socket* s) {
  service().add(s);
}

void close_socket(Socket* s) {
  if (!s) return;
  service().remove(s);
  close(s->fd);
  delete s;
}

bool send_message(Socket* s, const Message& m) {
  if (!encode(m, &s->tx)) return false;
  if (!s->connecting) flush(s);
  service().update(s);
  return true;
}

void close_pending_of(Id* listener) {
  service().for_each([&](Socket* s) {
    if (!s->id && s->listener == listener) close_socket(s);
  });
}

void wake_service() {
  service().wake();
}

}  // namespace mroce::rdmacm
