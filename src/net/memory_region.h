// A registered region: the engine checks every remote access against it and places
// arriving payload straight into these bytes.
#pragma once

#include <memory>

#include "mroce/mroce.h"
#include "net/device_core.h"

namespace mroce::net {

class NetMemoryRegion final : public MemoryRegion {
 public:
  NetMemoryRegion(std::shared_ptr<DeviceCore> core, void* addr, std::size_t length, MrKeys keys)
      : core_(std::move(core)), addr_(addr), length_(length), keys_(keys) {}
  ~NetMemoryRegion() override;

  void* addr() const override { return addr_; }
  std::size_t length() const override { return length_; }
  std::uint32_t lkey() const override { return keys_.lkey; }
  std::uint32_t rkey() const override { return keys_.rkey; }

 private:
  std::shared_ptr<DeviceCore> core_;
  void* addr_;
  std::size_t length_;
  MrKeys keys_;
};

}  // namespace mroce::net
