// The completions of one completion queue. The engine's sink pushes (under the engine
// lock); the application pops. An eventfd armed by request_notify() becomes readable on
// the next completion, as a Verbs completion channel does.
#pragma once

#include <atomic>
#include <deque>
#include <string>

#include "core/types.h"
#include "net/thread_annotations.h"

namespace mroce::net {

class CompletionRing {
 public:
  explicit CompletionRing(int capacity) : capacity_(capacity) {}
  ~CompletionRing();
  CompletionRing(const CompletionRing&) = delete;
  CompletionRing& operator=(const CompletionRing&) = delete;

  bool open(std::string* error);

  // Never drops: a queue the application lets overflow grows instead of losing work.
  void push(const Completion& c) MROCE_EXCLUDES(mutex_);
  int pop(Completion* out, int max) MROCE_EXCLUDES(mutex_);
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }

  int fd() const { return event_fd_; }
  void request_notify(bool solicited_only) MROCE_EXCLUDES(mutex_);
  int capacity() const { return capacity_; }

 private:
  const int capacity_;
  int event_fd_ = -1;
  Mutex mutex_;
  std::deque<Completion> items_ MROCE_GUARDED_BY(mutex_);
  std::atomic<std::size_t> size_{0};  // items_.size(), for a look without the lock
  bool armed_ MROCE_GUARDED_BY(mutex_) = false;
  bool solicited_only_ MROCE_GUARDED_BY(mutex_) = false;
};

}  // namespace mroce::net
