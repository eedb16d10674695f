// The depthwise plane kernel compiled for avx512 (see CMakeLists.txt for the flags).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "ops/conv/depthwise_kernel.hpp"

namespace opmeter::conv::avx512 {
#include "ops/conv/depthwise_kernel.inc"
}  // namespace opmeter::conv::avx512

namespace opmeter::conv {
DepthwisePlaneFn depthwise_plane_avx512() { return avx512::plane; }
}  // namespace opmeter::conv
