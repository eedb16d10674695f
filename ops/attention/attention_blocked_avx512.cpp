// The blocked attention compiled for AVX-512: 32 registers, 6 x 4 accumulators (flags in CMakeLists.txt).
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

namespace opmeter::attention::blocked::avx512 {
constexpr std::size_t kW = 16, kMR = 6, kNV = 4;
#include "ops/attention/attention_blocked.inc"
}  // namespace opmeter::attention::blocked::avx512

namespace opmeter::attention::blocked {
Kernel avx512_kernel() { return avx512::make_kernel("avx512"); }
}  // namespace opmeter::attention::blocked
