// opmeter's CUDA squeeze-excite (squeeze_excite_kernels.hpp). All offsets into x and y are int64.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/squeeze_excite/cuda/squeeze_excite_kernels.hpp"
#include "opmeter/cuda/reduce.cuh"
#include "opmeter/cuda/vector_io.cuh"

namespace opmeter::squeeze_excite {
namespace {
using cuda::kVec16;

constexpr int kMeanThreadsMax = 256;
constexpr int kGateThreads = 256;
constexpr int kScaleThreads = 256;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// One block per plane (gridDim.x = n * c); W elements per access (W > 1: hw % W == 0).
template <class T, int W>
__global__ void __launch_bounds__(kMeanThreadsMax) plane_means(const T* __restrict__ x, float* __restrict__ means,
                                                              std::int64_t hw) {
  __shared__ float scratch[32];
  const std::int64_t plane = blockIdx.x;
  const T* xp = x + plane * hw;
  float s = 0.0f;
  for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * W; i < hw; i += static_cast<std::int64_t>(blockDim.x) * W) {
    float v[W];
    cuda::load_floats<T, W>(xp + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) s += v[k];
  }
  s = cuda::block_reduce(s, scratch, cuda::SumOp{}, 0.0f);
  if (threadIdx.x == 0) means[plane] = s / static_cast<float>(hw);
}

// One block per sample (gridDim.x = n): dynamic shared memory holds c means and r hidden values.
__global__ void __launch_bounds__(kGateThreads) sample_gates(DeviceArgs a) {
  extern __shared__ float smem[];
  float* mean = smem;
  float* hidden = smem + a.c;
  const std::int64_t n = blockIdx.x;
  for (std::int64_t c = threadIdx.x; c < a.c; c += blockDim.x) mean[c] = a.means[n * a.c + c];
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  for (std::int64_t k = warp; k < a.r; k += warps) {  // warp-uniform: every lane takes part in the shuffles
    const float* w = a.w1 + k * a.c;
    float z = 0.0f;
    for (std::int64_t c = lane; c < a.c; c += 32) z = fmaf(w[c], mean[c], z);
    z = cuda::group_reduce<32>(z, cuda::SumOp{}) + a.b1[k];
    if (lane == 0) hidden[k] = a.silu ? z / (1.0f + __expf(-z)) : fmaxf(z, 0.0f);
  }
  __syncthreads();
  for (std::int64_t c = threadIdx.x; c < a.c; c += blockDim.x) {
    const float* w = a.w2 + c * a.r;
    float z = a.b2[c];
    for (std::int64_t k = 0; k < a.r; ++k) z = fmaf(w[k], hidden[k], z);
    a.gates[n * a.c + c] = a.hardsigmoid ? fminf(fmaxf(z + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f) : 1.0f / (1.0f + __expf(-z));
  }
}

// y = x * gate[plane], W elements per access (W > 1: hw % W == 0, so no access spans two planes).
template <class T, int W>
__global__ void __launch_bounds__(kScaleThreads) scale_planes(const T* __restrict__ x, T* __restrict__ y,
                                                             const float* __restrict__ gates, std::int64_t hw,
                                                             std::int64_t vectors) {
  for (std::int64_t v = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = v * W;
    const float g = __ldg(gates + i / hw);
    float f[W];
    cuda::load_floats<T, W>(x + i, f);
#pragma unroll
    for (int k = 0; k < W; ++k) f[k] *= g;
    cuda::store_floats<T, W>(y + i, f);
  }
}

template <class T, int W>
void launch_typed(const DeviceArgs& a, int sms, cudaStream_t s) {
  const std::int64_t planes = a.n * a.c, vectors = planes * a.hw / W;
  const auto mean_threads = static_cast<unsigned>(std::clamp<std::int64_t>((a.hw / W + 31) / 32 * 32, 32, kMeanThreadsMax));
  plane_means<T, W><<<static_cast<unsigned>(planes), mean_threads, 0, s>>>(static_cast<const T*>(a.x), a.means, a.hw);
  check(cudaGetLastError(), "squeeze_excite means kernel");
  sample_gates<<<static_cast<unsigned>(a.n), kGateThreads, gates_shared_bytes(a.c, a.r), s>>>(a);
  check(cudaGetLastError(), "squeeze_excite gates kernel");
  const std::int64_t blocks = std::min<std::int64_t>((vectors + kScaleThreads - 1) / kScaleThreads, std::int64_t{sms} * 16);
  scale_planes<T, W><<<static_cast<unsigned>(std::max<std::int64_t>(blocks, 1)), kScaleThreads, 0, s>>>(
      static_cast<const T*>(a.x), static_cast<T*>(a.y), a.gates, a.hw, vectors);
  check(cudaGetLastError(), "squeeze_excite scale kernel");
}

template <class T>
void launch_type(const DeviceArgs& a, int sms, cudaStream_t s) {
  // Every plane starts 16-byte aligned when a plane is a whole number of 16-byte vectors.
  if (a.hw % kVec16<T> == 0) launch_typed<T, kVec16<T>>(a, sms, s);
  else launch_typed<T, 1>(a, sms, s);
}

}  // namespace

std::size_t gates_shared_bytes(std::int64_t c, std::int64_t r) { return static_cast<std::size_t>(c + r) * sizeof(float); }

void launch_squeeze_excite(DType d, const DeviceArgs& a, int sms, cudaStream_t s) {
  switch (d) {
    case DType::fp32: launch_type<float>(a, sms, s); break;
    case DType::fp16: launch_type<__half>(a, sms, s); break;
    case DType::bf16: launch_type<__nv_bfloat16>(a, sms, s); break;
    default: throw std::runtime_error(fmt::format("squeeze_excite: no CUDA kernel for {}", to_string(d)));
  }
}

}  // namespace opmeter::squeeze_excite
