// Tensor-op kernels compiled for avx2 (see CMakeLists.txt for the flags).
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

namespace opmeter::tensor::avx2 {
#include "ops/tensor/kernels.inc"
}  // namespace opmeter::tensor::avx2

namespace opmeter::tensor {
Kernels avx2_kernels() { return avx2::make_kernels("avx2"); }
}  // namespace opmeter::tensor
