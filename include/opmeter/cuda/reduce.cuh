#pragma once
// Sums and maxima across the threads of a group: G lanes of a warp (G a power of two up to 32,
// xor shuffles: every lane ends with the same bits) or a whole block. Deterministic: the order of
// the additions depends only on the launch shape, never on timing.
#include <cuda_runtime.h>

#include <cmath>

namespace opmeter::cuda {

struct SumOp {
  template <class V>
  __device__ __forceinline__ V operator()(V a, V b) const { return a + b; }
  // Two sums at once (CUDA defines no float2 +).
  __device__ __forceinline__ float2 operator()(float2 a, float2 b) const { return make_float2(a.x + b.x, a.y + b.y); }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// __shfl_xor_sync over the full warp, float2 as two shuffles.
template <class V>
__device__ __forceinline__ V shfl_xor(V v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float2 shfl_xor(float2 v, int o) { return make_float2(shfl_xor(v.x, o), shfl_xor(v.y, o)); }

// Across groups of G consecutive lanes. Every lane of the warp must call it (full mask).
template <int G, class V, class Op>
__device__ __forceinline__ V group_reduce(V v, Op op) {
  static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G is a power of two up to 32");
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  return v;
}

// Across the block (blockDim.x a multiple of 32, at most 1024): every thread gets the result.
// `scratch` holds 32 values; the first barrier keeps a previous call's readers safe.
template <class V, class Op>
__device__ __forceinline__ V block_reduce(V v, V* scratch, Op op, V identity) {
  v = group_reduce<32>(v, op);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : identity;
  return group_reduce<32>(v, op);
}

// One step of an online softmax over W values f: the running maximum m and the running sum s of
// exp(x - m) take them in (log-sum-exp, softmax's denominator). Start from m = -inf, s = 0.
template <int W>
__device__ __forceinline__ void online_max_sum(const float (&f)[W], float& m, float& s) {
  float cm = f[0];
#pragma unroll
  for (int k = 1; k < W; ++k) cm = fmaxf(cm, f[k]);
  if (cm > m) {
    s *= __expf(m - cm);  // m = -inf at first: exp gives 0, and s is 0 anyway
    m = cm;
  }
#pragma unroll
  for (int k = 0; k < W; ++k) s += __expf(f[k] - m);
}

}  // namespace opmeter::cuda
