// The Verbs side of mroce-target: one device context, one protection domain, one
// completion queue, the registered regions and the RC queue pairs the tester asks for.
// Only libibverbs calls, so it runs on any Verbs implementation.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mroce_target {

// A failed request: its message becomes the control protocol's error line.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A registered buffer. Its bytes start as a known pattern: byte i = (i * 7 + seed) % 251.
struct Region {
  std::string name;
  int access = 0;
  std::uint8_t seed = 0;
  std::vector<std::uint8_t> bytes;
  ibv_mr* mr = nullptr;

  void fill_pattern();
};

struct Completion {
  std::uint64_t wr_id;
  int status;
  int opcode;
  std::uint32_t byte_len;
  bool with_imm;
  std::uint32_t imm;
  std::uint32_t qp_num;
};

class VerbsTarget {
 public:
  // Opens the device named `device` (empty: the first one) and registers the regions.
  VerbsTarget(const std::string& device, int gid_index);
  ~VerbsTarget();
  VerbsTarget(const VerbsTarget&) = delete;
  VerbsTarget& operator=(const VerbsTarget&) = delete;

  const std::string& device_name() const { return device_name_; }
  std::vector<std::string> gids() const;
  std::uint32_t port_mtu() const { return mtu_; }
  const std::vector<std::unique_ptr<Region>>& regions() const { return regions_; }
  Region& region(const std::string& name);

  std::uint32_t create_qp(std::uint32_t depth);
  // rnr_retry: Verbs' count of RNR retries, 0..7 (7: unlimited).
  void connect_qp(std::uint32_t qpn, const std::string& gid, std::uint32_t remote_qpn,
                  std::uint32_t psn, std::uint32_t rnr_retry);
  void destroy_qp(std::uint32_t qpn);
  std::string qp_state(std::uint32_t qpn);

  void post_recv(std::uint32_t qpn, std::uint64_t wr_id, Region& r, std::uint64_t offset,
                 std::uint32_t length);
  struct SendRequest {
    std::uint64_t wr_id = 0;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    Region* local = nullptr;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
    std::uint32_t imm = 0;
    std::uint64_t compare_add = 0;
    std::uint64_t swap = 0;
    bool signaled = true;
    bool fence = false;
  };
  void post_send(std::uint32_t qpn, const SendRequest& req);

  // Completions until `count` have arrived or `timeout_ms` passed.
  std::vector<Completion> poll(std::size_t count, int timeout_ms);

  // The device's sysfs hw_counters (name -> value); empty when it has none.
  std::map<std::string, std::string> counters(std::string& where) const;

 private:
  ibv_qp* qp(std::uint32_t qpn);

  std::string device_name_;
  std::string sysfs_path_;
  int gid_index_;
  std::uint32_t mtu_ = 0;
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<std::unique_ptr<Region>> regions_;
  std::map<std::uint32_t, ibv_qp*> qps_;
};

}  // namespace mroce_target
