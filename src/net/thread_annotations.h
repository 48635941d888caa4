// Clang's thread safety analysis (-Wthread-safety): macros that name which mutex guards
// which member and which lock a function expects, and a mutex and scoped lock carrying
// them (libstdc++'s std::mutex and std::lock_guard carry none). Other compilers see
// plain code.
#pragma once

#include <mutex>

#if defined(__clang__)
#define MROCE_TSA(x) __attribute__((x))
#else
#define MROCE_TSA(x)
#endif

#define MROCE_CAPABILITY(name) MROCE_TSA(capability(name))
#define MROCE_SCOPED_CAPABILITY MROCE_TSA(scoped_lockable)
#define MROCE_GUARDED_BY(mu) MROCE_TSA(guarded_by(mu))
#define MROCE_PT_GUARDED_BY(mu) MROCE_TSA(pt_guarded_by(mu))
#define MROCE_REQUIRES(...) MROCE_TSA(requires_capability(__VA_ARGS__))
#define MROCE_EXCLUDES(...) MROCE_TSA(locks_excluded(__VA_ARGS__))
#define MROCE_ACQUIRE(...) MROCE_TSA(acquire_capability(__VA_ARGS__))
#define MROCE_RELEASE(...) MROCE_TSA(release_capability(__VA_ARGS__))
#define MROCE_TRY_ACQUIRE(...) MROCE_TSA(try_acquire_capability(__VA_ARGS__))
#define MROCE_NO_THREAD_SAFETY_ANALYSIS MROCE_TSA(no_thread_safety_analysis)

namespace mroce::net {

// std::mutex, annotated.
class MROCE_CAPABILITY("mutex") Mutex {
 public:
  void lock() MROCE_ACQUIRE() { m_.lock(); }
  void unlock() MROCE_RELEASE() { m_.unlock(); }
  bool try_lock() MROCE_TRY_ACQUIRE(true) { return m_.try_lock(); }

 private:
  std::mutex m_;
};

// Holds a Mutex for its scope, or until unlock().
class MROCE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) MROCE_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~MutexLock() MROCE_RELEASE() {
    if (held_) m_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() MROCE_RELEASE() {
    held_ = false;
    m_.unlock();
  }

 private:
  Mutex& m_;
  bool held_ = true;
};

}  // namespace mroce::net
