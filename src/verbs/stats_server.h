// Publishes an opened device's counters on a unix stream socket, so that mroce-stat can
// read them from a running program without stopping it (see docs/VERBS.md, Counters).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace mroce::verbs {

// Where the sockets live: $MROCE_STAT_DIR, else $XDG_RUNTIME_DIR/mroce, else
// /tmp/mroce-<uid>. Each socket is <pid>-<slot>.sock.
std::string stats_directory();

class StatsServer {
 public:
  using Answer = std::function<std::string(std::string_view request)>;

  // Listens on `path` and answers each client's one-line request with answer(request),
  // on a thread of its own. Null, with *error set to one line, when the socket cannot be
  // made.
  static std::unique_ptr<StatsServer> start(const std::string& path, Answer answer,
                                            std::string* error);
  ~StatsServer();  // stops the thread and removes the socket
  StatsServer(const StatsServer&) = delete;
  StatsServer& operator=(const StatsServer&) = delete;

 private:
  StatsServer(std::string path, int listen_fd, int stop_fd, Answer answer);
  void run();
  void serve(int client);

  std::string path_;
  int listen_fd_;
  int stop_fd_;  // an eventfd: written once to stop
  Answer answer_;
  std::thread thread_;
};

}  // namespace mroce::verbs
