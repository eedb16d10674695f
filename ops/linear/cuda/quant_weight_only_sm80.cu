// The weight-only quantized GEMM (int8, fp8 e4m3, int4 with groups) for 64-row tiles (M > 16):
// y = act(x W^T + b) with W in gpu_pack's fragment layout. Decode shapes (16-row tiles) run
// quant_weight_only_decode_sm80.cu instead; the entry points here choose. Each warp owns an n-tile
// of 8 output channels and streams its codes once per row tile with 16-byte loads (4 in flight per
// lane), decodes them in registers to the activations' 16-bit type (exactly: integers and e4m3
// values are representable, quant_weight_only.cuh) and multiplies with mma.sync m16n8k16, fp32
// accumulation. Scales come after the products: int8 / fp8 one per channel at the end; int4 per
// group, sum_k (q - z) s x = s (sum_k q x - z sum_k x), with the group sums of x taken from the
// shared tile. x's chunk (64 rows x 256 k) is staged in shared memory, zero past M and K, so edges
// need no other guard. Few blocks split K (fp32 partials, summed by the reduce kernel with bias
// and activation).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ops/linear/cuda/quant_act.cuh"
#include "ops/linear/cuda/quant_kernels.hpp"
#include "ops/linear/cuda/quant_weight_only.cuh"
#include "ops/linear/quant_gpu_decode.hpp"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::linear::quant_cuda {
namespace {
using cuda::narrow;
using cuda::widen;

using wo::decode;
using wo::half_bits_to_float;
using wo::kThreads;
using wo::kTileN;
using wo::kWarps;
using wo::ld32;
using wo::mma;

__host__ __device__ constexpr int chunk_k(int mt) { return mt == 1 ? gpu_decode::kChunkK : 256; }

template <class T, Codes C, int MT>
__global__ void __launch_bounds__(kThreads) weight_only_kernel(WeightOnlyArgs a, int chunks_per_split) {
  constexpr int kRows = 16 * MT;
  constexpr int kChunk = chunk_k(MT);
  constexpr int kStride = kChunk + 8;  // +16 bytes: the A fragment's 32 lanes hit 32 banks
  constexpr int kUnitK = C == Codes::int4 ? 128 : 64;
  constexpr int kUnits = kChunk / kUnitK;
  constexpr int kSteps = kUnitK / 16;
  constexpr int kBatch = kUnits < 4 ? kUnits : 4;
  constexpr bool kInt4 = C == Codes::int4;
  __shared__ __align__(16) T xs[kRows][kStride];
  __shared__ float xsum[kInt4 ? kRows : 1][kInt4 ? kChunk / 16 : 1];

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t nt = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
  const bool active = nt < a.n_tiles;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.z) * kRows;
  const std::int64_t n_chunks = (a.K + kChunk - 1) / kChunk;
  const std::int64_t c_begin = static_cast<std::int64_t>(blockIdx.y) * chunks_per_split;
  const std::int64_t c_end = c_begin + chunks_per_split < n_chunks ? c_begin + chunks_per_split : n_chunks;
  const T* x = static_cast<const T*>(a.x);
  const bool vec_x = a.K % 8 == 0 && reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0;
  const int group = kInt4 ? a.group : 1;  // a power of two (supports), dividing kChunk
  const int group_shift = __ffs(group) - 1;
  const std::int64_t groups_per_row = kInt4 ? a.K / group : 1;
  const int groups_per_chunk = kInt4 ? kChunk / group : 1;

  float acc[MT][4], gacc[MT][4];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[mi][e] = gacc[mi][e] = 0.f;

  for (std::int64_t chunk = c_begin; chunk < c_end; ++chunk) {
    const std::int64_t k0 = chunk * kChunk;
    __syncthreads();  // the previous chunk's readers are done with xs / xsum
    if (vec_x) {
      constexpr int kVecs = kChunk / 8;
      for (int i = static_cast<int>(threadIdx.x); i < kRows * kVecs; i += kThreads) {
        const int r = i / kVecs, c = (i % kVecs) * 8;
        const std::int64_t m = m0 + r, k = k0 + c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (m < a.M && k < a.K) v = *reinterpret_cast<const uint4*>(x + m * a.K + k);  // K % 8 == 0: k + 8 <= K
        *reinterpret_cast<uint4*>(&xs[r][c]) = v;
      }
    } else {
      for (int i = static_cast<int>(threadIdx.x); i < kRows * kChunk; i += kThreads) {
        const int r = i / kChunk, c = i % kChunk;
        const std::int64_t m = m0 + r, k = k0 + c;
        xs[r][c] = m < a.M && k < a.K ? x[m * a.K + k] : narrow<T>(0.f);
      }
    }
    __syncthreads();
    if constexpr (kInt4) {
      for (int i = static_cast<int>(threadIdx.x); i < kRows * groups_per_chunk; i += kThreads) {
        const int r = i / groups_per_chunk, q = i % groups_per_chunk;
        float s = 0.f;
        for (int k = q * group; k < (q + 1) * group; ++k) s += widen(xs[r][k]);
        xsum[r][q] = s;
      }
      __syncthreads();
    }
    if (!active) continue;  // no barrier below until the next chunk's first one

    const std::int64_t u0 = chunk * kUnits;  // the chunk's first unit (u0 < k_units: k0 < K)
    const std::int64_t nu = a.k_units - u0 < kUnits ? a.k_units - u0 : kUnits;
    const uint4* wp = reinterpret_cast<const uint4*>(a.codes) + (nt * a.k_units + u0) * 32 + lane;
#pragma unroll
    for (int ub = 0; ub < kUnits; ub += kBatch) {
      uint4 wv[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) wv[b] = ub + b < nu ? __ldg(wp + (ub + b) * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const std::uint32_t w[4] = {wv[b].x, wv[b].y, wv[b].z, wv[b].w};
#pragma unroll
        for (int st = 0; st < kSteps; ++st) {
          const int kk = (ub + b) * kUnitK + st * 16;  // k of the step within the chunk
          if (k0 + kk >= a.K) continue;                // past K: zero x and codes (uniform)
          std::uint32_t b0, b1;
          decode<T, C>(w, st, b0, b1);
#pragma unroll
          for (int mi = 0; mi < MT; ++mi) {
            const T* r0 = &xs[mi * 16 + g][kk + 2 * t];
            const T* r1 = &xs[mi * 16 + g + 8][kk + 2 * t];
            const std::uint32_t af[4] = {ld32(r0), ld32(r1), ld32(r0 + 8), ld32(r1 + 8)};
            if constexpr (kInt4)
              mma<T>(gacc[mi], af, b0, b1);
            else
              mma<T>(acc[mi], af, b0, b1);
          }
          if constexpr (kInt4) {
            if (((kk + 16) & (group - 1)) != 0) continue;  // not the group's last step
            const int q = kk >> group_shift;
            const std::int64_t gi = (k0 >> group_shift) + q;
            const std::int64_t c0 = nt * kTileN + 2 * t;  // < padded channels
            const std::uint32_t p0 = __ldg(a.group_params + c0 * groups_per_row + gi);
            const std::uint32_t p1 = __ldg(a.group_params + (c0 + 1) * groups_per_row + gi);
            const float s0 = half_bits_to_float<T>(p0), z0 = half_bits_to_float<T>(p0 >> 16);
            const float s1 = half_bits_to_float<T>(p1), z1 = half_bits_to_float<T>(p1 >> 16);
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
              const float xa = xsum[mi * 16 + g][q], xb = xsum[mi * 16 + g + 8][q];
              acc[mi][0] += s0 * (gacc[mi][0] - z0 * xa);
              acc[mi][1] += s1 * (gacc[mi][1] - z1 * xa);
              acc[mi][2] += s0 * (gacc[mi][2] - z0 * xb);
              acc[mi][3] += s1 * (gacc[mi][3] - z1 * xb);
#pragma unroll
              for (int e = 0; e < 4; ++e) gacc[mi][e] = 0.f;
            }
          }
        }
      }
    }
  }
  if (!active) return;

  // Accumulator e of tile mi: row g (+8 for e >= 2), channel 2t (+1 for odd e) of the n-tile.
  T* y = static_cast<T*>(a.y);
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t m = m0 + mi * 16 + g + (e >= 2 ? 8 : 0);
      const std::int64_t c = nt * kTileN + 2 * t + (e & 1);
      if (m >= a.M || c >= a.N) continue;
      float v = acc[mi][e];
      if constexpr (!kInt4) v *= a.channel_scale[c];
      if (a.ksplit == 1)
        y[m * a.N + c] = narrow<T>(apply_act(a.act, v + a.bias[c]));
      else
        a.partial[(static_cast<std::int64_t>(blockIdx.y) * a.M + m) * a.N + c] = v;
    }
}

template <class T>
__global__ void split_reduce_kernel(const float* __restrict__ partial, int ksplit, std::int64_t M, std::int64_t N,
                                    const float* __restrict__ bias, tensor::Act act, T* __restrict__ y) {
  const std::int64_t n = M * N, stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = 0.f;
    for (int s = 0; s < ksplit; ++s) v += partial[s * n + i];
    y[i] = narrow<T>(apply_act(act, v + bias[i % N]));
  }
}

template <class T, Codes C, int MT>
void launch_typed(const WeightOnlyArgs& a, cudaStream_t s) {
  constexpr int kRows = 16 * MT;
  const std::int64_t n_chunks = (a.K + chunk_k(MT) - 1) / chunk_k(MT);
  const std::int64_t per_split = (n_chunks + a.ksplit - 1) / a.ksplit;
  const dim3 grid(static_cast<unsigned>((a.n_tiles + kWarps - 1) / kWarps), static_cast<unsigned>(a.ksplit),
                  static_cast<unsigned>((a.M + kRows - 1) / kRows));
  weight_only_kernel<T, C, MT><<<grid, kThreads, 0, s>>>(a, static_cast<int>(per_split));
}

template <class T>
void launch_codes(Codes c, const WeightOnlyArgs& a, cudaStream_t s) {
  switch (c) {
    case Codes::int8: launch_typed<T, Codes::int8, 4>(a, s); break;
    case Codes::fp8: launch_typed<T, Codes::fp8, 4>(a, s); break;
    case Codes::int4: launch_typed<T, Codes::int4, 4>(a, s); break;
  }
}

}  // namespace

int weight_only_chunk_k(int tile_rows) { return chunk_k(tile_rows == 16 ? 1 : 4); }

bool weight_only_takes_group(int group, int tile_rows) {
  return group >= 16 && (group & (group - 1)) == 0 && weight_only_chunk_k(tile_rows) % group == 0;
}

int weight_only_ksplit(std::int64_t K, int tile_rows, int want) {
  const std::int64_t n_chunks = gpu_decode::chunk_count(K, weight_only_chunk_k(tile_rows));
  const std::int64_t w = std::clamp<std::int64_t>(want, 1, n_chunks);
  const std::int64_t per_split = (n_chunks + w - 1) / w;
  return static_cast<int>((n_chunks + per_split - 1) / per_split);
}

std::int64_t weight_only_blocks(std::int64_t n_tiles, std::int64_t M, int tile_rows) {
  return (n_tiles + kWarps - 1) / kWarps * ((M + tile_rows - 1) / tile_rows);
}

void launch_weight_only(DType d, Codes c, int tile_rows, const WeightOnlyArgs& a, cudaStream_t s) {
  if (a.M <= 0 || a.N <= 0 || a.K <= 0) return;
  if (tile_rows == 16)
    wo::launch_decode(d, c, a, s);
  else if (d == DType::bf16)
    launch_codes<__nv_bfloat16>(c, a, s);
  else
    launch_codes<__half>(c, a, s);
}

void launch_split_reduce(DType d, const float* partial, int ksplit, std::int64_t M, std::int64_t N, const float* bias,
                         tensor::Act act, void* y, cudaStream_t s) {
  const std::int64_t n = M * N;
  if (n <= 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(1 << 16, (n + 255) / 256));
  if (d == DType::bf16)
    split_reduce_kernel<__nv_bfloat16><<<blocks, 256, 0, s>>>(partial, ksplit, M, N, bias, act, static_cast<__nv_bfloat16*>(y));
  else
    split_reduce_kernel<__half><<<blocks, 256, 0, s>>>(partial, ksplit, M, N, bias, act, static_cast<__half*>(y));
}

}  // namespace opmeter::linear::quant_cuda
