#include "verbs/stats_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mroce::verbs {
namespace {

constexpr int kRequestTimeoutMs = 200;  // a reader that sends nothing is dropped
constexpr std::size_t kMaxRequest = 64;

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string stats_directory() {
  if (const char* d = std::getenv("MROCE_STAT_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_RUNTIME_DIR"); d && *d) return std::string(d) + "/mroce";
  return "/tmp/mroce-" + std::to_string(getuid());
}

std::unique_ptr<StatsServer> StatsServer::start(const std::string& path, Answer answer,
                                                std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    *error = "statistics socket path too long: " + path;
    return nullptr;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::string("statistics socket: ") + std::strerror(errno);
    return nullptr;
  }
  unlink(path.c_str());  // a leftover of a process that had our pid and died
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 8) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  const int stop = eventfd(0, EFD_CLOEXEC);
  if (stop < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    close(fd);
    unlink(path.c_str());
    return nullptr;
  }
  return std::unique_ptr<StatsServer>(new StatsServer(path, fd, stop, std::move(answer)));
}

StatsServer::StatsServer(std::string path, int listen_fd, int stop_fd, Answer answer)
    : path_(std::move(path)), listen_fd_(listen_fd), stop_fd_(stop_fd), answer_(std::move(answer)) {
  thread_ = std::thread([this] { run(); });
}

StatsServer::~StatsServer() {
  const std::uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) != sizeof one) std::abort();  // cannot stop the thread
  thread_.join();
  close(listen_fd_);
  close(stop_fd_);
  unlink(path_.c_str());
}

void StatsServer::run() {
  for (;;) {
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    if (!(fds[1].revents & POLLIN)) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const timeval limit{1, 0};  // a reader that stops reading is dropped
    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    serve(client);
    close(client);
  }
}

void StatsServer::serve(int client) {
  // One request line, then the answer, then the end of the stream.
  std::string request;
  char buf[kMaxRequest];
  while (request.size() < kMaxRequest && request.find('\n') == std::string::npos) {
    pollfd fds[2] = {{client, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, kRequestTimeoutMs) <= 0 || fds[1].revents) return;
    const ssize_t n = recv(client, buf, sizeof buf, 0);
    if (n <= 0) break;  // no newline: the request is what came
    request.append(buf, static_cast<std::size_t>(n));
  }
  if (const auto nl = request.find('\n'); nl != std::string::npos) request.resize(nl);
  write_all(client, answer_(request) + "\n");
}

}  // namespace mroce::verbs
