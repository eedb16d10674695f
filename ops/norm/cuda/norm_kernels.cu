// Row normalizations (layernorm, rmsnorm, softmax) and BatchNorm inference. See norm_kernels.hpp
// for the kernel shapes. Statistics are fp32: layernorm's variance from the row in registers is
// the exact two-pass form; streamed (wide rows) it is the shifted sum of squares, shifted by the
// row's first element so that a large mean does not cancel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/norm/cuda/norm_kernels.hpp"
#include "ops/tensor/kernels.hpp"
#include "opmeter/cuda/reduce.cuh"
#include "opmeter/cuda/vector_io.cuh"

namespace opmeter::norm {
namespace {
using cuda::kVec16;
using cuda::Raw;

constexpr int kGroupBlock = 256;   // threads of a block of row groups
// Threads of a block that holds one row in registers: at most 512, so that a thread may have 128
// registers (32 values, gamma and beta without spilling).
constexpr int kRowBlockMax = 512;
constexpr int kWideThreads = 1024;
constexpr int kWideUnroll = 4;     // vectors in flight per thread in the wide kernel
constexpr float kEps = tensor::kNormEps;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// A sum or maximum across the threads of one row: G lanes, or the whole block (G == 0).
template <int G, class Op>
__device__ __forceinline__ float row_reduce(float v, float* scratch, Op op, float identity) {
  if constexpr (G == 0) return cuda::block_reduce(v, scratch, op, identity);
  else return cuda::group_reduce<G>(v, op);
}

// A row per G lanes (G = 0: per block), L accesses of W elements per thread, the row in registers:
// one read, one write. Loops are block-uniform (rows of the block's last step that do not exist
// still take part in the shuffles and barriers, masked).
template <RowOp Op, class T, int W, int G, int L>
__global__ void __launch_bounds__(G == 0 ? kRowBlockMax : kGroupBlock) rows_in_registers(RowArgs a) {
  constexpr bool kBlock = G == 0;
  const int lanes = kBlock ? static_cast<int>(blockDim.x) : G;
  constexpr int kG = kBlock ? 1 : G;  // (no division by zero in the branch not taken)
  const int lane = kBlock ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % kG;
  const std::int64_t rows_per_block = kBlock ? 1 : blockDim.x / kG;
  const std::int64_t mine = kBlock ? 0 : threadIdx.x / kG;
  const int h = a.hidden;
  const float inv_h = 1.0f / static_cast<float>(h);
  __shared__ float scratch[32];
  for (std::int64_t base = blockIdx.x * rows_per_block; base < a.rows; base += gridDim.x * rows_per_block) {
    const std::int64_t row = base + mine;
    const bool live = row < a.rows;
    const T* xr = static_cast<const T*>(a.x) + (live ? row : 0) * h;
    T* yr = static_cast<T*>(a.y) + (live ? row : 0) * h;
    float v[L * W];
    bool ok[L];
#pragma unroll
    for (int j = 0; j < L; ++j) {
      const int col = (j * lanes + lane) * W;
      ok[j] = live && col < h;
      if (ok[j]) cuda::load_floats<T, W>(xr + col, v + j * W);
      else
#pragma unroll
        for (int k = 0; k < W; ++k) v[j * W + k] = 0.0f;
    }
    float scale_a = 0.0f, scale_b = 0.0f;  // layernorm: mean, rstd; rmsnorm: rrms; softmax: max, 1/sum
    if constexpr (Op == RowOp::layernorm) {
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < L * W; ++i) s += v[i];
      const float mean = row_reduce<G>(s, scratch, cuda::SumOp{}, 0.0f) * inv_h;
      float q = 0.0f;
#pragma unroll
      for (int j = 0; j < L; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float d = v[j * W + k] - mean;
          q += ok[j] ? d * d : 0.0f;
        }
      scale_a = mean;
      scale_b = rsqrtf(row_reduce<G>(q, scratch, cuda::SumOp{}, 0.0f) * inv_h + kEps);
    } else if constexpr (Op == RowOp::rmsnorm) {
      float q = 0.0f;
#pragma unroll
      for (int i = 0; i < L * W; ++i) q = fmaf(v[i], v[i], q);
      scale_a = rsqrtf(row_reduce<G>(q, scratch, cuda::SumOp{}, 0.0f) * inv_h + kEps);
    } else {
      float m = -INFINITY;
#pragma unroll
      for (int j = 0; j < L; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) m = ok[j] ? fmaxf(m, v[j * W + k]) : m;
      const float mx = row_reduce<G>(m, scratch, cuda::MaxOp{}, -INFINITY);
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < L; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          v[j * W + k] = ok[j] ? __expf(v[j * W + k] - mx) : 0.0f;
          s += v[j * W + k];
        }
      scale_b = 1.0f / row_reduce<G>(s, scratch, cuda::SumOp{}, 0.0f);
    }
#pragma unroll
    for (int j = 0; j < L; ++j) {
      if (!ok[j]) continue;
      const int col = (j * lanes + lane) * W;
      float o[W];
      if constexpr (Op == RowOp::layernorm) {
        float g[W], b[W];
        cuda::load_params<W>(a.gamma + col, g);
        cuda::load_params<W>(a.beta + col, b);
#pragma unroll
        for (int k = 0; k < W; ++k) o[k] = fmaf((v[j * W + k] - scale_a) * scale_b, g[k], b[k]);
      } else if constexpr (Op == RowOp::rmsnorm) {
        float g[W];
        cuda::load_params<W>(a.gamma + col, g);
#pragma unroll
        for (int k = 0; k < W; ++k) o[k] = v[j * W + k] * scale_a * g[k];
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) o[k] = v[j * W + k] * scale_b;
      }
      cuda::store_floats<T, W>(yr + col, o);
    }
  }
}

// A row per block of kWideThreads, streamed: pass 1 reads the row for its statistics and keeps
// its first a.cached_vectors vectors in shared memory, pass 2 writes the output from those and
// from a second read of the rest. Each thread reads back only the slots it wrote: no barrier
// between the passes beyond the reductions'.
template <RowOp Op, class T, int W>
__global__ void __launch_bounds__(kWideThreads) rows_wide(RowArgs a) {
  extern __shared__ uint4 dynamic_smem[];
  auto* cache = reinterpret_cast<Raw<T, W>*>(dynamic_smem);
  __shared__ float scratch[32];
  const int h = a.hidden, vectors = h / W, step = static_cast<int>(blockDim.x) * kWideUnroll;
  const float inv_h = 1.0f / static_cast<float>(h);
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(a.x) + row * h;
    T* yr = static_cast<T*>(a.y) + row * h;
    const float shift = Op == RowOp::layernorm ? cuda::widen(xr[0]) : 0.0f;
    float s0 = Op == RowOp::softmax ? -INFINITY : 0.0f, s1 = 0.0f;
    for (int base = static_cast<int>(threadIdx.x); base < vectors; base += step) {
      Raw<T, W> r[kWideUnroll];
#pragma unroll
      for (int u = 0; u < kWideUnroll; ++u) {
        const int i = base + u * static_cast<int>(blockDim.x);
        if (i < vectors) r[u] = cuda::load_raw<T, W>(xr + static_cast<std::int64_t>(i) * W);
      }
#pragma unroll
      for (int u = 0; u < kWideUnroll; ++u) {
        const int i = base + u * static_cast<int>(blockDim.x);
        if (i >= vectors) continue;
        if (i < a.cached_vectors) cache[i] = r[u];
        float f[W];
        cuda::raw_to_floats<T, W>(r[u], f);
        if constexpr (Op == RowOp::layernorm) {
#pragma unroll
          for (int k = 0; k < W; ++k) {
            const float d = f[k] - shift;
            s0 += d;
            s1 = fmaf(d, d, s1);
          }
        } else if constexpr (Op == RowOp::rmsnorm) {
#pragma unroll
          for (int k = 0; k < W; ++k) s0 = fmaf(f[k], f[k], s0);
        } else {
          cuda::online_max_sum<W>(f, s0, s1);  // softmax: s0 the running max, s1 the sum
        }
      }
    }
    float scale_a = 0.0f, scale_b = 0.0f;
    if constexpr (Op == RowOp::layernorm) {
      const float d = cuda::block_reduce(s0, scratch, cuda::SumOp{}, 0.0f) * inv_h;
      const float sq = cuda::block_reduce(s1, scratch, cuda::SumOp{}, 0.0f) * inv_h;
      scale_a = shift + d;
      scale_b = rsqrtf(fmaxf(sq - d * d, 0.0f) + kEps);
    } else if constexpr (Op == RowOp::rmsnorm) {
      scale_a = rsqrtf(cuda::block_reduce(s0, scratch, cuda::SumOp{}, 0.0f) * inv_h + kEps);
    } else {
      const float mx = cuda::block_reduce(s0, scratch, cuda::MaxOp{}, -INFINITY);
      const float mine = s0 == -INFINITY ? 0.0f : s1 * __expf(s0 - mx);
      scale_a = mx;
      scale_b = 1.0f / cuda::block_reduce(mine, scratch, cuda::SumOp{}, 0.0f);
    }
    for (int base = static_cast<int>(threadIdx.x); base < vectors; base += step) {
      Raw<T, W> r[kWideUnroll];
#pragma unroll
      for (int u = 0; u < kWideUnroll; ++u) {
        const int i = base + u * static_cast<int>(blockDim.x);
        if (i < vectors) r[u] = i < a.cached_vectors ? cache[i] : cuda::load_raw<T, W>(xr + static_cast<std::int64_t>(i) * W);
      }
#pragma unroll
      for (int u = 0; u < kWideUnroll; ++u) {
        const int i = base + u * static_cast<int>(blockDim.x);
        if (i >= vectors) continue;
        const int col = i * W;
        float f[W], o[W];
        cuda::raw_to_floats<T, W>(r[u], f);
        if constexpr (Op == RowOp::layernorm) {
          float g[W], b[W];
          cuda::load_params<W>(a.gamma + col, g);
          cuda::load_params<W>(a.beta + col, b);
#pragma unroll
          for (int k = 0; k < W; ++k) o[k] = fmaf((f[k] - scale_a) * scale_b, g[k], b[k]);
        } else if constexpr (Op == RowOp::rmsnorm) {
          float g[W];
          cuda::load_params<W>(a.gamma + col, g);
#pragma unroll
          for (int k = 0; k < W; ++k) o[k] = f[k] * scale_a * g[k];
        } else {
#pragma unroll
          for (int k = 0; k < W; ++k) o[k] = __expf(f[k] - scale_a) * scale_b;
        }
        cuda::store_floats<T, W>(yr + col, o);
      }
    }
  }
}

int next_pow2(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// Grid: as many blocks as fit on the GPU at once (each loops over further rows), no more than
// there are row groups.
void size_grid(RowPlan& p, std::int64_t groups, const cuda::SmInfo& sm) {
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(p.kernel),
                                                      static_cast<int>(p.threads), p.smem),
        "occupancy of a row kernel");
  if (per_sm < 1) throw std::runtime_error(fmt::format("row kernel of {} threads and {} B shared memory fits no SM", p.threads, p.smem));
  p.grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(groups, std::int64_t{sm.sms} * per_sm)));
}

template <RowOp Op, class T, int W, int G>
void pick_group(RowPlan& p, int loads) {
  constexpr int kMax = std::min(8, 32 / W);  // at most 32 values per thread in registers
  if constexpr (kMax >= 8) if (loads == 8) { p.kernel = rows_in_registers<Op, T, W, G, 8>; return; }
  if constexpr (kMax >= 4) if (loads == 4) { p.kernel = rows_in_registers<Op, T, W, G, 4>; return; }
  if constexpr (kMax >= 2) if (loads == 2) { p.kernel = rows_in_registers<Op, T, W, G, 2>; return; }
  p.kernel = rows_in_registers<Op, T, W, G, 1>;
}

template <RowOp Op, class T, int W>
RowPlan plan_width(std::int64_t rows, int hidden, const cuda::SmInfo& sm, const char* access) {
  constexpr int kMaxLoads = std::min(8, 32 / W);
  const int vectors = hidden / W;
  RowPlan p;
  if (vectors <= 32) {
    const int g = next_pow2(vectors);
    switch (g) {
      case 1: p.kernel = rows_in_registers<Op, T, W, 1, 1>; break;
      case 2: p.kernel = rows_in_registers<Op, T, W, 2, 1>; break;
      case 4: p.kernel = rows_in_registers<Op, T, W, 4, 1>; break;
      case 8: p.kernel = rows_in_registers<Op, T, W, 8, 1>; break;
      case 16: p.kernel = rows_in_registers<Op, T, W, 16, 1>; break;
      default: p.kernel = rows_in_registers<Op, T, W, 32, 1>; break;
    }
    p.threads = kGroupBlock;
    p.shape = fmt::format("a row per {} lane{}, {} accesses, row in registers", g, g == 1 ? "" : "s", access);
    size_grid(p, (rows + kGroupBlock / g - 1) / (kGroupBlock / g), sm);
  } else if (vectors <= 32 * kMaxLoads) {
    const int loads = next_pow2((vectors + 31) / 32);
    pick_group<Op, T, W, 32>(p, loads);
    p.threads = kGroupBlock;
    p.shape = fmt::format("a row per warp, {} {} accesses per lane, row in registers", loads, access);
    size_grid(p, (rows + kGroupBlock / 32 - 1) / (kGroupBlock / 32), sm);
  } else if (vectors <= kRowBlockMax * kMaxLoads) {
    p.kernel = rows_in_registers<Op, T, W, 0, kMaxLoads>;
    p.threads = static_cast<unsigned>((vectors + kMaxLoads - 1) / kMaxLoads + 31) / 32 * 32;
    p.shape = fmt::format("a row per block of {} threads, {} {} accesses per thread, row in registers", p.threads,
                          kMaxLoads, access);
    size_grid(p, rows, sm);
  } else {
    p.kernel = rows_wide<Op, T, W>;
    p.threads = kWideThreads;
    // Static shared memory (the reduction scratch) and what the runtime reserves come off the opt-in.
    const std::size_t budget = sm.smem_per_block_optin > 1024 ? sm.smem_per_block_optin - 1024 : 0;
    const std::size_t row_bytes = static_cast<std::size_t>(vectors) * sizeof(Raw<T, W>);
    p.cached_vectors = static_cast<int>(std::min(row_bytes, budget) / sizeof(Raw<T, W>));
    p.smem = static_cast<std::size_t>(p.cached_vectors) * sizeof(Raw<T, W>);
    if (p.smem > (48u << 10))
      check(cudaFuncSetAttribute(reinterpret_cast<const void*>(p.kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(p.smem)),
            "shared memory opt-in of the wide row kernel");
    p.shape = fmt::format("a row per block of {} threads, two passes, {} of {} KiB of the row kept in shared memory, {} accesses",
                          kWideThreads, p.smem >> 10, row_bytes >> 10, access);
    size_grid(p, rows, sm);
  }
  return p;
}

template <RowOp Op, class T>
RowPlan plan_typed(std::int64_t rows, int hidden, const cuda::SmInfo& sm) {
  if (hidden % kVec16<T> == 0) return plan_width<Op, T, kVec16<T>>(rows, hidden, sm, "16-byte");
  return plan_width<Op, T, 1>(rows, hidden, sm, "scalar (rows not 16-byte aligned)");
}

template <RowOp Op>
RowPlan plan_op(DType d, std::int64_t rows, int hidden, const cuda::SmInfo& sm) {
  switch (d) {
    case DType::fp16: return plan_typed<Op, __half>(rows, hidden, sm);
    case DType::bf16: return plan_typed<Op, __nv_bfloat16>(rows, hidden, sm);
    default: return plan_typed<Op, float>(rows, hidden, sm);
  }
}

// --- BatchNorm ---

constexpr int kBnThreads = 256;
constexpr int kBnUnroll = 4;

__global__ void bn_scale_shift(const float* __restrict__ mean, const float* __restrict__ var, const float* __restrict__ gamma,
                               const float* __restrict__ beta, float* __restrict__ scale_shift, int hidden) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= hidden) return;
  const float scale = gamma[c] / sqrtf(var[c] + kEps);
  scale_shift[c] = scale;
  scale_shift[hidden + c] = fmaf(-mean[c], scale, beta[c]);
}

// y = x * scale[c] + shift[c]; a thread's vectors are `stride` apart, so its channel advances by
// stride mod (vectors per row) each step, without a 64-bit modulo per vector.
template <class T, int W>
__global__ void __launch_bounds__(kBnThreads) bn_apply(const T* __restrict__ x, T* __restrict__ y,
                                                       const float* __restrict__ scale_shift, std::int64_t vectors,
                                                       int per_row, int hidden) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= vectors) return;
  int c = static_cast<int>(v % per_row);
  const int advance = static_cast<int>(stride % per_row);
  const float* scale = scale_shift;
  const float* shift = scale_shift + hidden;
  for (; v < vectors; v += kBnUnroll * stride) {
    Raw<T, W> r[kBnUnroll];
    int cs[kBnUnroll];
#pragma unroll
    for (int u = 0; u < kBnUnroll; ++u) {
      const std::int64_t vu = v + u * stride;
      cs[u] = c;
      if (vu < vectors) r[u] = cuda::load_raw<T, W>(x + vu * W);
      c += advance;
      if (c >= per_row) c -= per_row;
    }
#pragma unroll
    for (int u = 0; u < kBnUnroll; ++u) {
      const std::int64_t vu = v + u * stride;
      if (vu >= vectors) continue;
      float f[W], sc[W], sh[W];
      cuda::raw_to_floats<T, W>(r[u], f);
      cuda::load_params<W>(scale + cs[u] * W, sc);
      cuda::load_params<W>(shift + cs[u] * W, sh);
#pragma unroll
      for (int k = 0; k < W; ++k) f[k] = fmaf(f[k], sc[k], sh[k]);
      cuda::store_floats<T, W>(y + vu * W, f);
    }
  }
}

template <class T, int W>
void bn_launch(const void* x, void* y, const float* scale_shift, std::int64_t rows, int hidden, const cuda::SmInfo& sm,
               cudaStream_t s) {
  const std::int64_t vectors = rows * hidden / W;
  const std::int64_t needed = std::max<std::int64_t>(1, (vectors + kBnThreads * kBnUnroll - 1) / (kBnThreads * kBnUnroll));
  const std::int64_t blocks = std::min<std::int64_t>(needed, std::int64_t{sm.sms} * (2048 / kBnThreads));
  bn_apply<T, W><<<static_cast<unsigned>(blocks), kBnThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), scale_shift,
                                                                      vectors, hidden / W, hidden);
}

template <class T>
void bn_typed(const void* x, void* y, const float* scale_shift, std::int64_t rows, int hidden, const cuda::SmInfo& sm,
              cudaStream_t s) {
  if (hidden % kVec16<T> == 0) bn_launch<T, kVec16<T>>(x, y, scale_shift, rows, hidden, sm, s);
  else bn_launch<T, 1>(x, y, scale_shift, rows, hidden, sm, s);
}

}  // namespace

RowPlan plan_rows(RowOp op, DType d, std::int64_t rows, int hidden, const cuda::SmInfo& sm) {
  if (rows < 1 || hidden < 1) throw std::runtime_error(fmt::format("row kernel of {} rows x {} columns", rows, hidden));
  switch (op) {
    case RowOp::layernorm: return plan_op<RowOp::layernorm>(d, rows, hidden, sm);
    case RowOp::rmsnorm: return plan_op<RowOp::rmsnorm>(d, rows, hidden, sm);
    case RowOp::softmax: return plan_op<RowOp::softmax>(d, rows, hidden, sm);
  }
  throw std::runtime_error("unknown row op");
}

void launch_rows(const RowPlan& plan, RowArgs args, cudaStream_t s) {
  args.cached_vectors = plan.cached_vectors;
  plan.kernel<<<plan.grid, plan.threads, plan.smem, s>>>(args);
}

void launch_batchnorm(DType d, const void* x, void* y, const float* mean, const float* var, const float* gamma,
                      const float* beta, float* scale_shift, std::int64_t rows, int hidden, const cuda::SmInfo& sm,
                      cudaStream_t s) {
  bn_scale_shift<<<static_cast<unsigned>((hidden + kBnThreads - 1) / kBnThreads), kBnThreads, 0, s>>>(mean, var, gamma, beta,
                                                                                                     scale_shift, hidden);
  switch (d) {
    case DType::fp16: return bn_typed<__half>(x, y, scale_shift, rows, hidden, sm, s);
    case DType::bf16: return bn_typed<__nv_bfloat16>(x, y, scale_shift, rows, hidden, sm, s);
    default: return bn_typed<float>(x, y, scale_shift, rows, hidden, sm, s);
  }
}

}  // namespace opmeter::norm
