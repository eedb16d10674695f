// The blocked attention for AVX-512 with AVX512_BF16: as attention_blocked_avx512.cpp, and bf16
// heads take their products in vdpbf16ps (attention_blocked_bf16dot.inc). Flags in CMakeLists.txt.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "ops/attention/attention_blocked.hpp"

#define OPMETER_BLOCKED_BF16_DOT
namespace opmeter::attention::blocked::avx512_bf16 {
constexpr std::size_t kW = 16, kMR = 6, kNV = 4;
#include "ops/attention/attention_blocked.inc"
}  // namespace opmeter::attention::blocked::avx512_bf16
#undef OPMETER_BLOCKED_BF16_DOT

namespace opmeter::attention::blocked {
Kernel avx512_bf16_kernel() { return avx512_bf16::make_kernel("avx512_bf16"); }
}  // namespace opmeter::attention::blocked
