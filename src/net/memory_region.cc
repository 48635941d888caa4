#include "net/memory_region.h"

namespace mroce::net {

NetMemoryRegion::~NetMemoryRegion() {
  core_->datapath().call([&](Transport& t, Time) { t.dereg_mr(keys_.lkey); });
  // Nothing new can point into the region now, but a batch staged before may until its
  // sendmsg returns; the application frees the bytes once this returns.
  core_->datapath().wait_for_staged_sends();
}

}  // namespace mroce::net
