// Device: the public face of a DeviceCore.
#include <memory>

#include "mroce/mroce.h"
#include "net/completion_queue.h"
#include "net/device_core.h"
#include "net/memory_region.h"
#include "net/queue_pair.h"
#include "net/shared_receive_queue.h"
#include "net/sockaddr.h"

namespace mroce {

namespace {

class NetDevice final : public Device {
 public:
  explicit NetDevice(std::shared_ptr<net::DeviceCore> core) : core_(std::move(core)) {}

  const DeviceOptions& options() const override { return core_->options(); }
  Endpoint endpoint() const override { return Endpoint{core_->planes()[0], core_->options().port}; }
  std::vector<Address> planes() const override { return core_->planes(); }

  std::unique_ptr<MemoryRegion> reg_mr(void* addr, std::size_t length,
                                       std::uint32_t access) override {
    return reg_mr_iova(addr, length, reinterpret_cast<std::uint64_t>(addr), access);
  }

  std::unique_ptr<MemoryRegion> reg_mr_iova(void* addr, std::size_t length, std::uint64_t iova,
                                            std::uint32_t access) override {
    if (!addr || length == 0) {
      core_->set_error("reg_mr: null address or zero length");
      return nullptr;
    }
    if (access & ~access::kAll) {
      core_->set_error("reg_mr: unknown access bits");
      return nullptr;
    }
    MrKeys keys;
    const Errc rc = core_->datapath().call(
        [&](Transport& t, Time) { return t.reg_mr(iova, length, access, addr, &keys); });
    if (rc != Errc::kOk) {
      core_->set_error(std::string("reg_mr: ") + to_string(rc));
      return nullptr;
    }
    return std::make_unique<net::NetMemoryRegion>(core_, addr, length, keys);
  }

  std::unique_ptr<CompletionQueue> create_cq(int capacity) override {
    if (capacity <= 0) {
      core_->set_error("create_cq: capacity must be positive");
      return nullptr;
    }
    auto ring = std::make_shared<net::CompletionRing>(capacity);
    std::string error;
    if (!ring->open(&error)) {
      core_->set_error("create_cq: " + error);
      return nullptr;
    }
    return std::make_unique<net::NetCompletionQueue>(core_, std::move(ring));
  }

  std::unique_ptr<QueuePair> create_qp(const QpOptions& options) override {
    std::string error;
    auto qp = net::NetQueuePair::create(core_, options, &error);
    if (!qp) core_->set_error(error);
    return qp;
  }

  std::unique_ptr<SharedReceiveQueue> create_srq(std::uint32_t depth) override {
    std::string error;
    auto srq = net::NetSharedReceiveQueue::create(core_, depth, &error);
    if (!srq) core_->set_error(error);
    return srq;
  }

  void progress() override { core_->datapath().progress(); }
  void wait(Time max_wait) override { core_->datapath().wait(max_wait); }

  Counters counters() const override {
    return core_->datapath().inspect([](const Transport& t) { return t.counters(); });
  }

  std::vector<ConnectionReport> connections() const override {
    return core_->datapath().inspect([](const Transport& t) {
      std::vector<ConnectionReport> out;
      t.for_each_connection([&](ConnId id) {
        ConnectionReport r;
        r.id = id;
        if (!t.connection_stats(id, &r.conn)) return;
        for (std::uint16_t p = 0; p < r.conn.paths; ++p) {
          PathStats ps;
          if (t.path_stats(id, p, &ps)) r.paths.push_back(ps);
        }
        out.push_back(std::move(r));
      });
      return out;
    });
  }

  DatapathCounters datapath_counters() const override { return core_->datapath().counters(); }
  std::vector<Event> take_events() override { return core_->take_events(); }
  void set_event_hook(std::function<void(const Event&)> hook) override {
    core_->set_event_hook(std::move(hook));
  }
  std::string last_error() const override { return core_->last_error(); }

 private:
  std::shared_ptr<net::DeviceCore> core_;
};

}  // namespace

std::unique_ptr<Device> Device::open(const DeviceOptions& options, std::string* error) {
  std::string scratch;
  std::string* err = error ? error : &scratch;
  auto core = net::DeviceCore::open(options, err);
  if (!core) return nullptr;
  return std::make_unique<NetDevice>(std::move(core));
}

bool parse_address(const std::string& text, Address* out) {
  return net::parse_ip(text, out);
}

}  // namespace mroce
