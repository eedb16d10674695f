// LayerNorm's training forward and backward: one block per row for the row statistics; for dx a
// warp or a block per row with 16-byte accesses where aligned;
// dgamma and dbeta in two stages over (column tile x row slab), layernorm_grad_partition.hpp
// (deterministic: no atomics). fp32 math, one rounding to the storage type per output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "ops/linear/cuda/layernorm_train_kernel.hpp"
#include "ops/linear/layernorm_grad_partition.hpp"
#include "opmeter/cuda/reduce.cuh"
#include "opmeter/cuda/vector_access.cuh"

namespace opmeter::linear {
namespace {
using cuda::load_floats;
using cuda::load_widened;
using cuda::narrow;
using cuda::store_narrowed;
using cuda::widen;

constexpr int kThreads = 256;
using Grad = LayerNormGradPartition;
constexpr int kGradThreads = Grad::kTileColumns * Grad::kSlabLanes;
constexpr float kEps = 1e-5f;  // ops/tensor/kernels.hpp kNormEps

// Sum of v over the block (kThreads threads); every thread gets it. shared: 32 floats.
__device__ float block_sum(float v, float* shared) { return cuda::block_reduce(v, shared, cuda::SumOp{}, 0.0f); }

template <class T>
__global__ void forward_kernel(const T* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                               float* __restrict__ mean, float* __restrict__ rstd, T* __restrict__ xhat, std::int64_t rows,
                               std::int64_t h) {
  __shared__ float shared[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * h;
    float s = 0;
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads) s += widen(row[k]);
    const float m = block_sum(s, shared) / float(h);
    float v = 0;
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads) {
      const float d = widen(row[k]) - m;
      v += d * d;
    }
    const float rs = rsqrtf(block_sum(v, shared) / float(h) + kEps);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads)
      xhat[r * h + k] = narrow<T>((widen(row[k]) - m) * rs * gamma[k] + beta[k]);
  }
}

// Sums of v over the kRowThreads threads sharing a row (a warp, or the whole block); every thread
// of the row gets them. kRowThreads == kThreads: the whole block calls it (one row at a time);
// shared: 32 float2.
template <int kRowThreads>
__device__ float2 row_sum2(float2 v, float2* shared) {
  static_assert(kRowThreads == 32 || kRowThreads == kThreads);
  if constexpr (kRowThreads == 32) return cuda::group_reduce<32>(v, cuda::SumOp{});
  else return cuda::block_reduce(v, shared, cuda::SumOp{}, make_float2(0.0f, 0.0f));
}

// dx: kRowThreads threads per row (layernorm_row_threads), kVec elements per access
// (layernorm_vector_elems); a pass for the two row sums, a pass writing dx.
template <class T, int kRowThreads, int kVec>
__global__ void __launch_bounds__(kThreads)
    dx_kernel(const T* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ mean,
              const float* __restrict__ rstd, const T* __restrict__ dxhat, T* __restrict__ dx, std::int64_t rows,
              std::int64_t h) {
  constexpr int kRowsPerBlock = kThreads / kRowThreads;
  __shared__ float2 shared[32];
  const int lane = static_cast<int>(threadIdx.x) % kRowThreads;
  const std::int64_t packs = h / kVec;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock;
  // kRowThreads == kThreads: r is the block's; 32: the warp's (no block barrier then).
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kRowThreads; r < rows;
       r += step) {
    const float m = mean[r], rs = rstd[r];
    const T* xr = x + r * h;
    const T* dr = dxhat + r * h;
    float2 sums{0.0f, 0.0f};  // sum g dxhat, sum g dxhat xn
    for (std::int64_t c = lane; c < packs; c += kRowThreads) {
      float xv[kVec], dv[kVec], gv[kVec];
      load_widened<kVec>(xr + c * kVec, xv);
      load_widened<kVec>(dr + c * kVec, dv);
      load_floats<kVec>(gamma + c * kVec, gv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const float gd = gv[i] * dv[i];
        sums.x += gd;
        sums.y += gd * (xv[i] - m) * rs;
      }
    }
    sums = row_sum2<kRowThreads>(sums, shared);
    const float a = sums.x / float(h), axn = sums.y / float(h);
    for (std::int64_t c = lane; c < packs; c += kRowThreads) {
      float xv[kVec], dv[kVec], gv[kVec], out[kVec];
      load_widened<kVec>(xr + c * kVec, xv);
      load_widened<kVec>(dr + c * kVec, dv);
      load_floats<kVec>(gamma + c * kVec, gv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) out[i] = rs * (gv[i] * dv[i] - a - (xv[i] - m) * rs * axn);
      store_narrowed<kVec>(dx + r * h + c * kVec, out);
    }
  }
}

// dgamma and dbeta, stage 1: block (tile, slab) of kTileColumns x kSlabLanes threads; each thread
// sums its column over every kSlabLanes-th row of the slab (a warp reads a row's tile: coalesced),
// then lane_y 0 adds the kSlabLanes sums in order into the slab's fp32 partial.
template <class T>
__global__ void __launch_bounds__(kGradThreads)
    dgamma_dbeta_partials(const T* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
                          const T* __restrict__ dxhat, float* __restrict__ partial_g, float* __restrict__ partial_b,
                          LayerNormGradPartition p) {
  __shared__ float shared_g[Grad::kSlabLanes][Grad::kTileColumns], shared_b[Grad::kSlabLanes][Grad::kTileColumns];
  const std::int64_t h = p.hidden;
  const std::int64_t k = p.column(blockIdx.x, threadIdx.x);
  const std::int64_t end = p.slab_end(blockIdx.y);
  float g = 0, b = 0;
  if (k < h) {
#pragma unroll 4
    for (std::int64_t r = p.slab_begin(blockIdx.y) + threadIdx.y; r < end; r += Grad::kSlabLanes) {
      const float d = widen(dxhat[r * h + k]);
      g += d * (widen(x[r * h + k]) - mean[r]) * rstd[r];
      b += d;
    }
  }
  shared_g[threadIdx.y][threadIdx.x] = g;
  shared_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && k < h) {
    float tg = 0, tb = 0;
#pragma unroll
    for (int lane = 0; lane < Grad::kSlabLanes; ++lane) {
      tg += shared_g[lane][threadIdx.x];
      tb += shared_b[lane][threadIdx.x];
    }
    partial_g[static_cast<std::int64_t>(blockIdx.y) * h + k] = tg;
    partial_b[static_cast<std::int64_t>(blockIdx.y) * h + k] = tb;
  }
}

// Stage 2: one thread per column adds its slabs' partials in order; one rounding per output.
template <class T>
__global__ void dgamma_dbeta_sum(const float* __restrict__ partial_g, const float* __restrict__ partial_b,
                                 T* __restrict__ dgamma, T* __restrict__ dbeta, std::int64_t slabs, std::int64_t h) {
  const std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= h) return;
  float g = 0, b = 0;
#pragma unroll 8
  for (std::int64_t slab = 0; slab < slabs; ++slab) {
    g += partial_g[slab * h + k];
    b += partial_b[slab * h + k];
  }
  dgamma[k] = narrow<T>(g);
  dbeta[k] = narrow<T>(b);
}

unsigned row_blocks(std::int64_t rows) { return static_cast<unsigned>(std::min<std::int64_t>(1 << 16, std::max<std::int64_t>(1, rows))); }

template <class T>
void forward(const LayerNormTrain& p, void* xhat, cudaStream_t s) {
  forward_kernel<T><<<row_blocks(p.rows), kThreads, 0, s>>>(static_cast<const T*>(p.x), p.gamma, p.beta, p.mean, p.rstd,
                                                             static_cast<T*>(xhat), p.rows, p.hidden);
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T, int kRowThreads, int kVec>
void launch_dx(const LayerNormTrain& p, const T* dxhat, T* dx, cudaStream_t s) {
  constexpr std::int64_t kRowsPerBlock = kThreads / kRowThreads;
  const auto blocks = std::clamp<std::int64_t>((p.rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, 1 << 16);
  dx_kernel<T, kRowThreads, kVec><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      static_cast<const T*>(p.x), p.gamma, p.mean, p.rstd, dxhat, dx, p.rows, p.hidden);
}

template <class T>
void launch_dx(const LayerNormTrain& p, const T* dxhat, T* dx, cudaStream_t s) {
  constexpr int kPack = 16 / sizeof(T);
  const bool aligned = aligned_16(p.x) && aligned_16(p.gamma) && aligned_16(dxhat) && aligned_16(dx);
  const bool vec = layernorm_vector_elems(p.hidden, sizeof(T), aligned) == kPack;
  if (layernorm_row_threads(p.hidden, kThreads) == 32)
    vec ? launch_dx<T, 32, kPack>(p, dxhat, dx, s) : launch_dx<T, 32, 1>(p, dxhat, dx, s);
  else
    vec ? launch_dx<T, kThreads, kPack>(p, dxhat, dx, s) : launch_dx<T, kThreads, 1>(p, dxhat, dx, s);
}

template <class T>
void backward(const LayerNormTrain& p, const void* dxhat, void* dx, void* dgamma, void* dbeta, void* workspace,
              cudaStream_t s) {
  const auto* x = static_cast<const T*>(p.x);
  const auto* d = static_cast<const T*>(dxhat);
  launch_dx<T>(p, d, static_cast<T*>(dx), s);
  const LayerNormGradPartition g = layernorm_grad_partition(p.rows, p.hidden);
  auto* partial_g = static_cast<float*>(workspace);
  float* partial_b = partial_g + g.slabs * g.hidden;
  dgamma_dbeta_partials<T><<<dim3(static_cast<unsigned>(g.tiles), static_cast<unsigned>(g.slabs)),
                             dim3(Grad::kTileColumns, Grad::kSlabLanes), 0, s>>>(x, p.mean, p.rstd, d, partial_g, partial_b, g);
  const auto sum_blocks = static_cast<unsigned>((g.hidden + kThreads - 1) / kThreads);
  dgamma_dbeta_sum<T><<<sum_blocks, kThreads, 0, s>>>(partial_g, partial_b, static_cast<T*>(dgamma), static_cast<T*>(dbeta),
                                                       g.slabs, g.hidden);
}
}  // namespace

void launch_layernorm_forward(DType d, const LayerNormTrain& p, void* xhat, cudaStream_t s) {
  if (p.rows <= 0 || p.hidden <= 0) return;
  switch (d) {
    case DType::fp16: forward<__half>(p, xhat, s); break;
    case DType::bf16: forward<__nv_bfloat16>(p, xhat, s); break;
    default: forward<float>(p, xhat, s); break;
  }
}

void launch_layernorm_backward(DType d, const LayerNormTrain& p, const void* dxhat, void* dx, void* dgamma, void* dbeta,
                               void* workspace, cudaStream_t s) {
  if (p.rows <= 0 || p.hidden <= 0) return;
  switch (d) {
    case DType::fp16: backward<__half>(p, dxhat, dx, dgamma, dbeta, workspace, s); break;
    case DType::bf16: backward<__nv_bfloat16>(p, dxhat, dx, dgamma, dbeta, workspace, s); break;
    default: backward<float>(p, dxhat, dx, dgamma, dbeta, workspace, s); break;
  }
}

}  // namespace opmeter::linear
