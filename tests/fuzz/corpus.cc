// Writes a seed corpus of genuine packets (every type and opcode) for the fuzzers.
#include <cstdio>
#include <string>
#include <vector>

#include "wire/codec.h"

using namespace mroce::wire;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::uint8_t> buf(9000);
  int index = 0;
  const auto save = [&](std::size_t n) {
    const std::string path = dir + "/seed" + std::to_string(index++);
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(buf.data(), 1, n, f);
      std::fclose(f);
    }
  };
  CommonHeader c;
  c.dst_conn = 0x100001;
  c.token = 0x1234;
  for (int op = 0; op < kDataOpCount; ++op) {
    c.type = PacketType::kData;
    DataHeader d;
    d.op = DataOp(op);
    if (op_has_payload(d.op)) {
      d.payload_length = 64;
      d.message_length = 4096;
    } else if (d.op == DataOp::kFetchAdd || d.op == DataOp::kCompareSwap ||
               d.op == DataOp::kAtomicResponse) {
      d.message_length = 8;
    }
    save(encode_data(c, d, buf) + d.payload_length);
  }
  c.type = PacketType::kAck;
  AckHeader a;
  a.set_sacked(3);
  save(encode_ack(c, a, buf));
  c.type = PacketType::kNack;
  save(encode_nack(c, NackHeader{}, buf));
  HandshakeHeader hs;
  hs.src_conn = 1;
  hs.mss = 4096;
  hs.paths = 4;
  hs.address_count = 1;
  for (PacketType t : {PacketType::kConnect, PacketType::kAccept}) {
    c.type = t;
    CommonHeader h = c;
    if (t == PacketType::kConnect) h.dst_conn = h.token = 0;  // else malformed
    save(encode_handshake(h, hs, buf));
  }
  for (PacketType t : {PacketType::kConfirm, PacketType::kClose, PacketType::kCloseAck}) {
    c.type = t;
    save(encode_bare(c, buf));
  }
  for (DatagramOp op : {DatagramOp::kSend, DatagramOp::kSendImm}) {
    DatagramHeader d;
    d.dst_qp = 0x10001;
    d.src_qp = 0x20002;
    d.qkey = 0x11111111;
    d.op = op;
    d.payload_length = 64;
    if (op == DatagramOp::kSendImm) d.imm = 7;
    save(encode_datagram(d, buf) + d.payload_length);
  }
  return 0;
}
