// The blocked attention for CPUs with AMX-BF16: bf16 heads of head_dim a multiple of 32 take both
// products on the tiles (attention_blocked_amx.inc); the rest as attention_blocked_avx512bf16.cpp.
// Flags in CMakeLists.txt.
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
#include "ops/tensor/amx.hpp"
#include "ops/tensor/tile_pack.hpp"

#define OPMETER_BLOCKED_BF16_DOT
#define OPMETER_BLOCKED_AMX
namespace opmeter::attention::blocked::amx_bf16 {
namespace amx = opmeter::amx;
namespace tensor = opmeter::tensor;
constexpr std::size_t kW = 16, kMR = 6, kNV = 4;
#include "ops/attention/attention_blocked.inc"
}  // namespace opmeter::attention::blocked::amx_bf16
#undef OPMETER_BLOCKED_AMX
#undef OPMETER_BLOCKED_BF16_DOT

namespace opmeter::attention::blocked {
Kernel amx_bf16_kernel() { return amx_bf16::make_kernel("amx_bf16"); }
}  // namespace opmeter::attention::blocked
