#include "net/shared_receive_queue.h"

namespace mroce::net {

std::unique_ptr<SharedReceiveQueue> NetSharedReceiveQueue::create(std::shared_ptr<DeviceCore> core,
                                                                  std::uint32_t depth,
                                                                  std::string* error) {
  SrqId id = kNoSrq;
  const Errc rc =
      core->datapath().call([&](Transport& t, Time) { return t.create_srq(depth, &id); });
  if (rc != Errc::kOk) {
    *error = std::string("create_srq: ") + to_string(rc) +
             (rc == Errc::kNotSupported ? " by this transport" : " (depth must be 1..65536)");
    return nullptr;
  }
  return std::unique_ptr<SharedReceiveQueue>(new NetSharedReceiveQueue(std::move(core), id, depth));
}

NetSharedReceiveQueue::~NetSharedReceiveQueue() {
  core_->datapath().call([&](Transport& t, Time) { return t.destroy_srq(id_); });
}

Errc NetSharedReceiveQueue::post_recv(const RecvWr& wr) {
  return core_->datapath().call(
      [&](Transport& t, Time now) { return t.post_srq_recv(now, id_, wr); });
}

Errc NetSharedReceiveQueue::set_limit(std::uint32_t limit) {
  return core_->datapath().call([&](Transport& t, Time) { return t.set_srq_limit(id_, limit); });
}

std::uint32_t NetSharedReceiveQueue::limit() const {
  return core_->datapath().inspect([&](const Transport& t) {
    std::uint32_t limit = 0, count = 0;
    t.query_srq(id_, &limit, &count);
    return limit;
  });
}

}  // namespace mroce::net
