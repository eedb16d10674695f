#pragma once
// What the kernels on 16-channel blocks share (quant_kernel_amx.cpp, quant_kernel_limbs.cpp): bf16
// widened to fp32, a block's 16 group parameters as fp32, and the copy of a block's finished
// channels into the output. Included only by files compiled with AVX-512 (CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ops/tensor/bf16x16.hpp"

namespace opmeter::linear::block16 {

constexpr std::size_t kChannels = 16;

using tensor::bf16x16;  // 16 bf16 values at `p` as fp32

// 16 group parameters at `p` (bf16 bits or fp32) as fp32.
inline __m512 params(const std::uint8_t* p, bool bf16) { return bf16 ? bf16x16(p) : _mm512_loadu_ps(p); }

// Block jb's rows (out: rows x 16) into c's rows m0 .. m0 + rows - 1, only its channels in
// [j0, j1) (a block is padded past the layer's last channel, and a range may cut it).
inline void copy_channels(const float* out, std::size_t rows, std::size_t jb, std::size_t j0, std::size_t j1, float* c,
                          std::size_t m0, std::size_t ldc) {
  const std::size_t first = std::max(j0, jb * kChannels), last = std::min(j1, jb * kChannels + kChannels);
  for (std::size_t m = 0; m < rows; ++m)
    std::copy(out + m * kChannels + first % kChannels, out + m * kChannels + (last - jb * kChannels), c + (m0 + m) * ldc + first);
}

}  // namespace opmeter::linear::block16
