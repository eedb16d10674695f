// The depthwise plane kernel compiled for avx2 (see CMakeLists.txt for the flags).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "ops/conv/depthwise_kernel.hpp"

namespace opmeter::conv::avx2 {
#include "ops/conv/depthwise_kernel.inc"
}  // namespace opmeter::conv::avx2

namespace opmeter::conv {
DepthwisePlaneFn depthwise_plane_avx2() { return avx2::plane; }
}  // namespace opmeter::conv
