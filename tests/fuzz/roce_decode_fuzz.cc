// libFuzzer target for the RoCEv2 baseline: the strict decoder (whatever it accepts must
// encode back to the same headers) and the engine behind it (whatever arrives: no crash,
// no leak, no undefined behaviour).
//
// Input: a control byte, then the rest. Control bit 0: payload carried (else headers-only
// mode). Bit 2 clear: the rest is a raw datagram, and bit 1 rewrites its destination QPN
// to the live QP's so that mutations reach the transport. Bit 2 set: the rest describes a
// well-formed packet (opcode, payload size, PSN) aimed at the live QP with valid keys,
// followed by (offset, xor) pairs that damage it; the fuzzer then needs no RoCE corpus.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "baseline/codec.h"
#include "baseline/roce_engine.h"

namespace {

using namespace mroce;
using namespace mroce::baseline;

constexpr Opcode kOpcodes[] = {
    Opcode::kSendFirst,          Opcode::kSendMiddle,
    Opcode::kSendLast,           Opcode::kSendLastImm,
    Opcode::kSendOnly,           Opcode::kSendOnlyImm,
    Opcode::kWriteFirst,         Opcode::kWriteMiddle,
    Opcode::kWriteLast,          Opcode::kWriteLastImm,
    Opcode::kWriteOnly,          Opcode::kWriteOnlyImm,
    Opcode::kReadRequest,        Opcode::kReadResponseFirst,
    Opcode::kReadResponseMiddle, Opcode::kReadResponseLast,
    Opcode::kReadResponseOnly,   Opcode::kAck,
    Opcode::kAtomicAck,          Opcode::kCompareSwap,
    Opcode::kFetchAdd,           Opcode::kCnp,
};
constexpr std::uint32_t kMtu = 4096;
constexpr std::uint64_t kBase = 0x1000;

void check_round_trip(std::span<const std::uint8_t> bytes, bool carry) {
  Packet p;
  if (!decode(bytes, carry, &p)) return;
  std::vector<std::uint8_t> out(max_datagram(65532));
  const std::size_t at = write_headers(p, out);
  if (at == 0) __builtin_trap();
  if (carry && !p.payload.empty()) std::memcpy(out.data() + at, p.payload.data(), p.payload.size());
  std::uint32_t wire = 0;
  const std::size_t length = finish(p, carry, out, &wire);
  if (length != bytes.size() || wire != p.wire_length) __builtin_trap();
  for (std::size_t i = 0; i < at + p.payload.size(); ++i) {
    if (i != 4 && out[i] != bytes[i]) __builtin_trap();  // byte 4 is reserved: not kept
  }
  Packet again;
  if (!decode(std::span(out.data(), length), carry, &again)) __builtin_trap();
}

// A well-formed packet described by the first bytes of `spec`, then damaged by the rest.
std::vector<std::uint8_t> from_template(std::span<const std::uint8_t> spec, bool carry, StreamId qp,
                                        std::uint32_t rkey) {
  if (spec.size() < 3) return {};
  Packet p;
  p.bth.opcode = kOpcodes[spec[0] % std::size(kOpcodes)];
  const OpcodeInfo info = opcode_info(std::uint8_t(p.bth.opcode));
  const std::uint32_t size = (spec[1] & 0x80) ? kMtu : (spec[1] & 0x7f) * 8u;
  p.bth.dest_qp = qp;
  p.bth.psn = spec[2];
  p.bth.ack_req = spec[2] & 1;
  p.reth = {kBase + (spec[1] & 0x3f) * 64u, rkey, (spec[2] & 2) ? 3 * kMtu + size : size};
  p.atomic = {kBase + 8u * (spec[2] & 7), rkey, 1, 0};
  p.aeth.syndrome = spec[2] & 0x7f;
  p.payload_length = info.payload ? size : 0;
  std::vector<std::uint8_t> bytes(max_datagram(kMtu), 0x5a);
  const std::size_t at = write_headers(p, bytes);
  (void)at;
  std::uint32_t wire;
  bytes.resize(finish(p, carry, bytes, &wire));
  for (std::size_t i = 3; i + 1 < spec.size(); i += 2) bytes[spec[i] % bytes.size()] ^= spec[i + 1];
  return bytes;
}

class NullSink : public Sink {
 public:
  void on_completion(const Completion&) override {}
};

void feed_engine(std::span<const std::uint8_t> rest, bool carry, bool aim, bool templated) {
  const Address self = Address::ipv4(0x0a000001);
  const Address peer = Address::ipv4(0x0a000002);
  constexpr StreamId kPeerQp = 0x000123;
  RoceConfig config;
  config.planes = {self};
  config.carry_payload = carry;
  config.icrc = false;  // let damaged packets through to the transport
  config.initial_psn = 0;
  RoceEngine engine(config);
  NullSink sink;
  engine.set_sink(&sink);

  std::vector<std::uint8_t> memory(64 * 1024);
  MrKeys keys;
  engine.reg_mr(kBase, memory.size(), access::kAll, memory.data(), &keys);
  StreamId qp;
  engine.create_stream(StreamConfig{}, &qp);
  engine.connect_stream(0, qp, {peer, kRoceV2Port}, kPeerQp);
  RecvWr recv;
  recv.num_sge = 1;
  recv.sg[0] = {kBase, 16 * 1024, keys.lkey};
  for (int i = 0; i < 4; ++i) engine.post_recv(0, qp, recv);
  // Outstanding requests, so that responses find something to answer.
  SendWr read;
  read.opcode = WrOpcode::kRdmaRead;
  read.num_sge = 1;
  read.sg[0] = {kBase + 0x4000, 9000, keys.lkey};
  read.remote_addr = 0x10000;
  read.rkey = 0x4242;
  engine.post_send(0, qp, read);
  SendWr atomic = read;
  atomic.opcode = WrOpcode::kAtomicCmpSwp;
  atomic.sg[0].length = 8;
  engine.post_send(0, qp, atomic);
  SendWr send = read;
  send.opcode = WrOpcode::kSend;
  engine.post_send(0, qp, send);

  std::vector<std::uint8_t> buf(engine.max_packet_size());
  TxMeta tx;
  Time now = 0;
  const auto drain = [&] {
    for (int i = 0; i < 64 && engine.poll_transmit(now, buf, &tx); ++i) {
    }
  };
  drain();

  std::vector<std::uint8_t> bytes;
  if (templated) {
    bytes = from_template(rest, carry, qp, keys.rkey);
    check_round_trip(bytes, carry);
  } else {
    bytes.assign(rest.begin(), rest.end());
    if (aim && bytes.size() >= 8) {
      bytes[5] = std::uint8_t(qp >> 16);
      bytes[6] = std::uint8_t(qp >> 8);
      bytes[7] = std::uint8_t(qp);
    }
  }
  RxMeta rx;
  rx.src = peer;
  rx.dst = self;
  rx.dst_port = kRoceV2Port;
  rx.ecn = (rest.size() % 3 == 0) ? Ecn::kCe : Ecn::kEct0;
  engine.on_packet(now, rx, bytes);
  drain();
  for (int i = 0; i < 4; ++i) {
    const Time deadline = engine.next_deadline();
    if (deadline == kNever) break;
    now = deadline > now ? deadline : now + 1;
    engine.on_timer(now);
    drain();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool carry = data[0] & 1;
  const bool aim = data[0] & 2;
  const bool templated = data[0] & 4;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  if (!templated) check_round_trip(rest, carry);
  feed_engine(rest, carry, aim, templated);
  return 0;
}
