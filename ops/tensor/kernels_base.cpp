// Tensor-op kernels compiled for the baseline x86-64 ISA (SSE2) (see CMakeLists.txt for the flags).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor::base {
#include "ops/tensor/kernels.inc"
}  // namespace opmeter::tensor::base

namespace opmeter::tensor {
Kernels base_kernels() { return base::make_kernels("base"); }
}  // namespace opmeter::tensor
