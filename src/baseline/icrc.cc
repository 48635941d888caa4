#include "baseline/icrc.h"

#include <array>

#include "baseline/endian.h"
#include "baseline/opcode.h"

namespace mroce::baseline {

namespace {

constexpr std::array<std::array<std::uint32_t, 256>, 4> make_tables() {
  std::array<std::array<std::uint32_t, 256>, 4> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (std::uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 4; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}

constexpr auto kTables = make_tables();

}  // namespace

std::uint32_t crc32_update(std::uint32_t c, std::span<const std::uint8_t> bytes) {
  const std::uint8_t* p = bytes.data();
  std::size_t n = bytes.size();
  // Slicing by four: one table lookup per byte, four bytes per step.
  for (; n >= 4; n -= 4, p += 4) {
    c ^= std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
    c = kTables[3][c & 0xff] ^ kTables[2][(c >> 8) & 0xff] ^ kTables[1][(c >> 16) & 0xff] ^
        kTables[0][c >> 24];
  }
  for (; n > 0; --n, ++p) c = kTables[0][(c ^ *p) & 0xff] ^ (c >> 8);
  return c;
}

std::uint32_t compute_icrc(const TxMeta& meta, std::span<const std::uint8_t> packet,
                           std::uint16_t ipv4_id) {
  // Pseudo headers: masked LRH, IP (IPv6 is the larger), UDP, BTH.
  std::uint8_t pseudo[8 + 40 + 8 + kBthSize];
  std::size_t at = 0;
  for (int i = 0; i < 8; ++i) pseudo[at++] = 0xff;
  const std::size_t udp_length = 8 + packet.size();
  if (meta.src.is_ipv4() && meta.dst.is_ipv4()) {
    std::uint8_t* ip = pseudo + at;
    ip[0] = 0x45;
    ip[1] = 0xff;  // TOS, masked
    store16(ip + 2, std::uint16_t(20 + udp_length));
    store16(ip + 4, ipv4_id);
    store16(ip + 6, 0x4000);  // DF
    ip[8] = 0xff;             // TTL, masked
    ip[9] = 17;
    store16(ip + 10, 0xffff);  // checksum, masked
    store32(ip + 12, meta.src.ipv4_value());
    store32(ip + 16, meta.dst.ipv4_value());
    at += 20;
  } else {
    std::uint8_t* ip = pseudo + at;
    store32(ip, 0x6fffffff);  // version, then traffic class and flow label masked
    store16(ip + 4, std::uint16_t(udp_length));
    ip[6] = 17;
    ip[7] = 0xff;  // hop limit, masked
    for (int i = 0; i < 16; ++i) {
      ip[8 + i] = meta.src.bytes[i];
      ip[24 + i] = meta.dst.bytes[i];
    }
    at += 40;
  }
  store16(pseudo + at, meta.src_port);
  store16(pseudo + at + 2, meta.dst_port);
  store16(pseudo + at + 4, std::uint16_t(udp_length));
  store16(pseudo + at + 6, 0xffff);  // checksum, masked
  at += 8;
  for (std::size_t i = 0; i < kBthSize; ++i) pseudo[at + i] = packet[i];
  pseudo[at + 4] = 0xff;  // reserved byte, masked
  at += kBthSize;

  std::uint32_t c = crc32_update(~0u, std::span(pseudo, at));
  c = crc32_update(c, packet.subspan(kBthSize, packet.size() - kBthSize - kIcrcSize));
  return ~c;
}

void stamp_icrc(const TxMeta& meta, std::span<std::uint8_t> packet) {
  const std::uint32_t icrc = compute_icrc(meta, packet);
  std::uint8_t* p = packet.data() + packet.size() - kIcrcSize;
  p[0] = std::uint8_t(icrc);
  p[1] = std::uint8_t(icrc >> 8);
  p[2] = std::uint8_t(icrc >> 16);
  p[3] = std::uint8_t(icrc >> 24);
}

}  // namespace mroce::baseline

namespace mroce::baseline {

bool icrc_valid(const RxMeta& meta, std::span<const std::uint8_t> packet) {
  if (packet.size() < kBthSize + kIcrcSize) return false;
  TxMeta sent;
  sent.src = meta.src;
  sent.dst = meta.dst;
  sent.src_port = meta.src_port;
  sent.dst_port = meta.dst_port;
  const std::uint32_t icrc = compute_icrc(sent, packet);
  const std::uint8_t* p = packet.data() + packet.size() - kIcrcSize;
  return icrc == (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
                  std::uint32_t{p[3]} << 24);
}

}  // namespace mroce::baseline
