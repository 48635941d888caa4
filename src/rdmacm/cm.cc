// rdma_cm ids and event channels, and the connection manager's protocol over the side
// channel (docs/VERBS.md, "Connection manager").
#include "rdmacm/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <set>

#include "rdmacm/qp.h"
#include "rdmacm/service.h"

namespace mroce::rdmacm {
namespace {

// IB CM reject reasons that librdmacm programs see as an event's status.
constexpr int kRejInvalidServiceId = 8;  // nobody listens there
constexpr int kRejConsumer = 28;         // rdma_reject

// MROCE_DEBUG=1: one line on stderr for each refused or failed connection.
void debug(const char* format, ...) __attribute__((format(printf, 1, 2)));
void debug(const char* format, ...) {
  static const bool on = [] {
    const char* v = std::getenv("MROCE_DEBUG");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  if (!on) return;
  va_list args;
  va_start(args, format);
  std::fprintf(stderr, "mroce-rdmacm: ");
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

std::set<Id*>& live_ids() {
  static auto* s = new std::set<Id*>;
  return *s;
}

std::uint32_t random_psn() {
  static std::mt19937 rng{std::random_device{}()};
  return rng() & 0xffffff;
}

socklen_t addr_len(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

// The address a GID stands for (IPv4-mapped GIDs give IPv4), with this port.
bool address_of_gid(const ibv_gid& gid, in_port_t port, sockaddr_storage* out) {
  *out = sockaddr_storage{};
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid.raw, kMapped, sizeof kMapped) == 0) {
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = port;
    std::memcpy(&in->sin_addr, gid.raw + 12, 4);
    return true;
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = port;
  std::memcpy(&in6->sin6_addr, gid.raw, 16);
  return true;
}

bool is_wildcard(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
}

std::uint16_t port_of(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(a)->sin6_port
                                  : reinterpret_cast<const sockaddr_in*>(a)->sin_port;
}

int fail(int e) {
  errno = e;
  return -1;
}

Channel* new_channel() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return nullptr;
  fcntl(sv[1], F_SETFL, O_NONBLOCK);
  auto* c = new Channel;
  c->pub.fd = sv[0];
  c->writer = sv[1];
  return c;
}

// A program may destroy a channel while one of its threads is on its way back into
// rdma_get_cm_event: rping's cm thread (rdma-core 44) acks the last event and reads again
// while main destroys the channel. On the kernel's fd a read already under way never
// returns, but one that starts after the close fails with EBADF, and rping then exits 255
// after a good run; or the number names another file by then, whose bytes the read takes.
// So a channel the program made is retired, not freed: its queue is dropped and both ends
// stay open, unwritten, and a late read waits for good (or says EAGAIN on a non-blocking
// fd). The last kRetiredChannels stay so; an older one is closed and freed, which bounds
// what a program that makes and destroys channels in a loop holds.
constexpr std::size_t kRetiredChannels = 64;

std::deque<Channel*>& retired_channels() {
  static auto* d = new std::deque<Channel*>;
  return *d;
}

void free_channel(Channel* c, bool program_made) {
  for (EventRecord* r : c->queue) delete r;
  c->queue.clear();
  if (program_made) {
    // Bytes of the dropped events may stay: a read finds the queue empty and reads on.
    auto& retired = retired_channels();
    retired.push_back(c);
    if (retired.size() <= kRetiredChannels) return;
    c = retired.front();
    retired.pop_front();
  }
  close(c->pub.fd);
  close(c->writer);
  delete c;
}

Channel* channel_of(rdma_event_channel* ch) {
  return reinterpret_cast<Channel*>(ch);
}

// Takes the id's queued (not yet retrieved) events off `from`; appends them to *out.
void take_events(Channel* from, Id* id, std::deque<EventRecord*>* out) {
  auto& q = from->queue;
  for (auto it = q.begin(); it != q.end();) {
    if ((*it)->ev.id == &id->pub) {
      char b;
      (void)recv(from->pub.fd, &b, 1, MSG_DONTWAIT);
      out->push_back(*it);
      it = q.erase(it);
    } else {
      ++it;
    }
  }
}

void push_record(Channel* c, EventRecord* r) {
  c->queue.push_back(r);
  const char b = 1;
  (void)!write(c->writer, &b, 1);
}

void fill_local(Id* id, const rdma_conn_param* param, std::uint32_t qpn) {
  Endpoint& e = id->local;
  std::memcpy(e.gid.data(), id->dev.gid.raw, 16);
  e.qpn = qpn;
  e.psn = random_psn();
  e.qkey = kUdpQkey;
  e.port_space = static_cast<std::uint16_t>(id->pub.ps);
  if (param) {
    e.responder_resources = param->responder_resources;
    e.initiator_depth = param->initiator_depth;
    e.flow_control = param->flow_control;
    e.retry_count = param->retry_count;
    e.rnr_retry_count = param->rnr_retry_count;
    e.srq = param->srq;
  }
}

void set_private(Message* m, const void* data, std::uint8_t len) {
  if (data && len) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    m->private_data.assign(p, p + len);
  }
}

void drop_link(Id* id) {
  close_socket(id->sock);
  id->sock = nullptr;
  id->deadline_ms = 0;
}

// A connect refused (nobody listens yet) is tried again this often for this long before
// REJECTED: programs such as perftest listen again on the port they just served.
constexpr std::int64_t kRefusedRetryMs = 20;
constexpr std::int64_t kRefusedWindowMs = 200;

void start_connect(Id* id);

// The link to the peer never came up.
void connect_failed(Id* id, int e) {
  drop_link(id);
  if (e == ECONNREFUSED && now_ms() + kRefusedRetryMs < id->refused_until_ms) {
    id->state = State::kConnecting;
    id->retrying = true;
    id->deadline_ms = now_ms() + kRefusedRetryMs;
    wake_service();
    return;
  }
  debug("connect: %s", std::strerror(e));
  id->state = State::kError;
  if (e == ECONNREFUSED) {
    post_event(id, RDMA_CM_EVENT_REJECTED, kRejInvalidServiceId);
  } else {
    post_event(id, RDMA_CM_EVENT_UNREACHABLE, -e);
  }
}

// A synchronous id's call waits for its next event, as librdmacm's do. Without the mutex.
int complete(Id* id) {
  if (!id->sync) return 0;
  if (id->pub.event) {
    rdma_ack_cm_event(id->pub.event);
    id->pub.event = nullptr;
  }
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(id->pub.channel, &ev) != 0) return -1;
  id->pub.event = ev;
  if (ev->status) {
    if (ev->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
    return fail(ev->status < 0 ? -ev->status : ev->status);
  }
  return 0;
}

// A local address to reach dst from: the routing table's choice (a UDP connect).
bool source_for(const sockaddr* dst, sockaddr_storage* out) {
  const int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_storage probe{};
  std::memcpy(&probe, dst, addr_len(dst));
  if (port_of(dst) == 0) reinterpret_cast<sockaddr_in*>(&probe)->sin_port = htons(9);
  socklen_t len = sizeof *out;
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&probe), addr_len(dst)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(out), &len) == 0;
  const int e = errno;
  close(fd);
  errno = e;
  if (ok) reinterpret_cast<sockaddr_in*>(out)->sin_port = 0;
  return ok;
}

int bind_socket(Id* id, const sockaddr* addr) {
  const int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (bind(fd, addr, addr_len(addr)) != 0) {
    const int e = errno;
    close(fd);
    return fail(e);
  }
  socklen_t len = sizeof id->pub.route.addr.src_storage;
  getsockname(fd, &id->pub.route.addr.src_addr, &len);
  id->sock = new_socket(fd, id);
  return 0;
}

// Opens the link from the id's source address and queues the REQ.
void start_connect(Id* id) {
  rdma_cm_id* cm_id = &id->pub;
  if (!id->sock) {
    sockaddr_storage src{};
    std::memcpy(&src, &cm_id->route.addr.src_storage, sizeof src);
    reinterpret_cast<sockaddr_in*>(&src)->sin_port = 0;
    if (bind_socket(id, reinterpret_cast<sockaddr*>(&src)) != 0) {
      connect_failed(id, errno);
      return;
    }
  }
  Socket* s = id->sock;
  id->state = State::kReqSent;
  id->deadline_ms = id->connect_deadline_ms;
  const sockaddr* dst = &cm_id->route.addr.dst_addr;
  if (connect(s->fd, dst, addr_len(dst)) != 0 && errno != EINPROGRESS) {
    connect_failed(id, errno);
    return;
  }
  s->connecting = true;
  s->tx = id->req;
  watch(s);
  wake_service();
}

void post_with(Id* id, EventRecord* r) {
  push_record(channel_of(id->pub.channel), r);
}

}  // namespace

std::mutex& cm_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

std::condition_variable& acked() {
  static auto* c = new std::condition_variable;
  return *c;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t cm_timeout_ms() {
  static const std::int64_t t = [] {
    const char* v = std::getenv("MROCE_CM_TIMEOUT_MS");
    const long n = v ? std::strtol(v, nullptr, 10) : 0;
    return n > 0 ? std::int64_t{n} : std::int64_t{5000};
  }();
  return t;
}

void post_event(Id* id, rdma_cm_event_type type, int status, const Message* msg, Id* listen) {
  auto* r = new EventRecord;
  r->ev.id = &id->pub;
  r->ev.listen_id = listen ? &listen->pub : nullptr;
  r->ev.event = type;
  r->ev.status = status;
  if (msg) {
    const std::size_t n = std::min(msg->private_data.size(), sizeof r->data);
    if (n) std::memcpy(r->data, msg->private_data.data(), n);
    const Endpoint& p = msg->ep;
    if (id->pub.ps == RDMA_PS_UDP || id->pub.ps == RDMA_PS_IPOIB) {
      rdma_ud_param& ud = r->ev.param.ud;
      ud.private_data = n ? r->data : nullptr;
      ud.private_data_len = static_cast<std::uint8_t>(n);
      ud.qp_num = p.qpn;
      ud.qkey = p.qkey;
      ud.ah_attr.is_global = 1;
      std::memcpy(ud.ah_attr.grh.dgid.raw, p.gid.data(), 16);
      ud.ah_attr.grh.sgid_index = id->dev.gid_index;
      ud.ah_attr.grh.hop_limit = 64;
      ud.ah_attr.port_num = 1;
    } else {
      rdma_conn_param& c = r->ev.param.conn;
      c.private_data = n ? r->data : nullptr;
      c.private_data_len = static_cast<std::uint8_t>(n);
      // What the peer offers as responder is what we may initiate, and back.
      c.responder_resources = p.initiator_depth;
      c.initiator_depth = p.responder_resources;
      c.flow_control = p.flow_control;
      c.retry_count = p.retry_count;
      c.rnr_retry_count = p.rnr_retry_count;
      c.srq = p.srq;
      c.qp_num = p.qpn;
    }
  }
  post_with(id, r);
}

// --- the protocol, driven by the service thread (cm_mutex held) ---

void on_connected(Socket* s) {
  (void)s;  // the REQ was queued by rdma_connect and leaves now
}

void on_message(Socket* s, const Message& m) {
  Id* id = s->id;
  if (!id) {
    // An accepted link: its first message must be a REQ for the listener's port space.
    Id* l = s->listener;
    if (m.type != MsgType::kReq || m.ep.port_space != static_cast<std::uint16_t>(l->pub.ps)) {
      debug("refused a link: message type %d, port space 0x%x (listening on 0x%x)",
            static_cast<int>(m.type), m.ep.port_space, static_cast<unsigned>(l->pub.ps));
      Message rej;
      rej.type = MsgType::kRej;
      rej.reason = kRejInvalidServiceId;
      send_message(s, rej);
      close_socket(s);
      return;
    }
    auto* child = new Id;
    child->pub.channel = l->pub.channel;
    child->pub.context = l->pub.context;
    child->pub.ps = l->pub.ps;
    child->pub.qp_type = l->pub.qp_type;
    child->pub.port_num = 1;
    socklen_t len = sizeof child->pub.route.addr.src_storage;
    getsockname(s->fd, &child->pub.route.addr.src_addr, &len);
    len = sizeof child->pub.route.addr.dst_storage;
    getpeername(s->fd, &child->pub.route.addr.dst_addr, &len);
    // The listener's port, not the link's (the same, but an IPv4-mapped peer may differ).
    if (!device_for(&child->pub.route.addr.src_addr, &child->dev)) {
      debug("refused a request: no device carries the address it reached");
      Message rej;
      rej.type = MsgType::kRej;
      rej.reason = kRejInvalidServiceId;
      send_message(s, rej);
      close_socket(s);
      delete child;
      return;
    }
    child->pub.verbs = child->dev.verbs;
    child->pub.route.addr.addr.ibaddr.sgid = child->dev.gid;
    std::memcpy(child->pub.route.addr.addr.ibaddr.dgid.raw, m.ep.gid.data(), 16);
    child->pub.route.addr.addr.ibaddr.pkey = 0xffff;
    child->peer = m.ep;
    child->state = State::kReqReceived;
    child->sock = s;
    s->id = child;
    s->listener = nullptr;
    live_ids().insert(child);
    post_event(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &m, l);
    return;
  }
  switch (id->state) {
    case State::kReqSent:
      if (m.type == MsgType::kRej) {
        drop_link(id);
        id->state = State::kError;
        post_event(id, RDMA_CM_EVENT_REJECTED, m.reason, &m);
      } else if (m.type == MsgType::kRep) {
        id->peer = m.ep;
        id->deadline_ms = 0;
        if (id->pub.qp_type == IBV_QPT_UD) {
          drop_link(id);
          id->state = State::kConnected;
          post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, &m);
        } else if (!id->pub.qp) {
          id->state = State::kRepReceived;
          post_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &m);
        } else if (const int e = qp_connect(*id)) {
          Message rej;
          rej.type = MsgType::kRej;
          rej.reason = kRejConsumer;
          send_message(s, rej);
          drop_link(id);
          id->state = State::kError;
          post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -e);
        } else {
          Message rtu;
          rtu.type = MsgType::kRtu;
          send_message(s, rtu);
          id->state = State::kConnected;
          post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, &m);
        }
      }
      return;
    case State::kRepSent:
      if (m.type == MsgType::kRtu) {
        id->deadline_ms = 0;
        id->state = State::kConnected;
        post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0);
      } else if (m.type == MsgType::kRej) {
        drop_link(id);
        id->state = State::kError;
        post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNREFUSED);
      }
      return;
    case State::kConnected:
    case State::kDisconnecting:
      if (m.type == MsgType::kDreq || m.type == MsgType::kDrep) {
        if (m.type == MsgType::kDreq) {
          Message drep;
          drep.type = MsgType::kDrep;
          send_message(s, drep);
        }
        id->deadline_ms = 0;
        id->state = State::kDisconnected;
        post_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
        if (m.type == MsgType::kDrep) drop_link(id);
      }
      return;
    default:
      return;  // nothing else is expected; stale messages are ignored
  }
}

void on_link_closed(Socket* s, int error) {
  Id* id = s->id;
  if (!id || s->listening) {
    close_socket(s);
    if (id) id->sock = nullptr;
    return;
  }
  const State was = id->state;
  if (s->connecting) {
    connect_failed(id, error ? error : ECONNRESET);
    return;
  }
  drop_link(id);
  debug("link closed in state %d: %s", static_cast<int>(was), error ? std::strerror(error) : "EOF");
  switch (was) {
    case State::kConnecting:
    case State::kReqSent:
      id->state = State::kError;
      post_event(id, RDMA_CM_EVENT_UNREACHABLE, -(error ? error : ECONNRESET));
      return;
    case State::kRepSent:
      id->state = State::kError;
      post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -(error ? error : ECONNRESET));
      return;
    case State::kConnected:
    case State::kDisconnecting:
    case State::kRepReceived:
      id->state = State::kDisconnected;
      post_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
      return;
    default:
      return;
  }
}

std::int64_t next_deadline() {
  std::int64_t at = 0;
  for (Id* id : live_ids()) {
    if (id->deadline_ms && (at == 0 || id->deadline_ms < at)) at = id->deadline_ms;
  }
  return at;
}

void on_deadlines(std::int64_t now) {
  std::vector<Id*> due;
  for (Id* id : live_ids()) {
    if (id->deadline_ms && id->deadline_ms <= now) due.push_back(id);
  }
  for (Id* id : due) {
    const State was = id->state;
    if (was == State::kConnecting && id->retrying) {
      id->retrying = false;
      start_connect(id);
      continue;
    }
    drop_link(id);
    if (was == State::kConnecting || was == State::kReqSent) {
      id->state = State::kError;
      post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
    } else if (was == State::kRepSent) {
      id->state = State::kError;
      post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT);
    } else if (was == State::kDisconnecting) {
      id->state = State::kDisconnected;
      post_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
    }
  }
}

}  // namespace mroce::rdmacm

using namespace mroce::rdmacm;

extern "C" {

rdma_event_channel* rdma_create_event_channel(void) {
  Channel* c = new_channel();
  return c ? &c->pub : nullptr;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
  std::lock_guard lock(cm_mutex());
  free_channel(channel_of(channel), true);
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (!channel || !event) return fail(EINVAL);
  Channel* c = channel_of(channel);
  for (;;) {
    char b;
    const ssize_t n = read(c->pub.fd, &b, 1);
    if (n < 0) return -1;  // EAGAIN for a non-blocking fd, as librdmacm
    if (n == 0) return fail(ENODATA);
    std::lock_guard lock(cm_mutex());
    if (c->queue.empty()) continue;  // its id was destroyed meanwhile
    *event = &c->queue.front()->ev;
    c->queue.pop_front();
    ++id_of((*event)->id)->unacked;
    return 0;
  }
}

int rdma_ack_cm_event(rdma_cm_event* event) {
  if (!event) return fail(EINVAL);
  std::lock_guard lock(cm_mutex());
  --id_of(event->id)->unacked;
  delete reinterpret_cast<EventRecord*>(event);
  acked().notify_all();
  return 0;
}

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** out, void* context,
                   rdma_port_space ps) {
  if (!out) return fail(EINVAL);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB && ps != RDMA_PS_IB) {
    return fail(EINVAL);
  }
  auto* id = new Id;
  if (!channel) {
    id->own = new_channel();
    if (!id->own) {
      delete id;
      return -1;
    }
    id->sync = true;
    channel = &id->own->pub;
  }
  id->pub.channel = channel;
  id->pub.context = context;
  id->pub.ps = ps;
  id->pub.port_num = 1;
  id->pub.qp_type = (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ? IBV_QPT_UD : IBV_QPT_RC;
  std::lock_guard lock(cm_mutex());
  live_ids().insert(id);
  *out = &id->pub;
  return 0;
}

int rdma_destroy_id(rdma_cm_id* cm_id) {
  Id* id = id_of(cm_id);
  if (cm_id->event) rdma_ack_cm_event(cm_id->event);
  std::unique_lock lock(cm_mutex());
  // As librdmacm: the events the program holds must be acknowledged first (another of
  // its threads may still be handling one).
  acked().wait(lock, [&] { return id->unacked == 0; });
  if (id->state == State::kListening) close_pending_of(id);
  close_socket(id->sock);
  std::deque<EventRecord*> dropped;
  take_events(channel_of(cm_id->channel), id, &dropped);
  for (EventRecord* r : dropped) delete r;
  if (id->own) free_channel(id->own, false);
  live_ids().erase(id);
  delete id;
  return 0;
}

int rdma_bind_addr(rdma_cm_id* cm_id, sockaddr* addr) {
  if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
    return fail(EAFNOSUPPORT);
  }
  Id* id = id_of(cm_id);
  std::lock_guard lock(cm_mutex());
  if (id->state != State::kIdle) return fail(EINVAL);
  DeviceMatch dev;
  if (!is_wildcard(addr) && !device_for(addr, &dev)) return fail(ENODEV);
  // A loopback address on a device that does not carry it (libfabric binds "localhost"
  // when told no address): the id takes the device's own address, which it then reports
  // to peers (fi_getname), and listens on every address, so local and remote peers both
  // reach it.
  sockaddr_storage device_addr{};
  const bool moved = dev.verbs && !is_wildcard(addr) &&
                     std::memcmp(gid_of(addr).raw, dev.gid.raw, 16) != 0 &&
                     address_of_gid(dev.gid, port_of(addr), &device_addr) &&
                     device_addr.ss_family == addr->sa_family;
  if (moved) {
    sockaddr_storage any{};
    any.ss_family = addr->sa_family;
    if (addr->sa_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&any)->sin6_port = port_of(addr);
    } else {
      reinterpret_cast<sockaddr_in*>(&any)->sin_port = port_of(addr);
    }
    if (bind_socket(id, reinterpret_cast<sockaddr*>(&any)) != 0) return -1;
    const in_port_t bound = port_of(&cm_id->route.addr.src_addr);
    if (device_addr.ss_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&device_addr)->sin6_port = bound;
    } else {
      reinterpret_cast<sockaddr_in*>(&device_addr)->sin_port = bound;
    }
    std::memcpy(&cm_id->route.addr.src_storage, &device_addr, sizeof device_addr);
  } else if (bind_socket(id, addr) != 0) {
    return -1;
  }
  id->dev = dev;
  cm_id->verbs = dev.verbs;
  if (dev.verbs) cm_id->route.addr.addr.ibaddr.sgid = dev.gid;
  id->state = State::kBound;
  return 0;
}

int rdma_listen(rdma_cm_id* cm_id, int backlog) {
  Id* id = id_of(cm_id);
  std::lock_guard lock(cm_mutex());
  if (id->state == State::kIdle) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (bind_socket(id, reinterpret_cast<sockaddr*>(&any)) != 0) return -1;
    id->state = State::kBound;
  }
  if (id->state != State::kBound) return fail(EINVAL);
  if (listen(id->sock->fd, backlog > 0 ? backlog : SOMAXCONN) != 0) return -1;
  id->sock->listening = true;
  watch(id->sock);
  id->state = State::kListening;
  return 0;
}

int rdma_resolve_addr(rdma_cm_id* cm_id, sockaddr* src, sockaddr* dst, int timeout_ms) {
  (void)timeout_ms;  // resolution needs no network round trip here
  if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)) {
    return fail(EAFNOSUPPORT);
  }
  Id* id = id_of(cm_id);
  if (src && id->state == State::kIdle && rdma_bind_addr(cm_id, src) != 0) return -1;
  {
    std::lock_guard lock(cm_mutex());
    if (id->state != State::kIdle && id->state != State::kBound) return fail(EINVAL);
    std::memcpy(&cm_id->route.addr.dst_storage, dst, addr_len(dst));
    sockaddr_storage local{};
    int status = 0;
    if (id->state == State::kBound && !is_wildcard(&cm_id->route.addr.src_addr)) {
      std::memcpy(&local, &cm_id->route.addr.src_storage, sizeof local);
    } else if (!source_for(dst, &local)) {
      status = -errno;
    }
    if (status == 0 && !device_for(reinterpret_cast<sockaddr*>(&local), &id->dev)) {
      status = -ENODEV;
    }
    if (status != 0) {
      post_event(id, RDMA_CM_EVENT_ADDR_ERROR, status);
    } else {
      if (id->state != State::kBound) {
        std::memcpy(&cm_id->route.addr.src_storage, &local, sizeof local);
      }
      cm_id->verbs = id->dev.verbs;
      rdma_ib_addr& ib = cm_id->route.addr.addr.ibaddr;
      ib.sgid = id->dev.gid;
      ib.dgid = gid_of(dst);
      ib.pkey = 0xffff;
      id->state = State::kAddrResolved;
      post_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    }
  }
  return complete(id);
}

int rdma_resolve_route(rdma_cm_id* cm_id, int timeout_ms) {
  (void)timeout_ms;
  Id* id = id_of(cm_id);
  {
    std::lock_guard lock(cm_mutex());
    if (id->state != State::kAddrResolved) return fail(EINVAL);
    ibv_sa_path_rec& p = id->path;
    p.sgid = cm_id->route.addr.addr.ibaddr.sgid;
    p.dgid = cm_id->route.addr.addr.ibaddr.dgid;
    p.pkey = htons(0xffff);
    p.hop_limit = 64;
    p.reversible = 1;
    p.numb_path = 1;
    p.mtu_selector = 2;  // exactly
    p.mtu = static_cast<std::uint8_t>(id->dev.mtu);
    p.rate_selector = 2;
    p.rate = IBV_RATE_10_GBPS;
    p.packet_life_time_selector = 2;
    p.packet_life_time = 14;
    cm_id->route.path_rec = &p;
    cm_id->route.num_paths = 1;
    id->state = State::kRouteResolved;
    post_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
  }
  return complete(id);
}

int rdma_connect(rdma_cm_id* cm_id, rdma_conn_param* param) {
  Id* id = id_of(cm_id);
  {
    std::lock_guard lock(cm_mutex());
    if (id->state != State::kRouteResolved && id->state != State::kAddrResolved) {
      return fail(EINVAL);
    }
    if (param && param->private_data_len > kMaxReqPrivate) return fail(EINVAL);
    fill_local(id, param, cm_id->qp ? cm_id->qp->qp_num : (param ? param->qp_num : 0));
    Message req;
    req.type = MsgType::kReq;
    req.ep = id->local;
    if (param) set_private(&req, param->private_data, param->private_data_len);
    id->req.clear();
    encode(req, &id->req);
    const std::int64_t now = now_ms();
    id->connect_deadline_ms = now + cm_timeout_ms();
    id->refused_until_ms = now + kRefusedWindowMs;
    start_connect(id);
  }
  return complete(id);
}

int rdma_accept(rdma_cm_id* cm_id, rdma_conn_param* param) {
  Id* id = id_of(cm_id);
  {
    std::lock_guard lock(cm_mutex());
    if (id->state != State::kReqReceived || !id->sock) return fail(EINVAL);
    if (param && param->private_data_len > kMaxRepPrivate) return fail(EINVAL);
    fill_local(id, param, cm_id->qp ? cm_id->qp->qp_num : (param ? param->qp_num : 0));
    if (cm_id->qp && cm_id->qp_type != IBV_QPT_UD) {
      if (const int e = qp_connect(*id)) return fail(e);
    }
    Message rep;
    rep.type = MsgType::kRep;
    rep.ep = id->local;
    if (param) set_private(&rep, param->private_data, param->private_data_len);
    send_message(id->sock, rep);
    if (cm_id->qp_type == IBV_QPT_UD) {
      id->state = State::kConnected;
      return 0;  // SIDR: no RTU, no event on this side
    }
    id->state = State::kRepSent;
    id->deadline_ms = now_ms() + cm_timeout_ms();
    wake_service();
  }
  return complete(id);
}

int rdma_reject(rdma_cm_id* cm_id, const void* private_data, uint8_t private_data_len) {
  Id* id = id_of(cm_id);
  std::lock_guard lock(cm_mutex());
  if (id->state != State::kReqReceived || !id->sock) return fail(EINVAL);
  if (private_data_len > kMaxRejPrivate) return fail(EINVAL);
  Message rej;
  rej.type = MsgType::kRej;
  rej.reason = kRejConsumer;
  set_private(&rej, private_data, private_data_len);
  send_message(id->sock, rej);
  drop_link(id);
  id->state = State::kError;
  return 0;
}

int rdma_establish(rdma_cm_id* cm_id) {
  Id* id = id_of(cm_id);
  std::lock_guard lock(cm_mutex());
  if (id->state != State::kRepReceived || !id->sock) return fail(EINVAL);
  Message rtu;
  rtu.type = MsgType::kRtu;
  send_message(id->sock, rtu);
  id->state = State::kConnected;
  return 0;
}

int rdma_disconnect(rdma_cm_id* cm_id) {
  Id* id = id_of(cm_id);
  {
    std::lock_guard lock(cm_mutex());
    if (cm_id->qp && cm_id->qp_type != IBV_QPT_UD) qp_error(*id);
    if (id->state == State::kConnected && id->sock) {
      Message dreq;
      dreq.type = MsgType::kDreq;
      send_message(id->sock, dreq);
      id->state = State::kDisconnecting;
      id->deadline_ms = now_ms() + 1000;
      wake_service();
    } else if (id->state != State::kDisconnected && id->state != State::kDisconnecting) {
      return fail(EINVAL);
    }
  }
  return complete(id);
}

int rdma_init_qp_attr(rdma_cm_id* cm_id, ibv_qp_attr* attr, int* mask) {
  std::lock_guard lock(cm_mutex());
  const int e = qp_attr_for(*id_of(cm_id), attr->qp_state, attr, mask);
  return e ? fail(e) : 0;
}

int rdma_migrate_id(rdma_cm_id* cm_id, rdma_event_channel* channel) {
  Id* id = id_of(cm_id);
  std::lock_guard lock(cm_mutex());
  Channel* old_own = id->own;
  Channel* to = nullptr;
  if (channel) {
    to = channel_of(channel);
  } else {
    to = new_channel();
    if (!to) return -1;
  }
  std::deque<EventRecord*> moved;
  take_events(channel_of(cm_id->channel), id, &moved);
  for (EventRecord* r : moved) push_record(to, r);
  cm_id->channel = &to->pub;
  id->own = channel ? nullptr : to;
  id->sync = channel == nullptr;
  if (old_own) free_channel(old_own, false);
  return 0;
}

int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** out) {
  Id* l = id_of(listen);
  if (!l->sync) return fail(EINVAL);
  if (listen->event) {
    rdma_ack_cm_event(listen->event);
    listen->event = nullptr;
  }
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(listen->channel, &ev) != 0) return -1;
  int e = 0;
  if (ev->event == RDMA_CM_EVENT_REJECTED) {
    e = ECONNREFUSED;
  } else if (ev->status) {
    e = ev->status < 0 ? -ev->status : ev->status;
  } else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
    e = EINVAL;
  }
  if (e == 0 && rdma_migrate_id(ev->id, nullptr) != 0) e = errno;
  if (e == 0 && l->has_qp_init) {
    ibv_qp_init_attr attr = l->qp_init;
    if (rdma_create_qp(ev->id, l->ep_pd, &attr) != 0) e = errno;
  }
  if (e != 0) {
    rdma_ack_cm_event(ev);
    return fail(e);
  }
  *out = ev->id;
  (*out)->event = ev;
  return 0;
}

int rdma_set_option(rdma_cm_id* cm_id, int level, int optname, void* optval, size_t optlen) {
  (void)cm_id, (void)level, (void)optname, (void)optval, (void)optlen;
  return 0;  // type of service, reuse, timeouts: nothing here depends on them
}

int rdma_notify(rdma_cm_id* cm_id, ibv_event_type event) {
  (void)cm_id, (void)event;
  return 0;
}

uint16_t rdma_get_src_port(rdma_cm_id* cm_id) {
  return port_of(&cm_id->route.addr.src_addr);
}

uint16_t rdma_get_dst_port(rdma_cm_id* cm_id) {
  return port_of(&cm_id->route.addr.dst_addr);
}

}  // extern "C"
