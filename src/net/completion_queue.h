// The application's handle on a completion ring of one device.
#pragma once

#include <memory>

#include "mroce/mroce.h"
#include "net/completion_ring.h"
#include "net/device_core.h"

namespace mroce::net {

class NetCompletionQueue final : public CompletionQueue {
 public:
  NetCompletionQueue(std::shared_ptr<DeviceCore> core, std::shared_ptr<CompletionRing> ring)
      : core_(std::move(core)), ring_(std::move(ring)) {}

  int poll(Completion* out, int max) override;
  bool empty() const override { return ring_->empty(); }
  int fd() const override { return ring_->fd(); }
  void request_notify(bool solicited_only) override {
    ring_->request_notify(solicited_only);
    core_->datapath().app_sleeps();
  }
  int capacity() const override { return ring_->capacity(); }

  const std::shared_ptr<CompletionRing>& ring() const { return ring_; }
  const DeviceCore* core() const { return core_.get(); }

 private:
  std::shared_ptr<DeviceCore> core_;
  std::shared_ptr<CompletionRing> ring_;
};

}  // namespace mroce::net
