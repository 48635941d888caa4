// What the objects of one device share, and keep alive between them: the options, the
// datapath (and through it the engine), the routes from streams to completion queues,
// and the event log. The core is the engine's sink: completions go to the queue pair's
// send or receive completion queue.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mroce/mroce.h"
#include "net/completion_ring.h"
#include "net/datapath.h"
#include "net/thread_annotations.h"

namespace mroce::net {

class DeviceCore final : public Sink {
 public:
  static std::shared_ptr<DeviceCore> open(const DeviceOptions& options, std::string* error);
  ~DeviceCore() override;

  void on_completion(const Completion& c) override;
  void on_event(const Event& e) override;

  Datapath& datapath() { return *datapath_; }
  const Datapath& datapath() const { return *datapath_; }
  const DeviceOptions& options() const { return options_; }
  const std::vector<Address>& planes() const { return planes_; }

  // Only inside datapath().call(): the engine lock guards the routes.
  void set_route(StreamId stream, std::shared_ptr<CompletionRing> send,
                 std::shared_ptr<CompletionRing> recv);
  void clear_route(StreamId stream);

  std::vector<Event> take_events() MROCE_EXCLUDES(events_mutex_);
  void set_event_hook(std::function<void(const Event&)> hook) MROCE_EXCLUDES(events_mutex_);
  void set_error(std::string line) MROCE_EXCLUDES(error_mutex_);
  std::string last_error() const MROCE_EXCLUDES(error_mutex_);

 private:
  struct Route {
    std::shared_ptr<CompletionRing> send;
    std::shared_ptr<CompletionRing> recv;
  };

  DeviceOptions options_;
  std::vector<Address> planes_;
  // Guarded by the datapath's engine lock (the sink runs inside engine calls), which
  // the analysis cannot name from here.
  std::unordered_map<StreamId, Route> routes_;
  Mutex events_mutex_;
  std::deque<Event> events_ MROCE_GUARDED_BY(events_mutex_);
  std::function<void(const Event&)> event_hook_ MROCE_GUARDED_BY(events_mutex_);
  mutable Mutex error_mutex_;
  std::string last_error_ MROCE_GUARDED_BY(error_mutex_);
  // Declared last, destroyed first: the progress thread stops before the routes go.
  std::unique_ptr<Datapath> datapath_;
};

}  // namespace mroce::net
