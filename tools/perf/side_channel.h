// The side channel: a TCP connection over which client and server exchange queue pair
// numbers, memory keys and results, one JSON object per line, as perftest does with its
// own TCP exchange before the RDMA test.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace mroce::perf {

class SideChannel {
 public:
  SideChannel() = default;
  ~SideChannel();
  SideChannel(SideChannel&& other) noexcept;
  SideChannel& operator=(SideChannel&& other) noexcept;

  // Server: listen on every address at `port`.
  bool listen(std::uint16_t port, std::string* error);
  // Server: waits for the next client.
  bool accept(SideChannel* out, std::string* error);
  // Client: connects, retrying for `timeout` seconds while the server is not up yet.
  bool connect(const std::string& host, std::uint16_t port, double timeout, std::string* error);

  bool send(const nlohmann::json& message, std::string* error);
  // Waits up to `timeout` seconds (negative: forever) for the next message, calling
  // `idle` (if set) every millisecond meanwhile.
  bool receive(nlohmann::json* message, double timeout, std::string* error,
               const std::function<void()>& idle = {});
  // Whether a message (or the end of the connection) is waiting.
  bool readable();
  int fd() const { return fd_; }
  // Our own address on this connection (the one the peer reached us at).
  std::string local_address() const;

 private:
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace mroce::perf
