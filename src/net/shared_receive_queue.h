// A shared receive queue: one engine SRQ, which the queue pairs created on it take
// their receives from.
#pragma once

#include <memory>
#include <string>

#include "mroce/mroce.h"
#include "net/device_core.h"

namespace mroce::net {

class NetSharedReceiveQueue final : public SharedReceiveQueue {
 public:
  // Null, with the reason in *error, when the transport has none or depth is wrong.
  static std::unique_ptr<SharedReceiveQueue> create(std::shared_ptr<DeviceCore> core,
                                                    std::uint32_t depth, std::string* error);
  ~NetSharedReceiveQueue() override;

  SrqId id() const override { return id_; }
  std::uint32_t depth() const override { return depth_; }
  Errc post_recv(const RecvWr& wr) override;
  Errc set_limit(std::uint32_t limit) override;
  std::uint32_t limit() const override;
  const DeviceCore* core() const { return core_.get(); }

 private:
  NetSharedReceiveQueue(std::shared_ptr<DeviceCore> core, SrqId id, std::uint32_t depth)
      : core_(std::move(core)), id_(id), depth_(depth) {}

  std::shared_ptr<DeviceCore> core_;
  SrqId id_;
  std::uint32_t depth_;
};

}  // namespace mroce::net
