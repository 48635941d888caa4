// libFuzzer target: the stand-in librdmacm's side-channel decoder (src/rdmacm/wire.h) on
// an arbitrary byte stream, read message by message as a link reads it. Nothing may
// crash; every message decoded encodes back to exactly the bytes it came from.
#include <cstdint>
#include <span>
#include <vector>

#include "rdmacm/wire.h"

using namespace mroce::rdmacm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  for (;;) {
    Message m;
    std::size_t used = 0;
    if (decode(in, &m, &used) != DecodeResult::kOk) return 0;
    if (used < kHeaderSize || used > in.size()) __builtin_trap();
    std::vector<std::uint8_t> again;
    if (!encode(m, &again) || again.size() != used ||
        !std::equal(again.begin(), again.end(), in.begin())) {
      __builtin_trap();
    }
    in = in.subspan(used);
  }
}
