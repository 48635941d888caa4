// mroce-stat: the transport's counters of running programs, as JSON, in the spirit of
// `rdma statistic`. Every context a program opened through the stand-in libibverbs
// answers on a unix socket (docs/VERBS.md, Counters); this tool asks each and prints
// the answers as one JSON array.
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "verbs/stats_server.h"

namespace {

constexpr int kTimeoutMs = 2000;

int usage(const char* error) {
  if (error) std::fprintf(stderr, "mroce-stat: %s\n", error);
  std::fprintf(error ? stderr : stdout,
               "usage: mroce-stat [--dir DIR] [--pid PID] [show|connections|all]\n"
               "  show         device counters and drops by reason (the default)\n"
               "  connections  each connection with its paths\n"
               "  all          both\n"
               "Reads <pid>-<slot>.sock in DIR (default: $MROCE_STAT_DIR, else\n"
               "$XDG_RUNTIME_DIR/mroce, else /tmp/mroce-<uid>); prints a JSON array.\n");
  return error ? 2 : 0;
}

// Asks one socket; false when nobody answers there (a program that has exited).
bool ask(const std::string& path, std::string_view query, std::string* out) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  const std::string request = std::string(query) + "\n";
  ok = ok && send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size());
  out->clear();
  while (ok) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kTimeoutMs) <= 0) {
      ok = false;
      break;
    }
    char buf[65536];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, std::size_t(n));
  }
  close(fd);
  while (!out->empty() && (out->back() == '\n' || out->back() == '\r')) out->pop_back();
  return ok && !out->empty() && out->front() == '{';
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = mroce::verbs::stats_directory();
  std::string pid;
  std::string query = "counters";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") return usage(nullptr);
    if ((a == "--dir" || a == "--pid") && i + 1 < argc) {
      (a == "--dir" ? dir : pid) = argv[++i];
      if (a == "--pid" &&
          (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)) {
        return usage(("--pid wants a process id, not '" + pid + "'").c_str());
      }
    } else if (a == "show" || a == "counters") {
      query = "counters";
    } else if (a == "connections" || a == "all") {
      query = std::string(a);
    } else if (a == "--dir" || a == "--pid") {
      return usage((std::string(a) + " needs a value").c_str());
    } else {
      return usage(("unknown argument '" + std::string(a) + "'").c_str());
    }
  }

  DIR* d = opendir(dir.c_str());
  if (!d) {
    std::fprintf(stderr, "mroce-stat: no program publishes counters: cannot read %s: %s\n",
                 dir.c_str(), std::strerror(errno));
    return 1;
  }
  std::vector<std::string> sockets;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".sock") != 0) continue;
    if (!pid.empty() && name.compare(0, pid.size() + 1, pid + "-") != 0) continue;
    sockets.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(sockets.begin(), sockets.end());

  std::string out = "[";
  int answered = 0;
  for (const std::string& s : sockets) {
    std::string doc;
    if (!ask(s, query, &doc)) continue;  // left behind by a program that has exited
    if (answered++) out += ",\n";
    out += doc;
  }
  out += "]\n";
  if (answered == 0) {
    std::fprintf(stderr, "mroce-stat: no running program%s publishes counters in %s\n",
                 pid.empty() ? "" : (" with pid " + pid).c_str(), dir.c_str());
    return 1;
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}
