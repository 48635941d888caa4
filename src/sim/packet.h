// A simulated packet: the engine's header bytes (payload is never carried, only
// counted) plus what the network needs: the 5-tuple, ECN, sizes and tracing ids.
// Packets live in a PacketPool and are named by index; the pool reuses them, so a
// run allocates only while its packet population grows.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/types.h"
#include "sim/time.h"

namespace mroce::sim {

using PacketId = std::uint32_t;
inline constexpr PacketId kNoPacket = ~PacketId{0};

// Enough for any MetaRoCE header in headers-only mode, a handshake with 8 planes included.
inline constexpr std::size_t kMaxHeaderBytes = 192;

// Bytes a datagram of `udp_payload` bytes occupies in a buffer (UDP 8 + IPv4 20 +
// Ethernet header 14 + FCS 4) and on the wire (plus preamble, SFD and inter-frame gap 20).
inline constexpr std::uint32_t kFrameOverhead = 8 + 20 + 14 + 4;
inline constexpr std::uint32_t kWireGap = 8 + 12;

// What the network looks at, packed into 32 aligned bytes so that a packet is one cache
// line, not two: every hop touches it, and the packets in flight are far from the cache.
// The header bytes live apart (PacketPool::header) and only hosts touch them.
struct alignas(32) Packet {
  std::uint64_t flow_hash = 0;  // of the 5-tuple, for ECMP (ecmp.h)
  std::uint32_t src_ip = 0;
  std::uint32_t dst_ip = 0;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint16_t frame_bytes = 0;    // buffer occupancy: UDP payload + kFrameOverhead
  std::uint16_t payload_bytes = 0;  // counted, not carried: wire length - header length
  Ecn ecn = Ecn::kNotEct;
  PacketClass cls = PacketClass::kData;
  std::uint16_t ingress = 0;  // input port at the switch holding it (PFC accounting)
  PacketId next = kNoPacket;  // FIFO and free-list link

  // Engine header bytes: the rest of the datagram.
  std::uint32_t header_len() const { return frame_bytes - kFrameOverhead - payload_bytes; }
};
static_assert(sizeof(Packet) == 32);

// The largest frame a Packet can describe.
inline constexpr std::uint32_t kMaxFrameBytes = 0xffff;

class PacketPool {
 public:
  PacketId alloc() {
    if (free_ == kNoPacket) grow();
    PacketId id = free_;
    free_ = (*this)[id].next;
    (*this)[id].next = kNoPacket;
    ++live_;
    return id;
  }
  void release(PacketId id) {
    assert(live_ > 0);
    (*this)[id].next = free_;
    free_ = id;
    --live_;
  }
  Packet& operator[](PacketId id) { return chunks_[id >> kChunkBits][id & (kChunk - 1)]; }
  const Packet& operator[](PacketId id) const {
    return chunks_[id >> kChunkBits][id & (kChunk - 1)];
  }
  std::uint8_t* header(PacketId id) { return headers_[id >> kChunkBits][id & (kChunk - 1)].bytes; }
  const std::uint8_t* header(PacketId id) const {
    return headers_[id >> kChunkBits][id & (kChunk - 1)].bytes;
  }
  std::size_t live() const { return live_; }
  std::size_t capacity() const { return chunks_.size() * kChunk; }

 private:
  // Line-aligned, so that a header of n bytes is read from ceil(n / 64) cache lines.
  struct alignas(64) HeaderSlot {
    std::uint8_t bytes[kMaxHeaderBytes];
  };
  static_assert(sizeof(HeaderSlot) == kMaxHeaderBytes);

  static constexpr unsigned kChunkBits = 10;
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkBits;

  void grow() {
    PacketId base = static_cast<PacketId>(capacity());
    chunks_.push_back(std::make_unique<Packet[]>(kChunk));
    headers_.push_back(std::make_unique<HeaderSlot[]>(kChunk));
    Packet* chunk = chunks_.back().get();
    for (std::size_t i = kChunk; i-- > 0;) {
      chunk[i].next = free_;
      free_ = base + static_cast<PacketId>(i);
    }
  }

  std::vector<std::unique_ptr<Packet[]>> chunks_;
  std::vector<std::unique_ptr<HeaderSlot[]>> headers_;
  PacketId free_ = kNoPacket;
  std::size_t live_ = 0;
};

}  // namespace mroce::sim
