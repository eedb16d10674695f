// One warp per row (as masked_softmax.cu): a pass summing P dP over the keys the row sees,
// merged across the warp, then a pass writing dS. Each lane moves 4 consecutive elements at a time
// (dP: 16 bytes) where every row is aligned (n % 4 == 0), single ones otherwise; coalesced across
// the warp; a grid-stride loop over rows (the grid is capped).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "ops/transformer/cuda/softmax_backward.hpp"
#include "opmeter/cuda/vector_access.cuh"

namespace opmeter::transformer {
namespace {
constexpr int kRowsPerBlock = 8;  // warps per block
constexpr int kThreads = kRowsPerBlock * 32;
constexpr std::int64_t kMaxBlocks = 1 << 16;
constexpr int kPack = 4;  // elements per lane and access where rows are aligned

using cuda::load_widened;
using cuda::store_narrowed;

// kVec elements per lane and access: kPack where every row starts aligned (launch), else 1.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) softmax_backward(const T* __restrict__ p, const float* __restrict__ dp,
                                                             T* __restrict__ ds, std::int64_t rows, int n, bool causal,
                                                             float scale) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; row < rows;
       row += step) {  // the whole warp takes the same rows
    const int visible = causal ? static_cast<int>(row % n) + 1 : n;
    const T* pr = p + row * n;
    const float* dpr = dp + row * n;
    T* dsr = ds + row * n;
    float dot = 0.0f;
#pragma unroll 2
    for (int j = lane * kVec; j < visible; j += 32 * kVec) {
      float pv[kVec], dv[kVec];
      load_widened<kVec>(pr + j, pv);
      load_widened<kVec>(dpr + j, dv);
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        if (j + i < visible) dot += pv[i] * dv[i];
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    int j = lane * kVec;
    for (; j < visible; j += 32 * kVec) {
      float pv[kVec], dv[kVec], out[kVec];
      load_widened<kVec>(pr + j, pv);
      load_widened<kVec>(dpr + j, dv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) out[i] = j + i < visible ? pv[i] * (dv[i] - dot) * scale : 0.0f;
      store_narrowed<kVec>(dsr + j, out);
    }
    const float zeros[kVec] = {};
    for (; j < n; j += 32 * kVec) store_narrowed<kVec>(dsr + j, zeros);  // past the causal edge: not read
  }
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T>
void launch(const void* p, const float* dp, void* ds, std::int64_t rows, int n, bool causal, float scale,
            cudaStream_t stream) {
  const auto blocks = std::clamp<std::int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, kMaxBlocks);
  const auto* pt = static_cast<const T*>(p);
  auto* dst = static_cast<T*>(ds);
  // kPack elements a lane: dp's 16 bytes, P's and dS's 8 (16 in fp32); every row aligned when n is
  // a multiple of kPack and the bases are 16-byte aligned.
  if (n % kPack == 0 && aligned_16(p) && aligned_16(dp) && aligned_16(ds))
    softmax_backward<T, kPack><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(pt, dp, dst, rows, n, causal, scale);
  else
    softmax_backward<T, 1><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(pt, dp, dst, rows, n, causal, scale);
}

}  // namespace

void launch_softmax_backward(DType dtype, const void* p, const float* dp, void* ds, std::int64_t rows, int n, bool causal,
                             float scale, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  switch (dtype) {
    case DType::fp16: launch<__half>(p, dp, ds, rows, n, causal, scale, stream); break;
    case DType::bf16: launch<__nv_bfloat16>(p, dp, ds, rows, n, causal, scale, stream); break;
    default: launch<float>(p, dp, ds, rows, n, causal, scale, stream); break;
  }
}

}  // namespace opmeter::transformer
