// The dynamic recipes' own kernels around cuBLASLt's int8 / fp8 GEMM: the activations' rows in
// fp32 (LayerNorm'd for ln_linear, never rounded to 16 bits before quantizing, as the reference),
// their amax per row and over the tensor, the codes rounded as quant::quantize_activations rounds
// them (scale_from_amax, code = RNE(x / scale) correctly rounded), and the
// epilogue scaling the GEMM's result by row and channel scales, adding the bias, activating.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "ops/linear/cuda/quant_act.cuh"
#include "ops/linear/cuda/quant_kernels.hpp"
#include "ops/linear/fp8_scale.hpp"
#include "opmeter/cuda/float_convert.cuh"
#include "opmeter/cuda/reduce.cuh"

namespace opmeter::linear::quant_cuda {
namespace {
using cuda::narrow;
using cuda::widen;

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 16;

unsigned blocks_for(std::int64_t work) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(work, 1, kMaxBlocks));
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    prep_rows_kernel(const T* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                     bool layernorm, std::int64_t M, std::int64_t K, float* __restrict__ xf, float* __restrict__ rowmax) {
  __shared__ float scratch[32];
  for (std::int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const T* row = x + m * K;
    float* out = xf + m * K;
    float mean = 0.f, rstd = 1.f;
    if (layernorm) {
      float s = 0.f;
      for (std::int64_t k = threadIdx.x; k < K; k += blockDim.x) s += widen(row[k]);
      mean = cuda::block_reduce(s, scratch, cuda::SumOp{}, 0.f) / static_cast<float>(K);
      float v = 0.f;
      for (std::int64_t k = threadIdx.x; k < K; k += blockDim.x) {
        const float d = widen(row[k]) - mean;
        v += d * d;
      }
      v = cuda::block_reduce(v, scratch, cuda::SumOp{}, 0.f) / static_cast<float>(K);
      rstd = 1.f / sqrtf(v + tensor::kNormEps);
    }
    float amax = 0.f;
    for (std::int64_t k = threadIdx.x; k < K; k += blockDim.x) {
      const float v = layernorm ? (widen(row[k]) - mean) * rstd * gamma[k] + beta[k] : widen(row[k]);
      out[k] = v;
      amax = fmaxf(amax, fabsf(v));
    }
    amax = cuda::block_reduce(amax, scratch, cuda::MaxOp{}, 0.f);
    if (threadIdx.x == 0) rowmax[m] = amax;
  }
}

// The per-tensor scale: the max of the rows' amax (one block).
__global__ void __launch_bounds__(kThreads) tensor_scale_kernel(const float* __restrict__ rowmax, std::int64_t M,
                                                                 float code_max, float* __restrict__ scale) {
  __shared__ float scratch[32];
  float a = 0.f;
  for (std::int64_t m = threadIdx.x; m < M; m += blockDim.x) a = fmaxf(a, rowmax[m]);
  a = cuda::block_reduce(a, scratch, cuda::MaxOp{}, 0.f);
  if (threadIdx.x == 0) scale[0] = scale_from_amax(a, code_max);
}

template <bool Fp8>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(bool per_tensor, const float* __restrict__ xf, const float* __restrict__ rowmax, std::int64_t M,
                    std::int64_t K, std::uint8_t* __restrict__ codes, float* __restrict__ scales) {
  const float code_max = Fp8 ? 448.0f : 127.0f;
  for (std::int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const float s = per_tensor ? scales[0] : scale_from_amax(rowmax[m], code_max);
    if (!per_tensor && threadIdx.x == 0) scales[m] = s;
    for (std::int64_t k = threadIdx.x; k < K; k += blockDim.x) {
      const float v = __fdiv_rn(xf[m * K + k], s);
      std::uint8_t c;
      if constexpr (Fp8) {
        c = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
      } else {
        const float r = fminf(fmaxf(rintf(v), -127.f), 127.f);
        c = static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<int>(r)));
      }
      codes[m * K + k] = c;
    }
  }
}

template <class T, AccType A>
__global__ void __launch_bounds__(kThreads)
    scale_epilogue_kernel(const void* __restrict__ acc, const float* __restrict__ row_scale,
                          const float* __restrict__ col_scale, const float* __restrict__ bias, tensor::Act act,
                          std::int64_t M, std::int64_t N, T* __restrict__ y) {
  const std::int64_t n = M * N, stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t m = i / N, c = i % N;
    float v;
    if constexpr (A == AccType::s32)
      v = static_cast<float>(static_cast<const std::int32_t*>(acc)[i]);
    else if constexpr (A == AccType::f32)
      v = static_cast<const float*>(acc)[i];
    else
      v = __bfloat162float(static_cast<const __nv_bfloat16*>(acc)[i]);
    if (row_scale) v *= row_scale[m];
    if (col_scale) v *= col_scale[c];
    y[i] = narrow<T>(apply_act(act, v + bias[c]));
  }
}

template <class T>
void scale_epilogue(const void* acc, AccType at, const float* rs, const float* cs, const float* bias, tensor::Act act,
                    std::int64_t M, std::int64_t N, void* y, cudaStream_t s) {
  const unsigned blocks = blocks_for((M * N + kThreads - 1) / kThreads);
  T* out = static_cast<T*>(y);
  switch (at) {
    case AccType::s32: scale_epilogue_kernel<T, AccType::s32><<<blocks, kThreads, 0, s>>>(acc, rs, cs, bias, act, M, N, out); break;
    case AccType::f32: scale_epilogue_kernel<T, AccType::f32><<<blocks, kThreads, 0, s>>>(acc, rs, cs, bias, act, M, N, out); break;
    case AccType::bf16: scale_epilogue_kernel<T, AccType::bf16><<<blocks, kThreads, 0, s>>>(acc, rs, cs, bias, act, M, N, out); break;
  }
}

}  // namespace

void launch_prep_rows(DType d, const void* x, const float* gamma, const float* beta, bool layernorm, std::int64_t M,
                      std::int64_t K, float* xf, float* rowmax, cudaStream_t s) {
  if (M <= 0 || K <= 0) return;
  if (d == DType::bf16)
    prep_rows_kernel<__nv_bfloat16><<<blocks_for(M), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(x), gamma, beta,
                                                                       layernorm, M, K, xf, rowmax);
  else
    prep_rows_kernel<__half><<<blocks_for(M), kThreads, 0, s>>>(static_cast<const __half*>(x), gamma, beta, layernorm, M,
                                                                K, xf, rowmax);
}

void launch_quantize(bool fp8, bool per_tensor, const float* xf, const float* rowmax, std::int64_t M, std::int64_t K,
                     std::uint8_t* codes, float* scales, cudaStream_t s) {
  if (M <= 0 || K <= 0) return;
  if (per_tensor) tensor_scale_kernel<<<1, kThreads, 0, s>>>(rowmax, M, fp8 ? 448.0f : 127.0f, scales);
  if (fp8)
    quantize_kernel<true><<<blocks_for(M), kThreads, 0, s>>>(per_tensor, xf, rowmax, M, K, codes, scales);
  else
    quantize_kernel<false><<<blocks_for(M), kThreads, 0, s>>>(per_tensor, xf, rowmax, M, K, codes, scales);
}

void launch_scale_epilogue(DType d, const void* acc, AccType at, const float* row_scale, const float* col_scale,
                           const float* bias, tensor::Act act, std::int64_t M, std::int64_t N, void* y, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  if (d == DType::bf16)
    scale_epilogue<__nv_bfloat16>(acc, at, row_scale, col_scale, bias, act, M, N, y, s);
  else
    scale_epilogue<__half>(acc, at, row_scale, col_scale, bias, act, M, N, y, s);
}

}  // namespace opmeter::linear::quant_cuda
