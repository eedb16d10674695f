// The depthwise plane kernel compiled for the baseline x86-64 ISA (SSE2).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "ops/conv/depthwise_kernel.hpp"

namespace opmeter::conv::base {
#include "ops/conv/depthwise_kernel.inc"
}  // namespace opmeter::conv::base

namespace opmeter::conv {
DepthwisePlaneFn depthwise_plane_base() { return base::plane; }
}  // namespace opmeter::conv
