#include "net/memory_region.h"

namespace mroce::net {

NetMemoryRegion::~NetMemoryRegion() {
  core_->datapath().call([&](Transport& t, Time) { t.dereg_mr(keys_.lkey); });
}

}  // namespace mroce::net
