#include "verbs/hw_counters.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mroce::verbs {
namespace {

// Writes `value` into dir/name through dir/.name.tmp, renamed over the file.
bool write_value(const std::string& dir, const std::string& name, std::uint64_t value) {
  char text[24];
  const int n = std::snprintf(text, sizeof text, "%" PRIu64 "\n", value);
  const std::string tmp = dir + "/." + name + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0) return false;
  const bool ok = write(fd, text, std::size_t(n)) == n;
  close(fd);
  if (!ok || rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) {
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<HwCounterFiles> HwCounterFiles::start(const std::string& dir, Source source,
                                                      std::chrono::milliseconds interval,
                                                      std::string* error) {
  const int lock = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0) {
    *error = "cannot open " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    *error = dir + " is kept by another process of this namespace";
    close(lock);
    return nullptr;
  }
  const int stop = eventfd(0, EFD_CLOEXEC);
  if (stop < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    close(lock);
    return nullptr;
  }
  auto files = std::unique_ptr<HwCounterFiles>(
      new HwCounterFiles(dir, lock, stop, std::move(source), interval));
  if (!files->refresh()) {  // the files exist once the device is open
    *error = "cannot write the counter files in " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  files->thread_ = std::thread([f = files.get()] { f->run(); });
  return files;
}

HwCounterFiles::HwCounterFiles(std::string dir, int lock_fd, int stop_fd, Source source,
                               std::chrono::milliseconds interval)
    : dir_(std::move(dir)),
      lock_fd_(lock_fd),
      stop_fd_(stop_fd),
      source_(std::move(source)),
      interval_(interval) {}

HwCounterFiles::~HwCounterFiles() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    if (write(stop_fd_, &one, sizeof one) != sizeof one) std::abort();  // cannot stop it
    thread_.join();
    refresh();
  }
  close(stop_fd_);
  close(lock_fd_);
}

bool HwCounterFiles::refresh() {
  const std::vector<NamedCounter> now = source_();
  if (written_.size() != now.size()) {
    written_.assign(now.size(), NamedCounter{});  // nothing known to be written yet
  }
  bool ok = true;
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (written_[i].name == now[i].name && written_[i].value == now[i].value) continue;
    if (write_value(dir_, now[i].name, now[i].value)) {
      written_[i] = now[i];
    } else {
      written_[i].name.clear();  // tried again next time
      ok = false;
    }
  }
  return ok;
}

void HwCounterFiles::run() {
  for (;;) {
    pollfd p{stop_fd_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(interval_.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r != 0) return;
    refresh();
  }
}

}  // namespace mroce::verbs
