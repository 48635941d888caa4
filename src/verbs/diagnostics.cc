#include "verbs/diagnostics.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "verbs/settings.h"

namespace mroce::verbs {
namespace {

void vreport(const char* format, va_list args) {
  char line[512];
  std::vsnprintf(line, sizeof line, format, args);
  std::fprintf(stderr, "mroce-verbs: %s\n", line);
}

}  // namespace

int errno_of(Errc e) {
  switch (e) {
    case Errc::kOk:
      return 0;
    case Errc::kNoResources:
      return ENOMEM;
    case Errc::kNotSupported:
      return EOPNOTSUPP;
    case Errc::kInvalidArgument:
    case Errc::kNotFound:
    case Errc::kInvalidState:
      return EINVAL;
  }
  return EINVAL;
}

int unsupported(const char* function, const char* why) {
  static std::mutex mutex;
  static auto* seen = new std::set<std::string>;  // never freed: used until exit
  {
    std::lock_guard lock(mutex);
    if (seen->insert(std::string(function) + why).second) {
      report("%s: %s (EOPNOTSUPP)", function, why);
    }
  }
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

void report(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vreport(format, args);
  va_end(args);
}

void debug(const char* format, ...) {
  const Settings* s = process_settings(nullptr);
  if (!s || !s->debug) return;
  va_list args;
  va_start(args, format);
  vreport(format, args);
  va_end(args);
}

}  // namespace mroce::verbs
