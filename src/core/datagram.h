// Datagram queue pairs (Verbs' UD) of one engine: connectionless, unreliable messages,
// one DATAGRAM packet each (docs/SPEC.md section 3.8). Nothing here touches a connection:
// a datagram is sent once, from the listening port, outside congestion control, and
// received into the oldest posted receive behind a 40-byte GRH. Queues are sized when a
// queue pair is created; nothing is allocated per packet.
#pragma once

#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/context.h"
#include "core/ring.h"
#include "wire/packet.h"

namespace mroce {

class DatagramTable {
 public:
  explicit DatagramTable(EngineContext& ctx) : ctx_(ctx) {}

  bool has(StreamId id) const { return qps_.count(id) != 0; }
  Errc create(StreamId id, const DatagramConfig& config);
  // Forgets the queue pair: what it had posted is dropped without completions.
  void destroy(StreamId id);
  Errc set_qkey(StreamId id, std::uint32_t qkey);
  Errc post_send(StreamId id, const SendWr& wr, const DatagramDest& dest);
  Errc post_recv(StreamId id, const RecvWr& wr);
  // Verbs' move to ERR: posted receives and unsent sends complete with WR_FLUSH_ERR.
  Errc fail(StreamId id);
  Errc quiesce(StreamId id);
  StreamState state(StreamId id) const;

  // A decoded DATAGRAM packet of `size` bytes.
  void on_packet(const RxMeta& meta, const wire::Packet& pkt, std::size_t size);
  // The next datagram to send, if any (completing what it finishes, or flushes).
  bool poll_transmit(std::span<std::uint8_t> buf, TxMeta* out);

 private:
  struct Qp {
    DatagramConfig config;
    StreamState state = StreamState::kReady;
    bool quiesced = false;
    Ring<RecvWr> recvs;
    std::uint32_t queued = 0;                // sends waiting in pending_
    std::uint32_t next_slot = 0;             // inline slot of the next send
    std::vector<std::uint8_t> inline_bytes;  // sq_depth slots of max_inline bytes
  };
  struct Pending {
    StreamId qp = kNoStream;
    std::uint32_t slot = 0;
    std::uint32_t length = 0;
    SendWr wr;
    DatagramDest dest;
  };

  Qp* find(StreamId id);
  void complete(StreamId id, const SendWr& wr, WcStatus status, std::uint32_t length);
  void complete_recv(StreamId id, const RecvWr& wr, WcStatus status);

  EngineContext& ctx_;
  std::unordered_map<StreamId, std::unique_ptr<Qp>> qps_;
  Ring<Pending> pending_;  // every queue pair's sends, in posting order
};

// Writes the 40-byte GRH of a datagram from `src` to `dst` whose UDP payload is
// `udp_payload` bytes: IBA's GRH for IPv6 addresses, and for IPv4-mapped ones 20 zero
// bytes then the IPv4 header, as RoCEv2 devices give it.
void write_grh(const Address& src, const Address& dst, std::uint32_t udp_payload,
               std::uint8_t* out);

}  // namespace mroce
