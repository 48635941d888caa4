#include "sim/transport_registry.h"

namespace mroce::sim {

void TransportRegistry::add(TransportInfo info) {
  for (auto& t : transports_) {
    if (t.name == info.name) {
      t = std::move(info);
      return;
    }
  }
  transports_.push_back(std::move(info));
}

const TransportInfo* TransportRegistry::find(const std::string& name) const {
  for (const auto& t : transports_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string TransportRegistry::names() const {
  std::string s;
  for (const auto& t : transports_) s += (s.empty() ? "" : ", ") + t.name;
  return s.empty() ? "none" : s;
}

}  // namespace mroce::sim
