// The namespace's UDP checksum-failure count, read from the kernel's tables, so that
// the datapath can take it out of its sockets' drop count.
#include "net/udp_stats.h"

#include <gtest/gtest.h>

namespace mroce::net {
namespace {

TEST(UdpStats, ChecksumFailuresAreReadFromBothTables) {
  const char* snmp =
      "Ip: Forwarding DefaultTTL\n"
      "Ip: 1 64\n"
      "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors "
      "InCsumErrors IgnoredMulti MemErrors\n"
      "Udp: 58423500 567709 10658449 58683132 10658437 0 12 0 0\n"
      "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors "
      "InCsumErrors IgnoredMulti MemErrors\n"
      "UdpLite: 0 0 0 0 0 0 99 0 0\n";
  const char* snmp6 =
      "Icmp6InCsumErrors               \t7\n"
      "Udp6InCsumErrors                \t5\n"
      "UdpLite6InCsumErrors            \t3\n";
  EXPECT_EQ(parse_udp_checksum_errors(snmp, snmp6), 17u);
  EXPECT_EQ(parse_udp_checksum_errors(snmp, ""), 12u);
  EXPECT_EQ(parse_udp_checksum_errors("", snmp6), 5u);
  EXPECT_EQ(parse_udp_checksum_errors("Udp: InCsumErrors\n", "garbage"), 0u);
  EXPECT_EQ(parse_udp_checksum_errors("", ""), 0u);
}

}  // namespace
}  // namespace mroce::net
