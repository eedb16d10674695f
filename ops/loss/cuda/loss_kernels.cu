// mse: a grid-stride loop with 16-byte loads of both inputs, kUnroll fp32 accumulators per thread.
// cross_entropy: a row per G lanes (narrow rows), per warp or per block (wide rows), one read of
// the logits with an online max and sum of exponentials per thread, merged across the row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/loss/cuda/loss_kernels.hpp"
#include "opmeter/cuda/reduce.cuh"
#include "opmeter/cuda/vector_io.cuh"

namespace opmeter::loss {
namespace {
using cuda::kVec16;
using cuda::Raw;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;
constexpr int kFinishThreads = 256;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// Writes the block's sum of v (every thread's) to partials[blockIdx.x].
__device__ __forceinline__ void block_partial(float v, float* partials) {
  __shared__ float scratch[32];
  v = cuda::block_reduce(v, scratch, cuda::SumOp{}, 0.0f);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

template <class T>
__global__ void __launch_bounds__(kThreads) mse_partials(LossArgs a) {
  constexpr int W = kVec16<T>;
  const T* p = static_cast<const T*>(a.a);
  const T* t = static_cast<const T*>(a.b);
  const std::int64_t n = a.rows, vectors = n / W, chunk = static_cast<std::int64_t>(kThreads) * kUnroll;
  float acc[kUnroll] = {};
  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * chunk + threadIdx.x; base < vectors;
       base += static_cast<std::int64_t>(gridDim.x) * chunk) {
    Raw<T, W> rp[kUnroll], rt[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = base + static_cast<std::int64_t>(u) * kThreads;
      if (v < vectors) {
        rp[u] = cuda::load_raw<T, W>(p + v * W);
        rt[u] = cuda::load_raw<T, W>(t + v * W);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = base + static_cast<std::int64_t>(u) * kThreads;
      if (v >= vectors) continue;
      float fp[W], ft[W];
      cuda::raw_to_floats<T, W>(rp[u], fp);
      cuda::raw_to_floats<T, W>(rt[u], ft);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float d = fp[k] - ft[k];
        acc[u] = fmaf(d, d, acc[u]);
      }
    }
  }
  const std::int64_t tail = vectors * W + static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (tail < n) {
    const float d = cuda::widen(p[tail]) - cuda::widen(t[tail]);
    acc[0] = fmaf(d, d, acc[0]);
  }
  float sum = 0.0f;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) sum += acc[u];
  block_partial(sum, a.partials);
}

template <int G, class Op>
__device__ __forceinline__ float row_reduce(float v, float* scratch, Op op, float identity) {
  if constexpr (G == 0) return cuda::block_reduce(v, scratch, op, identity);
  else return cuda::group_reduce<G>(v, op);
}

// A row per G lanes (G == 0: per block): logsumexp(row) - row[label] added to the row's first
// lane's sum; then the block's sum as its partial. Loops are block-uniform (see norm_kernels.cu).
template <class T, int W, int G>
__global__ void __launch_bounds__(1024) cross_entropy_partials(LossArgs a) {
  constexpr bool kBlock = G == 0;
  const int lanes = kBlock ? static_cast<int>(blockDim.x) : G;
  constexpr int kG = kBlock ? 1 : G;  // (no division by zero in the branch not taken)
  const int lane = kBlock ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % kG;
  const std::int64_t rows_per_block = kBlock ? 1 : blockDim.x / kG;
  const std::int64_t mine = kBlock ? 0 : threadIdx.x / kG;
  const int h = a.hidden, vectors = h / W, step = lanes * kUnroll;
  const auto* labels = static_cast<const std::int32_t*>(a.b);
  __shared__ float scratch[32];
  float acc = 0.0f;
  for (std::int64_t base = blockIdx.x * rows_per_block; base < a.rows; base += gridDim.x * rows_per_block) {
    const std::int64_t row = base + mine;
    const bool live = row < a.rows;
    const T* xr = static_cast<const T*>(a.a) + (live ? row : 0) * h;
    const int end = live ? vectors : 0;
    float m = -INFINITY, s = 0.0f;
    for (int first = lane; first < end; first += step) {
      Raw<T, W> r[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = first + u * lanes;
        if (i < end) r[u] = cuda::load_raw<T, W>(xr + static_cast<std::int64_t>(i) * W);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = first + u * lanes;
        if (i >= end) continue;
        float f[W];
        cuda::raw_to_floats<T, W>(r[u], f);
        cuda::online_max_sum<W>(f, m, s);
      }
    }
    const float mx = row_reduce<G>(m, scratch, cuda::MaxOp{}, -INFINITY);
    const float sum = row_reduce<G>(m == -INFINITY ? 0.0f : s * __expf(m - mx), scratch, cuda::SumOp{}, 0.0f);
    if (live && lane == 0) {
      const std::int32_t label = labels[row];
      // A label outside the classes makes the loss NaN: the check reports it, nothing reads out of bounds.
      const float target = label >= 0 && label < h ? cuda::widen(xr[label]) : NAN;
      acc += logf(sum) + mx - target;
    }
  }
  block_partial(lane == 0 ? acc : 0.0f, a.partials);
}

// One block: the partials in a fixed order, in fp64, divided by the count.
__global__ void __launch_bounds__(kFinishThreads) finish_mean(const float* __restrict__ partials, unsigned count, double divisor,
                                                             float* __restrict__ out) {
  __shared__ double scratch[32];
  double s = 0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = cuda::block_reduce(s, scratch, cuda::SumOp{}, 0.0);
  if (threadIdx.x == 0) *out = static_cast<float>(s / divisor);
}

int next_pow2(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

void size_grid(LossPlan& p, std::int64_t groups, const cuda::SmInfo& sm) {
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(p.kernel), static_cast<int>(p.threads), 0),
        "occupancy of a loss kernel");
  if (per_sm < 1) throw std::runtime_error(fmt::format("loss kernel of {} threads fits no SM", p.threads));
  p.grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(groups, std::int64_t{sm.sms} * per_sm)));
}

template <class T>
LossPlan plan_mse_typed(std::int64_t n, const cuda::SmInfo& sm) {
  LossPlan p;
  p.kernel = mse_partials<T>;
  p.threads = kThreads;
  p.count = static_cast<double>(n);
  p.shape = fmt::format("grid-stride, {} x 16-byte loads of each input in flight per thread, fp32 partial per block, fp64 final sum",
                        kUnroll);
  size_grid(p, (n / kVec16<T> + kThreads * kUnroll - 1) / (kThreads * kUnroll), sm);
  return p;
}

template <class T, int W>
LossPlan plan_ce_width(std::int64_t rows, int hidden, const cuda::SmInfo& sm, const char* access) {
  const int vectors = hidden / W;
  LossPlan p;
  p.count = static_cast<double>(rows);
  if (vectors <= 32) {
    const int g = next_pow2(vectors);
    switch (g) {
      case 1: p.kernel = cross_entropy_partials<T, W, 1>; break;
      case 2: p.kernel = cross_entropy_partials<T, W, 2>; break;
      case 4: p.kernel = cross_entropy_partials<T, W, 4>; break;
      case 8: p.kernel = cross_entropy_partials<T, W, 8>; break;
      case 16: p.kernel = cross_entropy_partials<T, W, 16>; break;
      default: p.kernel = cross_entropy_partials<T, W, 32>; break;
    }
    p.threads = kThreads;
    p.shape = fmt::format("a row per {} lane{}, {} accesses, online max and sum", g, g == 1 ? "" : "s", access);
    size_grid(p, (rows + kThreads / g - 1) / (kThreads / g), sm);
  } else if (vectors <= 32 * 64) {
    p.kernel = cross_entropy_partials<T, W, 32>;
    p.threads = kThreads;
    p.shape = fmt::format("a row per warp, {} accesses, online max and sum", access);
    size_grid(p, (rows + kThreads / 32 - 1) / (kThreads / 32), sm);
  } else {
    p.kernel = cross_entropy_partials<T, W, 0>;
    p.threads = static_cast<unsigned>(std::min(1024, (vectors / 16 + 31) / 32 * 32));
    p.shape = fmt::format("a row per block of {} threads, {} accesses, online max and sum", p.threads, access);
    size_grid(p, rows, sm);
  }
  p.shape += ", fp32 partial per block, fp64 final sum";
  return p;
}

template <class T>
LossPlan plan_ce_typed(std::int64_t rows, int hidden, const cuda::SmInfo& sm) {
  if (hidden % kVec16<T> == 0) return plan_ce_width<T, kVec16<T>>(rows, hidden, sm, "16-byte");
  return plan_ce_width<T, 1>(rows, hidden, sm, "scalar (rows not 16-byte aligned)");
}

}  // namespace

LossPlan plan_mse(DType d, std::int64_t n, const cuda::SmInfo& sm) {
  if (n < 1) throw std::runtime_error(fmt::format("mse over {} elements", n));
  switch (d) {
    case DType::fp16: return plan_mse_typed<__half>(n, sm);
    case DType::bf16: return plan_mse_typed<__nv_bfloat16>(n, sm);
    default: return plan_mse_typed<float>(n, sm);
  }
}

LossPlan plan_cross_entropy(DType d, std::int64_t rows, int hidden, const cuda::SmInfo& sm) {
  if (rows < 1 || hidden < 1) throw std::runtime_error(fmt::format("cross_entropy over {} rows x {} classes", rows, hidden));
  switch (d) {
    case DType::fp16: return plan_ce_typed<__half>(rows, hidden, sm);
    case DType::bf16: return plan_ce_typed<__nv_bfloat16>(rows, hidden, sm);
    default: return plan_ce_typed<float>(rows, hidden, sm);
  }
}

void launch_loss(const LossPlan& plan, const LossArgs& args, cudaStream_t s) {
  plan.kernel<<<plan.grid, plan.threads, 0, s>>>(args);
  finish_mean<<<1, kFinishThreads, 0, s>>>(args.partials, plan.grid, plan.count, args.out);
}

}  // namespace opmeter::loss
