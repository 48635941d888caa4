// The invariant CRC that closes every RoCEv2 packet (IBA annex A17.3.3): CRC-32 over
// eight 0xff bytes standing for a masked LRH, the IP and UDP headers with their variant
// fields (traffic class, TTL, flow label, checksums) set to ones, the BTH with its
// reserved byte set to ones, and the rest of the packet. Stored least significant byte
// first, as the Ethernet FCS is.
//
// The IP header is rebuilt from the addresses: IPv4 with identification 0 and DF set, as
// RoCE NICs send it. A kernel UDP socket may choose another identification, so a
// hardware receiver can disagree; our receivers do not check the ICRC.
#pragma once

#include <cstdint>
#include <span>

#include "core/types.h"

namespace mroce::baseline {

// Plain CRC-32 (IEEE 802.3, reflected), continuing from `state` (start with ~0, finish
// by inverting).
std::uint32_t crc32_update(std::uint32_t state, std::span<const std::uint8_t> bytes);

// ICRC of `packet` (a whole datagram, its last four bytes the ICRC field) sent with `meta`
// in an IPv4 packet with identification `ipv4_id`, or in IPv6.
std::uint32_t compute_icrc(const TxMeta& meta, std::span<const std::uint8_t> packet,
                           std::uint16_t ipv4_id = 0);
// Computes and stores the ICRC in the packet's last four bytes.
void stamp_icrc(const TxMeta& meta, std::span<std::uint8_t> packet);
// Whether a received packet's ICRC is the one its sender should have computed.
bool icrc_valid(const RxMeta& meta, std::span<const std::uint8_t> packet);

}  // namespace mroce::baseline
