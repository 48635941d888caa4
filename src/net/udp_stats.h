// The kernel's count of UDP datagrams dropped for a bad checksum, in this network
// namespace (/proc/net/snmp and /proc/net/snmp6). A socket's own drop count
// (SO_RXQ_OVFL) includes them with the drops for a full receive buffer, and the kernel
// keeps no per-socket split: this is how the datapath tells the two apart.
#pragma once

#include <cstdint>
#include <string_view>

namespace mroce::net {

// InCsumErrors of the "Udp:" lines of snmp plus Udp6InCsumErrors of snmp6; 0 for what
// either text lacks.
std::uint64_t parse_udp_checksum_errors(std::string_view snmp, std::string_view snmp6);

// The same, read from /proc now.
std::uint64_t udp_checksum_errors();

}  // namespace mroce::net
