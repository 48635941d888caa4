// rdma_getaddrinfo: the system resolver's answer, in rdma_addrinfo form. A passive
// request's address is the source; otherwise it is the destination, and the source is
// hints->ai_src_addr if given (else chosen at rdma_resolve_addr). Without node and
// service the answer is the hints' own addresses (libfabric asks that way).
#include <netdb.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace {

sockaddr* copy_addr(const sockaddr* a, socklen_t len) {
  auto* c = static_cast<sockaddr*>(std::malloc(len));
  if (c) std::memcpy(c, a, len);
  return c;
}

void fill_types(const rdma_addrinfo* hints, rdma_addrinfo* r) {
  r->ai_flags = hints ? hints->ai_flags : 0;
  r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
  r->ai_qp_type = hints && hints->ai_qp_type        ? hints->ai_qp_type
                  : r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD
                                                    : IBV_QPT_RC;
}

// One entry holding copies of the hints' source and destination addresses.
int addrinfo_of_hints(const rdma_addrinfo& hints, rdma_addrinfo** res) {
  const sockaddr* any = hints.ai_dst_len ? hints.ai_dst_addr : hints.ai_src_addr;
  if (!any || (any->sa_family != AF_INET && any->sa_family != AF_INET6) ||
      (hints.ai_src_len && !hints.ai_src_addr) || (hints.ai_dst_len && !hints.ai_dst_addr)) {
    errno = EINVAL;
    return -1;
  }
  auto* r = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (!r) {
    errno = ENOMEM;
    return -1;
  }
  fill_types(&hints, r);
  r->ai_family = any->sa_family;
  if (hints.ai_src_len) {
    r->ai_src_addr = copy_addr(hints.ai_src_addr, hints.ai_src_len);
    r->ai_src_len = hints.ai_src_len;
  }
  if (hints.ai_dst_len) {
    r->ai_dst_addr = copy_addr(hints.ai_dst_addr, hints.ai_dst_len);
    r->ai_dst_len = hints.ai_dst_len;
  }
  if ((hints.ai_src_len && !r->ai_src_addr) || (hints.ai_dst_len && !r->ai_dst_addr)) {
    rdma_freeaddrinfo(r);
    errno = ENOMEM;
    return -1;
  }
  *res = r;
  return 0;
}

}  // namespace

extern "C" {

void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                     rdma_addrinfo** res) {
  const bool from_hints = !node && !service && hints && (hints->ai_src_len || hints->ai_dst_len);
  if (!res || (!node && !service && !from_hints)) {
    errno = EINVAL;
    return -1;
  }
  if (from_hints) return addrinfo_of_hints(*hints, res);
  const bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
  addrinfo ai_hints{};
  ai_hints.ai_socktype = SOCK_STREAM;
  ai_hints.ai_family = hints && hints->ai_family ? hints->ai_family : AF_UNSPEC;
  if (hints && (hints->ai_flags & RAI_NUMERICHOST)) ai_hints.ai_flags |= AI_NUMERICHOST;
  if (passive) ai_hints.ai_flags |= AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(node, service, &ai_hints, &found);
  if (rc != 0) {
    errno = rc == EAI_SYSTEM ? errno : ENOENT;
    return rc == EAI_SYSTEM ? -1 : rc;
  }
  rdma_addrinfo* head = nullptr;
  rdma_addrinfo** tail = &head;
  for (addrinfo* a = found; a; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    auto* r = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (!r) break;
    fill_types(hints, r);
    r->ai_family = a->ai_family;
    if (passive) {
      r->ai_src_addr = copy_addr(a->ai_addr, a->ai_addrlen);
      r->ai_src_len = a->ai_addrlen;
    } else {
      r->ai_dst_addr = copy_addr(a->ai_addr, a->ai_addrlen);
      r->ai_dst_len = a->ai_addrlen;
      if (hints && hints->ai_src_addr) {
        r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
        r->ai_src_len = hints->ai_src_len;
      }
    }
    *tail = r;
    tail = &r->ai_next;
  }
  freeaddrinfo(found);
  if (!head) {
    errno = ENOENT;
    return EAI_NONAME;
  }
  *res = head;
  return 0;
}

}  // extern "C"
