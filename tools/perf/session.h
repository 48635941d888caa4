// One end of a test: the device, one completion queue, the queue pairs and one
// registered buffer cut into slots (one per outstanding request, per queue pair).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages.h"
#include "mroce/mroce.h"
#include "options.h"

namespace mroce::perf {

class Session {
 public:
  ~Session();

  // `slots` per queue pair, each max_size bytes.
  bool open(const DeviceOptions& device, const TestSpec& spec, std::uint32_t slots,
            std::uint32_t rq_depth, std::string* error);
  // What the peer needs: endpoint, queue pair numbers, buffer address and key.
  PeerInfo local_info() const;
  // Binds our queue pairs to the peer's (checked by parse_peer_info), then waits until
  // they are ready.
  bool connect(const PeerInfo& peer, std::string* error);

  // Completions, or an error line for the first one that failed.
  int poll(Completion* out, int max, std::string* error);
  // As poll(), but when there is nothing, sleeps for up to `timeout_ms` instead of
  // spinning: on the completion queue's notification (and `other_fd`, if not -1) when a
  // thread does the progress, in the device itself when we do (manual).
  int wait(Completion* out, int max, int timeout_ms, int other_fd, std::string* error);
  // Drives the stack when no thread does (manual progress).
  void pump() {
    if (manual_) device_->progress();
  }
  bool manual() const { return manual_; }

  Device& device() { return *device_; }
  QueuePair& qp(std::uint32_t i) { return *qps_[i]; }
  std::uint32_t qps() const { return static_cast<std::uint32_t>(qps_.size()); }
  std::uint8_t* slot(std::uint32_t qp, std::uint32_t s) {
    return buffer_ + (std::uint64_t{qp} * slots_ + s) * slot_size_;
  }
  Sge local(std::uint32_t qp, std::uint32_t s, std::uint32_t length) {
    return Sge{reinterpret_cast<std::uint64_t>(slot(qp, s)), length, mr_->lkey()};
  }
  std::uint64_t remote(std::uint32_t qp, std::uint32_t s) const {
    return remote_base_ + (std::uint64_t{qp} * remote_slots_ + s) * slot_size_;
  }
  std::uint32_t rkey() const { return remote_rkey_; }
  std::uint32_t slots() const { return slots_; }
  std::uint64_t slot_size() const { return slot_size_; }

 private:
  std::unique_ptr<Device> device_;
  std::unique_ptr<CompletionQueue> cq_;
  std::vector<std::unique_ptr<QueuePair>> qps_;
  std::uint8_t* buffer_ = nullptr;
  std::unique_ptr<MemoryRegion> mr_;
  std::uint32_t slots_ = 0;
  std::uint64_t slot_size_ = 0;
  std::uint64_t remote_base_ = 0;
  std::uint32_t remote_rkey_ = 0;
  std::uint32_t remote_slots_ = 0;
  bool manual_ = false;
};

nlohmann::json counters_json(const Counters& c);
nlohmann::json datapath_json(const DatapathCounters& d);
nlohmann::json connections_json(const std::vector<ConnectionReport>& reports);
nlohmann::json events_json(const std::vector<Event>& events);

}  // namespace mroce::perf
