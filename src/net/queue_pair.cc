#include "net/queue_pair.h"

#include "net/completion_queue.h"
#include "net/shared_receive_queue.h"
#include "net/transport_factory.h"

namespace mroce::net {

namespace {

// The device's own ring behind a CompletionQueue, or null for a foreign or missing one.
const NetCompletionQueue* own_cq(const DeviceCore* core, CompletionQueue* cq) {
  const auto* q = dynamic_cast<const NetCompletionQueue*>(cq);
  return q && q->core() == core ? q : nullptr;
}

}  // namespace

std::unique_ptr<QueuePair> NetQueuePair::create(std::shared_ptr<DeviceCore> core,
                                                const QpOptions& options, std::string* error) {
  const NetCompletionQueue* send = own_cq(core.get(), options.send_cq);
  const NetCompletionQueue* recv = own_cq(core.get(), options.recv_cq);
  if (!send || !recv) {
    *error = "create_qp: send_cq and recv_cq must be completion queues of this device";
    return nullptr;
  }
  if (options.datagram) {
    if (options.srq) {
      *error = "create_qp: a datagram queue pair takes no shared receive queue";
      return nullptr;
    }
    const DatagramConfig config{options.stream.sq_depth, options.stream.rq_depth,
                                options.stream.max_inline, options.qkey};
    StreamId stream = kNoStream;
    const Errc rc = core->datapath().call([&](Transport& t, Time) {
      const Errc e = t.create_datagram(config, &stream);
      if (e == Errc::kOk) core->set_route(stream, send->ring(), recv->ring());
      return e;
    });
    if (rc != Errc::kOk) {
      *error = std::string("create_qp: datagram queue pair: ") + to_string(rc) +
               (rc == Errc::kNotSupported ? " by this transport"
                                          : " (queue depths 1..65536, max_inline at most 4096)");
      return nullptr;
    }
    return std::unique_ptr<QueuePair>(new NetQueuePair(std::move(core), options, stream));
  }
  StreamConfig config = options.stream;
  if (options.srq) {
    const auto* srq = dynamic_cast<const NetSharedReceiveQueue*>(options.srq);
    if (!srq || srq->core() != core.get()) {
      *error = "create_qp: srq must be a shared receive queue of this device";
      return nullptr;
    }
    config.srq = srq->id();
  }
  StreamId stream = kNoStream;
  const Errc rc = core->datapath().call([&](Transport& t, Time now) {
    Errc e = t.create_stream(config, &stream);
    if (e != Errc::kOk) return e;
    e = prepare_stream(core->options().transport, t, stream, options.stream.plane);
    if (e != Errc::kOk) {
      t.destroy_stream(now, stream);
      return e;
    }
    core->set_route(stream, send->ring(), recv->ring());
    return e;
  });
  if (rc != Errc::kOk) {
    *error = std::string("create_qp: ") + to_string(rc) +
             " (queue depths must be 1..65536, max_inline at most 4096)";
    return nullptr;
  }
  return std::unique_ptr<QueuePair>(new NetQueuePair(std::move(core), options, stream));
}

NetQueuePair::~NetQueuePair() {
  core_->datapath().call([&](Transport& t, Time now) {
    t.destroy_stream(now, stream_);
    core_->clear_route(stream_);
  });
}

Errc NetQueuePair::connect(const Endpoint& peer, StreamId remote_qp_num) {
  return core_->datapath().call(
      [&](Transport& t, Time now) { return t.connect_stream(now, stream_, peer, remote_qp_num); });
}

Errc NetQueuePair::post_send(const SendWr& wr) {
  if (!options_.sq_sig_all) {
    return core_->datapath().call(
        [&](Transport& t, Time now) { return t.post_send(now, stream_, wr); });
  }
  SendWr signaled = wr;
  signaled.flags |= send_flags::kSignaled;
  return core_->datapath().call(
      [&](Transport& t, Time now) { return t.post_send(now, stream_, signaled); });
}

Errc NetQueuePair::post_send_list(std::span<const SendWr> wrs, std::size_t* posted) {
  std::size_t n = 0;
  const Errc rc = core_->datapath().call([&](Transport& t, Time now) {
    for (const SendWr& wr : wrs) {
      SendWr w = wr;
      if (options_.sq_sig_all) w.flags |= send_flags::kSignaled;
      const Errc e = t.post_send(now, stream_, w);
      if (e != Errc::kOk) return e;
      ++n;
    }
    return Errc::kOk;
  });
  if (posted) *posted = n;
  return rc;
}

Errc NetQueuePair::post_datagram(const SendWr& wr, const DatagramDest& dest) {
  SendWr w = wr;
  if (options_.sq_sig_all) w.flags |= send_flags::kSignaled;
  return core_->datapath().call(
      [&](Transport& t, Time now) { return t.post_datagram(now, stream_, w, dest); });
}

Errc NetQueuePair::set_qkey(std::uint32_t qkey) {
  return core_->datapath().call([&](Transport& t, Time) { return t.set_qkey(stream_, qkey); });
}

Errc NetQueuePair::post_recv(const RecvWr& wr) {
  return core_->datapath().call(
      [&](Transport& t, Time now) { return t.post_recv(now, stream_, wr); });
}

Errc NetQueuePair::set_rnr_policy(std::uint8_t retry, Time timer) {
  return core_->datapath().call(
      [&](Transport& t, Time) { return t.set_rnr_policy(stream_, retry, timer); });
}

Errc NetQueuePair::set_error() {
  return core_->datapath().call(
      [&](Transport& t, Time now) { return t.fail_stream(now, stream_); });
}

Errc NetQueuePair::set_remote_access(std::uint32_t rights) {
  return core_->datapath().call(
      [&](Transport& t, Time) { return t.set_remote_access(stream_, rights); });
}

Errc NetQueuePair::quiesce() {
  return core_->datapath().call([&](Transport& t, Time) { return t.quiesce_stream(stream_); });
}

StreamState NetQueuePair::state() const {
  return core_->datapath().inspect([&](const Transport& t) { return t.stream_state(stream_); });
}

}  // namespace mroce::net
