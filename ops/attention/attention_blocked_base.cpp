// The blocked attention compiled for SSE2 (any x86-64): 16 registers, 6 x 2 accumulators (flags in CMakeLists.txt).
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

namespace opmeter::attention::blocked::base {
constexpr std::size_t kW = 4, kMR = 6, kNV = 2;
#include "ops/attention/attention_blocked.inc"
}  // namespace opmeter::attention::blocked::base

namespace opmeter::attention::blocked {
Kernel base_kernel() { return base::make_kernel("base"); }
}  // namespace opmeter::attention::blocked
