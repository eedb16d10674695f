// One warp per row: a pass with a running max and sum (online softmax, each lane its own, then
// merged across the warp), a second pass writing exp(s - max) / sum. 16-byte loads when rows
// allow (n a multiple of 4), else scalar ones; both coalesced across the warp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "ops/attention/cuda/masked_softmax.hpp"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::attention {
namespace {
constexpr int kRowsPerBlock = 8;  // warps per block
constexpr int kThreads = kRowsPerBlock * 32;

using cuda::narrow;

// Adds x to a running (max, sum of exp(x - max)).
__device__ __forceinline__ void online_add(float& m, float& sum, float x) {
  if (x > m) {
    sum = sum * expf(m - x) + 1.0f;  // m = -inf the first time: expf(-inf) = 0
    m = x;
  } else {
    sum += expf(x - m);
  }
}

// Merges another lane's (max, sum) into this one's.
__device__ __forceinline__ void merge(float& m, float& sum, float m2, float sum2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY) return;  // both empty
  sum = sum * expf(m - top) + sum2 * expf(m2 - top);
  m = top;
}

template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

template <class T>
__global__ void __launch_bounds__(kThreads) masked_softmax(const float* __restrict__ s, T* __restrict__ p,
                                                           std::int64_t rows, int n, bool causal) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int visible = causal ? static_cast<int>(row % n) + 1 : n;  // >= 1: key 0 is always seen
  const float* src = s + row * n;
  T* dst = p + row * n;
  const bool vec = n % 4 == 0;

  float m = -INFINITY, sum = 0.0f;
  if (vec) {
    const auto* src4 = reinterpret_cast<const float4*>(src);
    for (int c = lane; c * 4 < visible; c += 32) {
      const float4 x = src4[c];
      const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (c * 4 + e < visible) online_add(m, sum, xs[e]);
    }
  } else {
    for (int j = lane; j < visible; j += 32) online_add(m, sum, src[j]);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
    const float sum2 = __shfl_xor_sync(0xffffffffu, sum, offset);
    merge(m, sum, m2, sum2);
  }
  const float inv = 1.0f / sum;  // sum >= 1: the max itself contributes exp(0)

  if (vec) {
    const auto* src4 = reinterpret_cast<const float4*>(src);
    auto* dst4 = reinterpret_cast<Four<T>*>(dst);
    for (int c = lane; c * 4 < n; c += 32) {
      Four<T> out;
      if (c * 4 < visible) {
        const float4 x = src4[c];
        const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) out.v[e] = narrow<T>(c * 4 + e < visible ? expf(xs[e] - m) * inv : 0.0f);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) out.v[e] = narrow<T>(0.0f);
      }
      dst4[c] = out;
    }
  } else {
    for (int j = lane; j < n; j += 32) dst[j] = narrow<T>(j < visible ? expf(src[j] - m) * inv : 0.0f);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) mask_future(T* __restrict__ s, std::int64_t rows, int n) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  T* r = s + row * n;
  for (int j = static_cast<int>(row % n) + 1 + lane; j < n; j += 32) r[j] = narrow<T>(-INFINITY);
}

unsigned blocks_for(std::int64_t rows) { return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

void launch_masked_softmax(DType dtype, const float* s, void* p, std::int64_t rows, int n, bool causal,
                           cudaStream_t stream) {
  const unsigned blocks = blocks_for(rows);
  switch (dtype) {
    case DType::fp16: masked_softmax<<<blocks, kThreads, 0, stream>>>(s, static_cast<__half*>(p), rows, n, causal); break;
    case DType::bf16:
      masked_softmax<<<blocks, kThreads, 0, stream>>>(s, static_cast<__nv_bfloat16*>(p), rows, n, causal);
      break;
    default: masked_softmax<<<blocks, kThreads, 0, stream>>>(s, static_cast<float*>(p), rows, n, causal); break;
  }
}

void launch_mask_future_scores(DType dtype, void* s, std::int64_t rows, int n, cudaStream_t stream) {
  const unsigned blocks = blocks_for(rows);
  switch (dtype) {
    case DType::fp16: mask_future<<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(s), rows, n); break;
    case DType::bf16: mask_future<<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(s), rows, n); break;
    default: mask_future<<<blocks, kThreads, 0, stream>>>(static_cast<float*>(s), rows, n); break;
  }
}

}  // namespace opmeter::attention
