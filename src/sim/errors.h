// The one exception the simulator throws for bad input: a scenario, a setting or a
// command-line value. Its message is a complete one-line explanation for the user.
#pragma once

#include <stdexcept>
#include <string>

namespace mroce::sim {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace mroce::sim
