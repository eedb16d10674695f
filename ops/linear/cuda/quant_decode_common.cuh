#pragma once
// What the two decode kernels of cuda_quant share (quant_weight_only_decode_sm80.cu: bf16 / fp16
// mma on decoded codes; quant_weight_only_limbs_sm80.cu: int8 codes on integer mma): the code
// units' loads, an output's store, and the end of a split of K.
#include <cstdint>

#include "opmeter/cuda/float_convert.cuh"
#include "ops/linear/cuda/quant_act.cuh"
#include "ops/linear/cuda/quant_kernels.hpp"

namespace opmeter::linear::quant_cuda::wo {

// One lane's 16-byte unit of codes, read once: not kept in L1.
__device__ inline uint4 load_unit(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Output (m, c) of a block's split: y with bias and activation where K is not split, else the
// split's fp32 partial (split blockIdx.y).
template <class T>
__device__ inline void store_output(const WeightOnlyArgs& a, std::int64_t m, std::int64_t c, float v) {
  if (a.ksplit == 1) static_cast<T*>(a.y)[m * a.N + c] = cuda::narrow<T>(apply_act(a.act, v + a.bias[c]));
  else a.partial[(static_cast<std::int64_t>(blockIdx.y) * a.M + m) * a.N + c] = v;
}

// Split K: after every block stored its partials, the last split of the tile (blockIdx.x,
// blockIdx.z) to arrive sums them for rows [m0, m0 + rows) and columns [c0, c0 + cols), with bias
// and activation (threadFenceReduction's pattern: every writer fences, then one arrival per
// block; the last block fences again before reading through L2). atomicInc wraps the counter to
// 0 at the last arrival, ready for the next launch (which the stream orders after), and a counter
// ever left wrong recovers in one launch. Every thread of the block calls it.
template <class T>
__device__ inline void sum_splits_if_last(const WeightOnlyArgs& a, std::int64_t m0, int rows, std::int64_t c0,
                                          int cols) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* counter = a.counters + static_cast<std::int64_t>(blockIdx.z) * gridDim.x + blockIdx.x;
    last = atomicInc(counter, static_cast<unsigned>(a.ksplit - 1)) == static_cast<unsigned>(a.ksplit - 1);
    __threadfence();
  }
  __syncthreads();
  if (!last) return;
  T* y = static_cast<T*>(a.y);
  for (int i = static_cast<int>(threadIdx.x); i < rows * cols; i += static_cast<int>(blockDim.x)) {
    const std::int64_t m = m0 + i / cols, c = c0 + i % cols;
    if (c >= a.N) continue;
    // kBatch partials in flight at once (these are L2 round trips, one after another when the
    // compiler unrolled by 4), summed in split order.
    constexpr int kBatch = 16;
    const float* p = a.partial + m * a.N + c;
    const std::int64_t split_stride = a.M * a.N;
    float v = 0.f;
    for (int s0 = 0; s0 < a.ksplit; s0 += kBatch) {
      float part[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) part[u] = s0 + u < a.ksplit ? __ldcg(p + (s0 + u) * split_stride) : 0.f;
#pragma unroll
      for (int u = 0; u < kBatch; ++u) v += part[u];
    }
    y[m * a.N + c] = cuda::narrow<T>(apply_act(a.act, v + a.bias[c]));
  }
}

// The int8 kernel on integer tensor cores (quant_weight_only_limbs_sm80.cu), for a.weights_a.
void launch_decode_limbs(DType d, const WeightOnlyArgs& a, cudaStream_t s);

}  // namespace opmeter::linear::quant_cuda::wo
