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
    if (f_) std::fclose(f_);
  }
  bool ok() const { return f_ != nullptr; }

  void write(Time now, const TxMeta& m, std::span<const std::uint8_t> udp_payload) {
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
  std::size_t packets() const { return packets_; }

 private:
  static void put16(std::uint8_t* p, std::uint16_t v) {
    p[0] = std::uint8_t(v >> 8);
    p[1] = std::uint8_t(v);
  }
  std::FILE* f_;
  std::size_t packets_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  double loss = 0.05;
  bool corrupt = false;
  CLI::App app{"mroce-capture: write a pcap of a short MetaRoCE session between two engines"};
  app.add_option("file", out, "pcap file to write")->required();
  app.add_option("--loss", loss, "random loss on the spines")->check(CLI::Range(0.0, 0.5));
  app.add_flag("--corrupt", corrupt, "also write one malformed packet at the end");
  CLI11_PARSE(app, argc, argv);

  PcapWriter pcap(out);
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
  e[0]->connect_stream(0, a, Endpoint{Address::ipv4(0x0a000002), kDefaultPort}, b);
  e[1]->connect_stream(0, b, Endpoint{Address::ipv4(0x0a000001), kDefaultPort}, a);
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
  // Closing the streams closes the connection.
  e[0]->destroy_stream(net.now(), a);
  e[1]->destroy_stream(net.now(), b);
  net.run_for(100 * kMillisecond);
  if (corrupt) {
    TxMeta m;
    m.src = Address::ipv4(0x0a000001);
    m.dst = Address::ipv4(0x0a000002);
    m.src_port = 49152;
    m.dst_port = kDefaultPort;
    const std::uint8_t junk[] = {0x19, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    pcap.write(net.now(), m, junk);  // DATA with a truncated header
  }
  const bool ok = rec[0].completions.size() >= 7;
  fmt::print("{} packets written to {}{}\n", pcap.packets(), out,
             ok ? "" : " (session incomplete)");
  return ok ? 0 : 1;
}
