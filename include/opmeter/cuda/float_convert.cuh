#pragma once
// Device-side conversions between fp32 (where opmeter's kernels compute) and the storage types:
// widen() reads exactly; narrow<T>() rounds to nearest even.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace opmeter::cuda {

__device__ inline float widen(float x) { return x; }
__device__ inline float widen(__half x) { return __half2float(x); }
__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ T narrow(float x);
template <>
__device__ inline float narrow<float>(float x) {
  return x;
}
template <>
__device__ inline __half narrow<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 narrow<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

}  // namespace opmeter::cuda
