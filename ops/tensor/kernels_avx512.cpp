// Tensor-op kernels compiled for avx512 (see CMakeLists.txt for the flags).
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

namespace opmeter::tensor::avx512 {
#include "ops/tensor/kernels.inc"
}  // namespace opmeter::tensor::avx512

namespace opmeter::tensor {
Kernels avx512_kernels() { return avx512::make_kernels("avx512"); }
}  // namespace opmeter::tensor
