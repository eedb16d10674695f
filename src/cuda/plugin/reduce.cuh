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
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Across groups of G consecutive lanes. Every lane of the warp must call it (full mask).
template <int G, class V, class Op>
__device__ __forceinline__ V group_reduce(V v, Op op) {
  static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G is a power of two up to 32");
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
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

}  // namespace opmeter::cuda
