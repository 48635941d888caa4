// The device's counters as a sysfs hw_counters directory: one file per counter holding
// its decimal value and a newline, kept up to date while the program runs. Used under
// `mroce-run --device-files`, which makes /sys/class/infiniband/<dev>/ports/1/hw_counters
// in the program's private mount namespace (see docs/VERBS.md, Counters).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "verbs/stats.h"

namespace mroce::verbs {

class HwCounterFiles {
 public:
  using Source = std::function<std::vector<NamedCounter>()>;

  // Takes the directory `dir` (which must exist; a second process of the same mount
  // namespace opening the device finds it taken and gets null) and rewrites each file
  // whose value changed every `interval`, on a thread of its own. Null, with *error set
  // to one line, when the directory cannot be taken.
  static std::unique_ptr<HwCounterFiles> start(const std::string& dir, Source source,
                                               std::chrono::milliseconds interval,
                                               std::string* error);
  ~HwCounterFiles();  // stops the thread after writing the last values; the files stay
  HwCounterFiles(const HwCounterFiles&) = delete;
  HwCounterFiles& operator=(const HwCounterFiles&) = delete;

  // Writes every changed value now; false when a file could not be written (it is tried
  // again next time). A file is replaced whole (a temporary file renamed over it), so a
  // reader sees the old value or the new one, never a mix.
  bool refresh();

 private:
  HwCounterFiles(std::string dir, int lock_fd, int stop_fd, Source source,
                 std::chrono::milliseconds interval);
  void run();

  std::string dir_;
  int lock_fd_;  // the directory, flock()ed: whose files these are
  int stop_fd_;  // an eventfd: written once to stop
  Source source_;
  std::chrono::milliseconds interval_;
  std::vector<NamedCounter> written_;  // what the files hold; the thread's once it runs
  std::thread thread_;
};

}  // namespace mroce::verbs
