// The blocked attention compiled for AVX2: 16 registers, 6 x 2 accumulators (flags in CMakeLists.txt).
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

namespace opmeter::attention::blocked::avx2 {
constexpr std::size_t kW = 8, kMR = 6, kNV = 2;
#include "ops/attention/attention_blocked.inc"
}  // namespace opmeter::attention::blocked::avx2

namespace opmeter::attention::blocked {
Kernel avx2_kernel() { return avx2::make_kernel("avx2"); }
}  // namespace opmeter::attention::blocked
