// mroce-capture: runs two engines through a short session that produces every packet
// type and opcode (set-up, each operation, loss and its SACKs, a refused SEND, close)
// and writes what they sent to a pcap file, for the dissector and for anyone who wants
// to look at MetaRoCE on the wire.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <memory>

#include "core/engine.h"
#include "harness/network.h"
#include "wire/codec.h"

namespace {

using namespace mroce;

class PcapWriter {
 public:
  explicit PcapWriter(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) return;
    // Classic pcap, microsecond stamps, LINKTYPE_RAW (IPv4 packets with no link layer).
    const std::uint32_t header[] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 101};
    std::fwrite(header, 1, 24, f_);
  }
  ~PcapWriter() {
    if (!f_) return;
    flush();
    std::fclose(f_);
  }
  bool ok() const { return f_ != nullptr; }

  // With gso, the DATA datagrams sent at one instant with one 5-tuple and size go into
  // one record, as a loopback capture shows a UDP GSO send (one IP and UDP header).
  PcapWriter(const std::string& path, bool gso) : PcapWriter(path) { gso_ = gso; }

  void write(Time now, const TxMeta& m, std::span<const std::uint8_t> udp_payload) {
    if (!pending_.empty() && now != pending_time_) flush();
    pending_time_ = now;
    pending_.push_back({m, {udp_payload.begin(), udp_payload.end()}});
  }
  void flush() {
    std::vector<bool> done(pending_.size());
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      if (done[i]) continue;
      std::vector<std::uint8_t> train = pending_[i].bytes;
      const bool data = !train.empty() && (train[0] & 0x0f) == 1;
      for (std::size_t j = i + 1; gso_ && data && j < pending_.size(); ++j) {
        const Pending& q = pending_[j];
        if (!done[j] && q.bytes.size() == pending_[i].bytes.size() && q.bytes[0] == train[0] &&
            same_tuple(q.meta, pending_[i].meta) && train.size() + q.bytes.size() <= 65000) {
          train.insert(train.end(), q.bytes.begin(), q.bytes.end());
          done[j] = true;
        }
      }
      trains_ += train.size() > pending_[i].bytes.size();
      record(pending_time_, pending_[i].meta, train);
    }
    pending_.clear();
  }
  std::size_t trains() const { return trains_; }

 private:
  struct Pending {
    TxMeta meta;
    std::vector<std::uint8_t> bytes;
  };
  static bool same_tuple(const TxMeta& a, const TxMeta& b) {
    return a.src == b.src && a.dst == b.dst && a.src_port == b.src_port && a.dst_port == b.dst_port;
  }

  void record(Time now, const TxMeta& m, std::span<const std::uint8_t> udp_payload) {
    std::vector<std::uint8_t> pkt(28 + udp_payload.size());
    const std::uint16_t ip_len = static_cast<std::uint16_t>(pkt.size());
    pkt[0] = 0x45;
    pkt[1] = static_cast<std::uint8_t>(m.ecn);  // DSCP 0, ECN as sent
    put16(&pkt[2], ip_len);
    pkt[8] = 64;
    pkt[9] = 17;
    std::memcpy(&pkt[12], &m.src.bytes[12], 4);
    std::memcpy(&pkt[16], &m.dst.bytes[12], 4);
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += std::uint32_t(pkt[i] << 8 | pkt[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    put16(&pkt[10], static_cast<std::uint16_t>(~sum));
    put16(&pkt[20], m.src_port);
    put16(&pkt[22], m.dst_port);
    put16(&pkt[24], static_cast<std::uint16_t>(8 + udp_payload.size()));
    std::memcpy(&pkt[28], udp_payload.data(), udp_payload.size());
    const std::uint32_t rec[] = {std::uint32_t(now / kSecond),
                                 std::uint32_t(now % kSecond / kMicrosecond),
                                 std::uint32_t(pkt.size()), std::uint32_t(pkt.size())};
    std::fwrite(rec, 1, 16, f_);
    std::fwrite(pkt.data(), 1, pkt.size(), f_);
    ++packets_;
  }

 public:
  std::size_t packets() const { return packets_; }

 private:
  static void put16(std::uint8_t* p, std::uint16_t v) {
    p[0] = std::uint8_t(v >> 8);
    p[1] = std::uint8_t(v);
  }
  std::FILE* f_;
  std::size_t packets_ = 0;
  bool gso_ = false;
  std::vector<Pending> pending_;  // sent at pending_time_, not yet written
  Time pending_time_ = 0;
  std::size_t trains_ = 0;
};

// One packet per rule of SPEC §3 that a receiver enforces, each breaking only that rule
// of a well-formed packet, for the dissector's expert notes.
std::vector<std::vector<std::uint8_t>> malformed_variants() {
  using namespace mroce::wire;
  std::vector<std::vector<std::uint8_t>> out;
  std::vector<std::uint8_t> buf(512);
  const auto bytes = [&](std::size_t n) {
    return std::vector<std::uint8_t>(buf.begin(), buf.begin() + n);
  };
  CommonHeader c;
  c.dst_conn = 0x100001;
  c.token = 0x1234;
  const auto data = [&](DataOp op, std::uint16_t plen, std::uint32_t mlen) {
    c.type = PacketType::kData;
    DataHeader d;
    d.op = op;
    d.stream = 1;
    d.payload_length = plen;
    d.message_length = mlen;
    const std::size_t n = encode_data(c, d, buf);
    std::fill(buf.begin() + n, buf.begin() + n + plen, 0xee);
    return bytes(n + plen);
  };
  const auto ack = [&] {
    c.type = PacketType::kAck;
    return bytes(encode_ack(c, AckHeader{}, buf));
  };
  const auto nack = [&] {
    c.type = PacketType::kNack;
    NackHeader n;
    n.code = NackCode::kRemoteAccess;
    return bytes(encode_nack(c, n, buf));
  };
  const auto connect = [&] {
    CommonHeader h;
    h.type = PacketType::kConnect;
    HandshakeHeader hs;
    hs.src_conn = 0x100002;
    hs.mss = 4096;
    hs.paths = 16;
    hs.address_count = 1;
    return std::vector<std::uint8_t>(buf.begin(), buf.begin() + encode_handshake(h, hs, buf));
  };
  const auto bare = [&](PacketType t) {
    c.type = t;
    return bytes(encode_bare(c, buf));
  };
  auto v = ack();
  v[0] = 0x22;  // version 2
  out.push_back(v);
  v = ack();
  v[0] = 0x1a;  // type 10
  out.push_back(v);
  v = ack();
  v[0] = 0x10;  // type 0
  out.push_back(v);
  v = ack();
  v[1] = 0x01;  // flags outside DATA
  out.push_back(v);
  v = data(DataOp::kWrite, 64, 64);
  v[1] = 0x04;  // reserved flag bit 2
  out.push_back(v);
  v = data(DataOp::kWrite, 64, 64);
  v[33] = 0x80;  // reserved data flag bit 7
  out.push_back(v);
  v = data(DataOp::kWrite, 64, 64);
  v[32] = 10;  // unknown opcode
  out.push_back(v);
  v = data(DataOp::kWrite, 64, 64);
  v.resize(30);  // truncated base header
  out.push_back(v);
  v = data(DataOp::kWrite, 64, 64);
  v.resize(v.size() - 10);  // fewer payload bytes than the length says
  out.push_back(v);
  out.push_back(data(DataOp::kWrite, 64, 32));  // offset + payload > message length
  out.push_back(data(DataOp::kNop, 0, 8));      // NOP with a message length
  out.push_back(data(DataOp::kReadRequest, 0, 100));
  out.back()[39] = 8;                             // READ_REQUEST offset 8
  out.push_back(data(DataOp::kFetchAdd, 0, 16));  // atomic of 16 bytes
  out.push_back(data(DataOp::kSend, 0, 0));
  out.back().resize(out.back().size() - 2);  // truncated extension
  v = ack();
  v.push_back(0);  // 73 bytes
  out.push_back(v);
  v = nack();
  v[20] = 0;  // NACK code 0
  out.push_back(v);
  v = nack();
  v[20] = 6;  // NACK code 6
  out.push_back(v);
  v = nack();
  v[22] = 1;  // NACK reserved bits
  out.push_back(v);
  v = connect();
  v[7] = 1;  // CONNECT naming a connection
  out.push_back(v);
  v = connect();
  v[2] = 1;  // set-up packet with a path
  out.push_back(v);
  v = bare(PacketType::kClose);
  v[3] = 1;  // set-up packet with a generation
  out.push_back(v);
  v = connect();
  v[42] = 0x02;  // reserved handshake flag
  out.push_back(v);
  v = connect();
  v[43] = 0;  // no address
  out.push_back(v);
  v = connect();
  v[43] = 2;  // two addresses announced, one present
  out.push_back(v);
  v = connect();
  v[16] = v[17] = v[18] = v[19] = 0;  // source connection id 0
  out.push_back(v);
  v = connect();
  v[34] = v[35] = 0;  // MSS 0
  out.push_back(v);
  v = connect();
  v[40] = 0x01;
  v[41] = 0x01;  // 257 paths
  out.push_back(v);
  v = bare(PacketType::kConfirm);
  v.push_back(0);  // 17 bytes
  out.push_back(v);
  const auto datagram = [&] {
    DatagramHeader d;
    d.dst_qp = 1;
    d.src_qp = 2;
    d.payload_length = 8;
    const std::size_t n = encode_datagram(d, buf);
    return std::vector<std::uint8_t>(buf.begin(), buf.begin() + n + 8);
  };
  v = datagram();
  v[7] = 1;  // DATAGRAM naming a connection
  out.push_back(v);
  v = datagram();
  v[28] = 3;  // DATAGRAM opcode 3
  out.push_back(v);
  v = datagram();
  v.pop_back();  // one payload byte short
  out.push_back(v);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  double loss = 0.05;
  bool corrupt = false;
  bool gso = false;
  std::uint16_t port = kDefaultPort;
  CLI::App app{"mroce-capture: write a pcap of a short MetaRoCE session between two engines"};
  app.add_option("file", out, "pcap file to write")->required();
  app.add_option("--loss", loss, "random loss on the spines")->check(CLI::Range(0.0, 0.5));
  app.add_flag("--corrupt", corrupt, "also write one malformed packet per rule of SPEC §3");
  app.add_flag("--gso", gso, "write DATA as loopback captures show UDP GSO sends");
  app.add_option("--port", port, "listening port of both engines")->check(CLI::Range(1, 65535));
  CLI11_PARSE(app, argc, argv);

  PcapWriter pcap(out, gso);
  if (!pcap.ok()) {
    fmt::print(stderr, "mroce-capture: cannot write {}\n", out);
    return 1;
  }
  testing::Network net(1, 4, 3);
  std::unique_ptr<Engine> e[2];
  testing::Recorder rec[2];
  for (int h = 0; h < 2; ++h) {
    EngineConfig c;
    c.planes = {Address::ipv4(0x0a000001u + std::uint32_t(h))};
    c.paths = 4;
    c.seed = std::uint64_t(h) + 1;
    c.listen_port = port;
    e[h] = std::make_unique<Engine>(c);
    e[h]->set_sink(&rec[h]);
    net.add_host(e[h].get(), c.planes, c.listen_port);
  }
  for (int s = 0; s < 4; ++s) net.spine(0, s).loss = loss;
  net.set_tap(
      [&](int, const TxMeta& m, std::span<const std::uint8_t> b) { pcap.write(net.now(), m, b); });

  StreamId a = 0, b = 0;
  e[0]->create_stream({}, &a);
  e[1]->create_stream({}, &b);
  e[0]->connect_stream(0, a, Endpoint{Address::ipv4(0x0a000002), port}, b);
  e[1]->connect_stream(0, b, Endpoint{Address::ipv4(0x0a000001), port}, a);
  std::vector<std::uint8_t> la(1 << 16), lb(1 << 16);
  for (std::size_t i = 0; i < la.size(); ++i) la[i] = std::uint8_t(i);
  MrKeys ka, kb;
  e[0]->reg_mr(reinterpret_cast<std::uint64_t>(la.data()), la.size(), access::kAll, la.data(), &ka);
  e[1]->reg_mr(reinterpret_cast<std::uint64_t>(lb.data()), lb.size(), access::kAll, lb.data(), &kb);
  const auto wr = [&](WrOpcode op, std::uint32_t len, std::uint32_t off) {
    SendWr w;
    w.opcode = op;
    w.num_sge = 1;
    w.sg[0] = Sge{reinterpret_cast<std::uint64_t>(la.data()) + off, len, ka.lkey};
    w.remote_addr = reinterpret_cast<std::uint64_t>(lb.data()) + off;
    w.rkey = kb.rkey;
    w.imm = 0x11223344;
    w.compare_add = 1;
    return w;
  };
  // A SEND before any receive is posted: refused (NACK), then retried.
  e[0]->post_send(0, a, wr(WrOpcode::kSend, 100, 0));
  net.run_for(300 * kMicrosecond);
  RecvWr r;
  r.num_sge = 1;
  r.sg[0] = Sge{reinterpret_cast<std::uint64_t>(lb.data()) + 60000, 4096, kb.lkey};
  for (int i = 0; i < 3; ++i) e[1]->post_recv(net.now(), b, r);
  e[0]->post_send(net.now(), a, wr(WrOpcode::kSendWithImm, 64, 0));
  e[0]->post_send(net.now(), a, wr(WrOpcode::kRdmaWrite, 40000, 0));
  e[0]->post_send(net.now(), a, wr(WrOpcode::kRdmaWriteWithImm, 9000, 40960));
  e[0]->post_send(net.now(), a, wr(WrOpcode::kRdmaRead, 9000, 50000));
  e[0]->post_send(net.now(), a, wr(WrOpcode::kAtomicFetchAdd, 8, 59992));
  e[0]->post_send(net.now(), a, wr(WrOpcode::kAtomicCmpSwp, 8, 59984));
  net.run_until([&] { return rec[0].completions.size() >= 7; }, 10 * kSecond);
  // Datagram queue pairs: three SEND_IMM datagrams, outside the connection.
  StreamId da = 0, db = 0;
  e[0]->create_datagram({.qkey = 0x1234}, &da);
  e[1]->create_datagram({.qkey = 0x1234}, &db);
  r.sg[0].length = 4096 + kGrhSize;
  for (int i = 0; i < 3; ++i) {
    e[1]->post_recv(net.now(), db, r);
    e[0]->post_datagram(net.now(), da, wr(WrOpcode::kSendWithImm, 100, 0),
                        DatagramDest{{Address::ipv4(0x0a000002), port}, db, 0x1234, 0});
  }
  net.run_for(kMillisecond);
  // Closing the streams closes the connection.
  e[0]->destroy_stream(net.now(), a);
  e[1]->destroy_stream(net.now(), b);
  net.run_for(100 * kMillisecond);
  pcap.flush();
  const std::size_t genuine = pcap.packets();
  if (corrupt) {
    TxMeta m;
    m.src = Address::ipv4(0x0a000001);
    m.dst = Address::ipv4(0x0a000002);
    m.src_port = 49152;
    m.dst_port = port;
    for (const auto& v : malformed_variants()) {
      pcap.write(net.now(), m, v);
      pcap.flush();  // each a datagram of its own
    }
    fmt::print("malformed frames {}-{}\n", genuine + 1, pcap.packets());
  }
  const bool ok = rec[0].completions.size() >= 7;
  fmt::print("{} packets written to {}, {} GSO trains{}\n", pcap.packets(), out, pcap.trains(),
             ok ? "" : " (session incomplete)");
  return ok ? 0 : 1;
}
