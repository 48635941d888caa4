#include "core/types.h"
#include "core/transport.h"

#include <cstdio>

namespace mroce {

std::string Address::to_string() const {
  char buf[64];
  if (is_ipv4()) {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", bytes[12], bytes[13], bytes[14], bytes[15]);
    return buf;
  }
  std::string s;
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(buf, sizeof buf, "%s%x", i ? ":" : "", bytes[i] << 8 | bytes[i + 1]);
    s += buf;
  }
  return s;
}

const char* to_string(Errc e) {
  switch (e) {
    case Errc::kOk:
      return "ok";
    case Errc::kInvalidArgument:
      return "invalid argument";
    case Errc::kNoResources:
      return "no resources";
    case Errc::kNotFound:
      return "not found";
    case Errc::kInvalidState:
      return "invalid state";
    case Errc::kNotSupported:
      return "not supported";
  }
  return "?";
}

const char* to_string(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess:
      return "success";
    case WcStatus::kLocLenErr:
      return "local length error";
    case WcStatus::kLocQpOpErr:
      return "local QP operation error";
    case WcStatus::kLocProtErr:
      return "local protection error";
    case WcStatus::kWrFlushErr:
      return "work request flushed";
    case WcStatus::kRemInvReqErr:
      return "remote invalid request";
    case WcStatus::kRemAccessErr:
      return "remote access error";
    case WcStatus::kRemOpErr:
      return "remote operation error";
    case WcStatus::kRetryExcErr:
      return "transport retry exceeded";
    case WcStatus::kRnrRetryExcErr:
      return "RNR retry exceeded";
    case WcStatus::kGeneralErr:
      return "general error";
  }
  return "?";
}

const char* to_string(EventKind k) {
  switch (k) {
    case EventKind::kConnEstablished:
      return "connection established";
    case EventKind::kConnFailed:
      return "connection failed";
    case EventKind::kConnClosed:
      return "connection closed";
    case EventKind::kPathFailed:
      return "path failed";
    case EventKind::kPathRecovered:
      return "path recovered";
    case EventKind::kPlaneDown:
      return "plane down";
    case EventKind::kPlaneUp:
      return "plane up";
    case EventKind::kSrqLimitReached:
      return "SRQ limit reached";
  }
  return "?";
}

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kUnknownConn:
      return "unknown_connection";
    case DropReason::kBadToken:
      return "bad_token";
    case DropReason::kStaleGeneration:
      return "stale_generation";
    case DropReason::kOutOfWindow:
      return "out_of_window";
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kBadStream:
      return "bad_stream";
    case DropReason::kBadKey:
      return "bad_key";
    case DropReason::kOutOfRange:
      return "out_of_range";
    case DropReason::kAccessDenied:
      return "access_denied";
    case DropReason::kInvalidRequest:
      return "invalid_request";
    case DropReason::kReceiverNotReady:
      return "receiver_not_ready";
    case DropReason::kNoResources:
      return "no_resources";
    case DropReason::kBadAck:
      return "bad_ack";
    case DropReason::kWrongPeer:
      return "wrong_peer";
    case DropReason::kForgedConnect:
      return "forged_connect";
    case DropReason::kSetupEvicted:
      return "setup_evicted";
    case DropReason::kOldAck:
      return "old_ack";
    case DropReason::kBadQkey:
      return "bad_qkey";
    case DropReason::kCount:
      break;
  }
  return "?";
}

std::uint64_t Counters::total_drops() const {
  std::uint64_t n = 0;
  for (auto d : drops) n += d;
  return n;
}

const char* to_string(PathState s) {
  return s == PathState::kActive ? "active" : "failed";
}

const char* to_string(ConnState s) {
  switch (s) {
    case ConnState::kConnecting:
      return "connecting";
    case ConnState::kAccepting:
      return "accepting";
    case ConnState::kEstablished:
      return "established";
    case ConnState::kClosing:
      return "closing";
    case ConnState::kClosed:
      return "closed";
    case ConnState::kTimeWait:
      return "time_wait";
    case ConnState::kFailed:
      return "failed";
  }
  return "?";
}

const char* to_string(StreamState s) {
  switch (s) {
    case StreamState::kIdle:
      return "idle";
    case StreamState::kConnecting:
      return "connecting";
    case StreamState::kReady:
      return "ready";
    case StreamState::kError:
      return "error";
    case StreamState::kDestroyed:
      return "destroyed";
  }
  return "?";
}

}  // namespace mroce
