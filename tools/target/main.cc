// mroce-target: a Verbs responder for the compliance suite (docs/COMPLIANCE.md). It opens
// a device, registers regions with known patterns and rights, and serves a JSON-lines
// control protocol on TCP, one client at a time, until killed.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "control.h"
#include "verbs_target.h"

namespace {

void usage() {
  std::puts(
      "usage: mroce-target [--listen ADDR:PORT] [--device NAME] [--gid-index N]\n"
      "\n"
      "  --listen ADDR:PORT  TCP address of the control protocol (default 127.0.0.1:18515)\n"
      "  --device NAME       Verbs device (default: the first)\n"
      "  --gid-index N       source GID index for connected QPs (default 0)\n"
      "\n"
      "Prints 'mroce-target: ready <device> <ADDR:PORT>' once it serves.");
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "mroce-target: %s\n", msg.c_str());
  std::exit(2);
}

int listen_on(const std::string& where) {
  auto colon = where.rfind(':');
  if (colon == std::string::npos) die("--listen wants ADDR:PORT, got '" + where + "'");
  std::string host = where.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), where.substr(colon + 1).c_str(), &hints, &res) != 0) {
    die("--listen: bad address '" + where + "'");
  }
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4) != 0) {
    die("cannot listen on " + where + ": " + std::strerror(errno));
  }
  freeaddrinfo(res);
  return fd;
}

// Serves one client: a line in, a line out, until it hangs up.
void serve(int fd, mroce_target::Control& control) {
  std::string buffer;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) return;
    buffer.append(chunk, static_cast<std::size_t>(n));
    for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (line.empty()) continue;
      std::string reply = control.handle(line) + "\n";
      if (write(fd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size())) return;
    }
    if (buffer.size() > (1u << 24)) return;  // no line that long is a request
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:18515";
  std::string device;
  int gid_index = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value (see --help)");
      return argv[++i];
    };
    if (a == "--listen") {
      listen = value();
    } else if (a == "--device") {
      device = value();
    } else if (a == "--gid-index") {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0 || n > 255) die("--gid-index: must be 0..255");
      gid_index = static_cast<int>(n);
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      die("unknown argument '" + a + "' (see --help)");
    }
  }
  try {
    mroce_target::VerbsTarget target(device, gid_index);
    mroce_target::Control control(target);
    int server = listen_on(listen);
    std::printf("mroce-target: ready %s %s\n", target.device_name().c_str(), listen.c_str());
    std::fflush(stdout);
    for (;;) {
      int client = accept(server, nullptr, nullptr);
      if (client < 0) continue;
      serve(client, control);
      close(client);
    }
  } catch (const std::exception& e) {
    die(e.what());
  }
}
