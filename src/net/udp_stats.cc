#include "net/udp_stats.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace mroce::net {

namespace {

std::string_view next_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

std::string_view next_word(std::string_view& line) {
  const std::size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  const std::size_t end = line.find_first_of(" \t");
  std::string_view word = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return word;
}

std::uint64_t number(std::string_view word) {
  std::uint64_t v = 0;
  std::from_chars(word.data(), word.data() + word.size(), v);
  return v;
}

std::string slurp(const char* path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::uint64_t parse_udp_checksum_errors(std::string_view snmp, std::string_view snmp6) {
  std::uint64_t total = 0;
  // snmp: a line of names, then a line of values, both starting "Udp:".
  for (std::string_view names; !snmp.empty();) {
    std::string_view line = next_line(snmp);
    if (next_word(line) != "Udp:") continue;
    if (names.empty()) {
      names = line;
      continue;
    }
    for (std::string_view n = next_word(names); !n.empty(); n = next_word(names)) {
      const std::string_view v = next_word(line);
      if (n == "InCsumErrors") total += number(v);
    }
    break;
  }
  // snmp6: one "name value" per line.
  while (!snmp6.empty()) {
    std::string_view line = next_line(snmp6);
    if (next_word(line) == "Udp6InCsumErrors") total += number(next_word(line));
  }
  return total;
}

std::uint64_t udp_checksum_errors() {
  return parse_udp_checksum_errors(slurp("/proc/net/snmp"), slurp("/proc/net/snmp6"));
}

}  // namespace mroce::net
