#include "baseline/opcode.h"

namespace mroce::baseline {

const char* to_string(Opcode op) {
  switch (op) {
    case Opcode::kSendFirst:
      return "SEND_FIRST";
    case Opcode::kSendMiddle:
      return "SEND_MIDDLE";
    case Opcode::kSendLast:
      return "SEND_LAST";
    case Opcode::kSendLastImm:
      return "SEND_LAST_WITH_IMMEDIATE";
    case Opcode::kSendOnly:
      return "SEND_ONLY";
    case Opcode::kSendOnlyImm:
      return "SEND_ONLY_WITH_IMMEDIATE";
    case Opcode::kWriteFirst:
      return "RDMA_WRITE_FIRST";
    case Opcode::kWriteMiddle:
      return "RDMA_WRITE_MIDDLE";
    case Opcode::kWriteLast:
      return "RDMA_WRITE_LAST";
    case Opcode::kWriteLastImm:
      return "RDMA_WRITE_LAST_WITH_IMMEDIATE";
    case Opcode::kWriteOnly:
      return "RDMA_WRITE_ONLY";
    case Opcode::kWriteOnlyImm:
      return "RDMA_WRITE_ONLY_WITH_IMMEDIATE";
    case Opcode::kReadRequest:
      return "RDMA_READ_REQUEST";
    case Opcode::kReadResponseFirst:
      return "RDMA_READ_RESPONSE_FIRST";
    case Opcode::kReadResponseMiddle:
      return "RDMA_READ_RESPONSE_MIDDLE";
    case Opcode::kReadResponseLast:
      return "RDMA_READ_RESPONSE_LAST";
    case Opcode::kReadResponseOnly:
      return "RDMA_READ_RESPONSE_ONLY";
    case Opcode::kAck:
      return "ACKNOWLEDGE";
    case Opcode::kAtomicAck:
      return "ATOMIC_ACKNOWLEDGE";
    case Opcode::kCompareSwap:
      return "COMPARE_SWAP";
    case Opcode::kFetchAdd:
      return "FETCH_ADD";
    case Opcode::kCnp:
      return "CNP";
  }
  return "?";
}

OpcodeInfo opcode_info(std::uint8_t opcode) {
  using P = Position;
  constexpr bool kPay = true;
  constexpr bool kImm = true;
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kSendFirst:
      return {OpKind::kSend, P::kFirst, 0, kPay, false};
    case Opcode::kSendMiddle:
      return {OpKind::kSend, P::kMiddle, 0, kPay, false};
    case Opcode::kSendLast:
      return {OpKind::kSend, P::kLast, 0, kPay, false};
    case Opcode::kSendLastImm:
      return {OpKind::kSend, P::kLast, ext::kImm, kPay, kImm};
    case Opcode::kSendOnly:
      return {OpKind::kSend, P::kOnly, 0, kPay, false};
    case Opcode::kSendOnlyImm:
      return {OpKind::kSend, P::kOnly, ext::kImm, kPay, kImm};
    case Opcode::kWriteFirst:
      return {OpKind::kWrite, P::kFirst, ext::kReth, kPay, false};
    case Opcode::kWriteMiddle:
      return {OpKind::kWrite, P::kMiddle, 0, kPay, false};
    case Opcode::kWriteLast:
      return {OpKind::kWrite, P::kLast, 0, kPay, false};
    case Opcode::kWriteLastImm:
      return {OpKind::kWrite, P::kLast, ext::kImm, kPay, kImm};
    case Opcode::kWriteOnly:
      return {OpKind::kWrite, P::kOnly, ext::kReth, kPay, false};
    case Opcode::kWriteOnlyImm:
      return {OpKind::kWrite, P::kOnly, ext::kReth | ext::kImm, kPay, kImm};
    case Opcode::kReadRequest:
      return {OpKind::kReadRequest, P::kOnly, ext::kReth, false, false};
    case Opcode::kReadResponseFirst:
      return {OpKind::kReadResponse, P::kFirst, ext::kAeth, kPay, false};
    case Opcode::kReadResponseMiddle:
      return {OpKind::kReadResponse, P::kMiddle, 0, kPay, false};
    case Opcode::kReadResponseLast:
      return {OpKind::kReadResponse, P::kLast, ext::kAeth, kPay, false};
    case Opcode::kReadResponseOnly:
      return {OpKind::kReadResponse, P::kOnly, ext::kAeth, kPay, false};
    case Opcode::kAck:
      return {OpKind::kAck, P::kOnly, ext::kAeth, false, false};
    case Opcode::kAtomicAck:
      return {OpKind::kAtomicAck, P::kOnly, ext::kAeth | ext::kAtomicAck, false, false};
    case Opcode::kCompareSwap:
    case Opcode::kFetchAdd:
      return {OpKind::kAtomic, P::kOnly, ext::kAtomicEth, false, false};
    case Opcode::kCnp:
      return {OpKind::kCnp, P::kOnly, ext::kCnpPad, false, false};
  }
  return {};
}

std::size_t header_size(std::uint8_t headers) {
  std::size_t n = kBthSize;
  if (headers & ext::kReth) n += 16;
  if (headers & ext::kAtomicEth) n += 28;
  if (headers & ext::kAeth) n += 4;
  if (headers & ext::kAtomicAck) n += 8;
  if (headers & ext::kImm) n += 4;
  if (headers & ext::kCnpPad) n += 16;
  return n;
}

bool is_request(OpKind k) {
  return k == OpKind::kSend || k == OpKind::kWrite || k == OpKind::kReadRequest ||
         k == OpKind::kAtomic;
}

Opcode send_opcode(Position position, bool immediate) {
  switch (position) {
    case Position::kFirst:
      return Opcode::kSendFirst;
    case Position::kMiddle:
      return Opcode::kSendMiddle;
    case Position::kLast:
      return immediate ? Opcode::kSendLastImm : Opcode::kSendLast;
    case Position::kOnly:
      return immediate ? Opcode::kSendOnlyImm : Opcode::kSendOnly;
  }
  return Opcode::kSendOnly;
}

Opcode write_opcode(Position position, bool immediate) {
  switch (position) {
    case Position::kFirst:
      return Opcode::kWriteFirst;
    case Position::kMiddle:
      return Opcode::kWriteMiddle;
    case Position::kLast:
      return immediate ? Opcode::kWriteLastImm : Opcode::kWriteLast;
    case Position::kOnly:
      return immediate ? Opcode::kWriteOnlyImm : Opcode::kWriteOnly;
  }
  return Opcode::kWriteOnly;
}

Opcode read_response_opcode(Position position) {
  switch (position) {
    case Position::kFirst:
      return Opcode::kReadResponseFirst;
    case Position::kMiddle:
      return Opcode::kReadResponseMiddle;
    case Position::kLast:
      return Opcode::kReadResponseLast;
    case Position::kOnly:
      return Opcode::kReadResponseOnly;
  }
  return Opcode::kReadResponseOnly;
}

Position position_of(std::uint32_t index, std::uint32_t count) {
  if (count <= 1) return Position::kOnly;
  if (index == 0) return Position::kFirst;
  return index + 1 == count ? Position::kLast : Position::kMiddle;
}

}  // namespace mroce::baseline
