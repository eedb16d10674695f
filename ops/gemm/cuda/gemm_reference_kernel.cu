// The simplest tiled GEMM: 16x16 tiles through shared memory. Slow on purpose-free hardware
// paths (no tensor cores), so its answer is independent of cuBLAS.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/gemm/cuda/gemm_reference_kernel.hpp"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::gemm {
namespace {
constexpr int kTile = 16;

using cuda::narrow;
using cuda::widen;

template <class T>
__global__ void tiled_gemm(const T* a, const T* b, T* c, std::int64_t M, std::int64_t N, std::int64_t K) {
  __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];
  const std::int64_t row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0;
  for (std::int64_t k0 = 0; k0 < K; k0 += kTile) {
    std::int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = row < M && ka < K ? widen(a[row * K + ka]) : 0.f;
    // B is N x K: thread (y, x) loads B[col][k0 + y].
    bs[threadIdx.y][threadIdx.x] = col < N && kb < K ? widen(b[col * K + kb]) : 0.f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) c[row * N + col] = narrow<T>(acc);
}

template <class T>
void launch(const void* a, const void* b, void* c, std::int64_t M, std::int64_t N, std::int64_t K, cudaStream_t s) {
  dim3 block(kTile, kTile), grid(static_cast<unsigned>((N + kTile - 1) / kTile), static_cast<unsigned>((M + kTile - 1) / kTile));
  tiled_gemm<T><<<grid, block, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), M, N, K);
}

}  // namespace

void launch_reference_gemm(DType d, const void* a, const void* b, void* c, std::int64_t M, std::int64_t N, std::int64_t K,
                           cudaStream_t s) {
  switch (d) {
    case DType::fp16: launch<__half>(a, b, c, M, N, K, s); break;
    case DType::bf16: launch<__nv_bfloat16>(a, b, c, M, N, K, s); break;
    default: launch<float>(a, b, c, M, N, K, s); break;
  }
}

}  // namespace opmeter::gemm
