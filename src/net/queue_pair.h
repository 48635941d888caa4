// A queue pair: one stream of the engine, reporting to its completion queues.
#pragma once

#include <memory>
#include <string>

#include "mroce/mroce.h"
#include "net/device_core.h"

namespace mroce::net {

class NetQueuePair final : public QueuePair {
 public:
  // Null, with the reason in *error, for options the device cannot honour.
  static std::unique_ptr<QueuePair> create(std::shared_ptr<DeviceCore> core,
                                           const QpOptions& options, std::string* error);
  ~NetQueuePair() override;

  StreamId qp_num() const override { return stream_; }
  Errc connect(const Endpoint& peer, StreamId remote_qp_num) override;
  Errc post_send(const SendWr& wr) override;
  Errc post_send_list(std::span<const SendWr> wrs, std::size_t* posted) override;
  Errc post_recv(const RecvWr& wr) override;
  Errc set_rnr_policy(std::uint8_t retry, Time timer) override;
  Errc set_error() override;
  Errc set_remote_access(std::uint32_t rights) override;
  Errc quiesce() override;
  StreamState state() const override;
  const QpOptions& options() const override { return options_; }
  Errc post_datagram(const SendWr& wr, const DatagramDest& dest) override;
  Errc set_qkey(std::uint32_t qkey) override;

 private:
  NetQueuePair(std::shared_ptr<DeviceCore> core, const QpOptions& options, StreamId stream)
      : core_(std::move(core)), options_(options), stream_(stream) {}

  std::shared_ptr<DeviceCore> core_;
  QpOptions options_;
  StreamId stream_;
};

}  // namespace mroce::net
