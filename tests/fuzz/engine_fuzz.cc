// libFuzzer target: arbitrary datagrams into an engine that has a live connection with
// streams, registered memory and posted work, interleaved with timer expiries. Nothing
// may crash, leak or trip the sanitizers; a fixed seed corpus of real packets makes the
// fuzzer reach deep states quickly.
#include <cstdint>
#include <vector>

#include "core/engine.h"

using namespace mroce;

namespace {

struct Fixture {
  Fixture() : a(config(1)), b(config(2)), mem(1 << 16) {
    StreamId sa = 0, sb = 0;
    a.create_stream({}, &sa);
    b.create_stream({}, &sb);
    a.connect_stream(0, sa, Endpoint{Address::ipv4(0x0a000002), kDefaultPort}, sb);
    b.connect_stream(0, sb, Endpoint{Address::ipv4(0x0a000001), kDefaultPort}, sa);
    MrKeys ka, kb;
    a.reg_mr(reinterpret_cast<std::uint64_t>(mem.data()), mem.size() / 2, access::kAll, mem.data(),
             &ka);
    b.reg_mr(reinterpret_cast<std::uint64_t>(mem.data() + mem.size() / 2), mem.size() / 2,
             access::kAll, mem.data() + mem.size() / 2, &kb);
    // Let the two finish set-up by passing their packets back and forth.
    std::vector<std::uint8_t> buf(a.max_packet_size());
    for (int round = 0; round < 8; ++round) {
      shuttle(a, b, buf);
      shuttle(b, a, buf);
    }
    RecvWr r;
    r.num_sge = 1;
    r.sg[0] = Sge{reinterpret_cast<std::uint64_t>(mem.data() + mem.size() / 2), 4096, kb.lkey};
    for (int i = 0; i < 8; ++i) b.post_recv(0, sb, r);
    SendWr w;
    w.opcode = WrOpcode::kRdmaWrite;
    w.num_sge = 1;
    w.sg[0] = Sge{reinterpret_cast<std::uint64_t>(mem.data()), 20000, ka.lkey};
    w.remote_addr = reinterpret_cast<std::uint64_t>(mem.data() + mem.size() / 2);
    w.rkey = kb.rkey;
    a.post_send(0, sa, w);
  }
  static EngineConfig config(int host) {
    EngineConfig c;
    c.planes = {Address::ipv4(0x0a000000u | std::uint32_t(host))};
    c.paths = 4;
    c.seed = std::uint64_t(host);
    return c;
  }
  void shuttle(Engine& from, Engine& to, std::vector<std::uint8_t>& buf) {
    TxMeta m;
    while (from.poll_transmit(now, buf, &m)) {
      RxMeta r;
      r.src = m.src;
      r.dst = m.dst;
      r.src_port = m.src_port;
      r.dst_port = m.dst_port;
      to.on_packet(now, r, {buf.data(), m.length});
    }
  }
  Engine a, b;
  std::vector<std::uint8_t> mem;
  Time now = 1000;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Fixture f;
  std::vector<std::uint8_t> buf(f.a.max_packet_size());
  // Input: a sequence of [1-byte selector][2-byte length][bytes] records.
  std::size_t i = 0;
  while (i + 3 <= size) {
    const std::uint8_t sel = data[i];
    const std::size_t len = std::size_t(data[i + 1]) << 8 | data[i + 2];
    i += 3;
    const std::size_t n = std::min(len, size - i);
    Engine& to = sel & 1 ? f.b : f.a;
    RxMeta r;
    r.src = Address::ipv4(sel & 1 ? 0x0a000001 : 0x0a000002);
    r.dst = Address::ipv4(sel & 1 ? 0x0a000002 : 0x0a000001);
    r.src_port = std::uint16_t(49152 + (sel >> 2));
    r.dst_port = kDefaultPort;
    r.ecn = Ecn(sel >> 6);
    to.on_packet(f.now, r, {data + i, n});
    i += n;
    f.now += (sel & 2) ? 5 * kMillisecond : 1000;
    if (f.now >= f.a.next_deadline()) f.a.on_timer(f.now);
    if (f.now >= f.b.next_deadline()) f.b.on_timer(f.now);
    f.shuttle(f.a, f.b, buf);
    f.shuttle(f.b, f.a, buf);
  }
  return 0;
}
