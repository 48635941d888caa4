// The control protocol of mroce-target: one JSON object per line in, one per line out.
// docs/COMPLIANCE.md documents the requests.
#pragma once

#include <string>

#include "verbs_target.h"

namespace mroce_target {

class Control {
 public:
  explicit Control(VerbsTarget& target) : target_(target) {}
  // Answers one request line. A bad request gets {"ok":false,"error":"..."}; never throws.
  std::string handle(const std::string& line);

 private:
  VerbsTarget& target_;
};

}  // namespace mroce_target
