#pragma once
// Loads and stores of W consecutive elements as fp32 values: W elements of 16 bytes in total go
// through one 16-byte vector access (4 floats, 8 halves), W == 1 is a scalar access. A W-vector
// access needs its address 16-byte aligned: callers take W == 1 for rows that do not start so.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::cuda {

// Elements of T in one 16-byte vector.
template <class T>
constexpr int kVec16 = static_cast<int>(16 / sizeof(T));

// The raw storage of W elements: one uint4, or one T.
template <class T, int W>
using Raw = std::conditional_t<W == 1, T, uint4>;

template <class T, int W>
__device__ __forceinline__ Raw<T, W> load_raw(const T* p) {
  static_assert(W == 1 || W == kVec16<T>, "W is 1 or one 16-byte vector");
  return *reinterpret_cast<const Raw<T, W>*>(p);
}

template <class T, int W>
__device__ __forceinline__ void raw_to_floats(const Raw<T, W>& r, float* v) {
  const T* e = reinterpret_cast<const T*>(&r);
#pragma unroll
  for (int k = 0; k < W; ++k) v[k] = widen(e[k]);
}

template <class T, int W>
__device__ __forceinline__ void load_floats(const T* p, float* v) {
  raw_to_floats<T, W>(load_raw<T, W>(p), v);
}

template <class T, int W>
__device__ __forceinline__ void store_floats(T* p, const float* v) {
  Raw<T, W> r;
  T* e = reinterpret_cast<T*>(&r);
#pragma unroll
  for (int k = 0; k < W; ++k) e[k] = narrow<T>(v[k]);
  *reinterpret_cast<Raw<T, W>*>(p) = r;
}

// W fp32 parameters (gamma, beta, ...) at p: float4 loads when W is a multiple of 4 (p then is
// 16-byte aligned: a multiple of W floats from a cudaMalloc'd start), else scalar loads.
template <int W>
__device__ __forceinline__ void load_params(const float* __restrict__ p, float* v) {
  if constexpr (W % 4 == 0) {
#pragma unroll
    for (int k = 0; k < W; k += 4) {
      const float4 q = __ldg(reinterpret_cast<const float4*>(p + k));
      v[k] = q.x, v[k + 1] = q.y, v[k + 2] = q.z, v[k + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = __ldg(p + k);
  }
}

}  // namespace opmeter::cuda
