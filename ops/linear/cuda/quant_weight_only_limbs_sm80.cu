// int8 weight-only linears at decode (M <= 8) on integer tensor cores: y = act(x W^T + b).
// The decode kernel (quant_weight_only_decode_sm80.cu) turns each int8 code into bf16 or fp16
// before its mma: four instructions a pair of codes, most of what it issues (the H200, 2026-11-27:
// 13 M warp instructions on ffn.w13 at M = 1 where cuBLASLt's bf16 GEMV issues 2.4 M). Here the
// codes are never decoded: they are the A operand of mma.sync m16n8k32 s8 x s8 -> s32 as stored
// (gpu_pack::Operand::a: a lane's 16-byte unit is its A fragment of one step, 16 channels x 32 k),
// and x, the B operand, is staged as two int8 limbs per value (gpu_limbs: x scaled by a power of
// two per row and chunk, v = 256 hi + lo), so one step is two mma and one 16-byte shared load for
// 512 weights. The limbs' exact integer sums meet their row's scale at each chunk's end and the
// channel's scale at the end. Index and limb arithmetic: ops/linear/quant_gpu_limbs.hpp, tested on
// the CPU; the split of K and its end are the decode kernel's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "opmeter/cuda/float_convert.cuh"
#include "ops/linear/cuda/quant_decode_common.cuh"
#include "ops/linear/cuda/quant_weight_only.cuh"
#include "ops/linear/quant_gpu_decode.hpp"
#include "ops/linear/quant_gpu_limbs.hpp"

namespace opmeter::linear::quant_cuda::wo {
namespace {
namespace gd = gpu_decode;
namespace gl = gpu_limbs;

constexpr int kRowsA = static_cast<int>(gpu_pack::kMaxRowsWeightsA);  // rows of x: B's 8 columns
static_assert(kRowsA == 8, "the m16n8k32 tile's B has 8 columns");
constexpr int kTileA = gd::kTileNA;

// D += A B for one m16n8k32 tile of int8 (A row-major 16 x 32, B "col" 32 x 8): exact in s32.
__device__ inline void mma_s8(int (&c)[4], const uint4& a, std::uint32_t b0, std::uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

__device__ inline std::uint32_t magnitude_bits(__nv_bfloat16 v) { return __bfloat16_as_ushort(v) & 0x7FFFu; }
__device__ inline std::uint32_t magnitude_bits(__half v) { return __half_as_ushort(v) & 0x7FFFu; }

// One warp stages row r's chunk of x at k0 as limbs (gpu_limbs): lane l takes k 16 l .. 16 l + 15,
// half l % 2 of step l / 2; k past K is zero. Lane 0 writes the row's scale down.
template <class T>
__device__ inline void stage_row(const WeightOnlyArgs& a, int r, std::int64_t k0, bool vec_x, int lane,
                                 std::uint8_t* row, float* scale) {
  const T* x = static_cast<const T*>(a.x) + r * a.K;
  T v[16];
  const std::int64_t k = k0 + 16 * lane;
  if (vec_x) {  // K % 8 == 0: each 8 values are all in or all past K
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint4 u = make_uint4(0, 0, 0, 0);
      if (k + 8 * h < a.K) u = *reinterpret_cast<const uint4*>(x + k + 8 * h);
      const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[8 * h + j] = e[j];
    }
  } else {
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] = k + j < a.K ? x[k + j] : cuda::narrow<T>(0.f);
  }
  std::uint32_t amax = 0;
#pragma unroll
  for (int j = 0; j < 16; ++j) amax = max(amax, magnitude_bits(v[j]));
  const std::uint32_t largest = __reduce_max_sync(0xFFFFFFFFu, amax);
  const bool finite = !gl::not_finite(largest, std::is_same_v<T, __half>);
  const int e = gl::scale_exponent(largest, std::is_same_v<T, __half>);
  if (lane == 0) *scale = finite ? gl::scale_down(e) : __uint_as_float(0x7FC00000u);  // NaN: see not_finite
  const float up = finite ? gl::scale_up(e) : 0.f;
  std::uint8_t* step = row + (lane / 2) * gl::kStepBytes;
#pragma unroll
  for (int q = 0; q < 4; ++q) {  // k 4q .. 4q + 3 of the lane's 16: one word of each limb
    std::uint32_t hi = 0, lo = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const gl::Limbs l = gl::split(__float2int_rn(cuda::widen(v[4 * q + i]) * up));
      hi |= (static_cast<std::uint32_t>(l.hi) & 0xFFu) << (8 * i);
      lo |= (static_cast<std::uint32_t>(l.lo) & 0xFFu) << (8 * i);
    }
    const int k = 16 * (lane % 2) + 4 * q;  // within the step
    *reinterpret_cast<std::uint32_t*>(step + gl::staged_byte(k, false)) = hi;
    *reinterpret_cast<std::uint32_t*>(step + gl::staged_byte(k, true)) = lo;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads, gd::kBlocksPerSm) limbs_kernel(WeightOnlyArgs a, int chunks_per_split) {
  constexpr int kChunk = gd::kChunkK;
  constexpr int kUnits = kChunk / gl::kStepK;  // a unit is one step: 16 a chunk
  static_assert(kUnits == gd::chunk_work(false, true).units_per_lane, "what decode_ksplit counts");
  constexpr int kRing = gd::kRing;  // units in flight a lane, loaded kRing ahead of use
  static_assert(kUnits % kRing == 0, "whole passes");
  __shared__ __align__(16) std::uint8_t xl[kRowsA][gl::kRowBytes];
  __shared__ __align__(8) float xscale[kRowsA];  // 2^(e - 140) of each row's chunk

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t nt0 = static_cast<std::int64_t>(blockIdx.x) * kWarps, nt = nt0 + warp;
  const bool active = nt < a.n_tiles;
  const int rows = a.M < kRowsA ? static_cast<int>(a.M) : kRowsA;  // M <= 8: gpu_pack::weight_operand
  const std::int64_t n_chunks = gd::chunk_count(a.K, kChunk);
  const std::int64_t c_begin = static_cast<std::int64_t>(blockIdx.y) * chunks_per_split;
  const std::int64_t c_end = c_begin + chunks_per_split < n_chunks ? c_begin + chunks_per_split : n_chunks;
  const gd::UnitRange units = gd::split_units(blockIdx.y, chunks_per_split, n_chunks, kUnits, a.k_units);
  const bool vec_x = a.K % 8 == 0 && reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0;

  // The first kRing units load before anything else, so the block's bytes are in flight at once.
  const uint4* wp = reinterpret_cast<const uint4*>(a.codes) + (nt * a.k_units + units.begin) * 32 + lane;
  const int n_units = static_cast<int>(units.end - units.begin);
  uint4 ring[kRing];
#pragma unroll
  for (int b = 0; b < kRing; ++b) ring[b] = active && b < n_units ? load_unit(wp + b * 32) : make_uint4(0, 0, 0, 0);

  // Rows M..7 are zero limbs with a zero scale for the whole kernel: every lane reads its B
  // fragment without a test, and those rows' outputs are not stored.
  constexpr int kRowVecs = gl::kRowBytes / 16;
  for (int i = rows * kRowVecs + static_cast<int>(threadIdx.x); i < kRowsA * kRowVecs; i += kThreads)
    reinterpret_cast<uint4*>(&xl[0][0])[i] = make_uint4(0, 0, 0, 0);
  if (static_cast<int>(threadIdx.x) >= rows && threadIdx.x < kRowsA) xscale[threadIdx.x] = 0.f;

  // Accumulator e: channel g (+8 for e >= 2), row 2t (+1 for odd e).
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  const std::uint8_t* const xb = &xl[g][16 * t];  // this lane's B fragments of a step: hi, lo

  const int my_chunks = static_cast<int>(c_end - c_begin);
#pragma unroll 1
  for (int ci = 0; ci < my_chunks; ++ci) {
    const std::int64_t k0 = (c_begin + ci) * kChunk;
    const int k_left = a.K - k0 < kChunk ? static_cast<int>(a.K - k0) : kChunk;
    __syncthreads();  // the previous chunk's readers are done with xl and xscale
    if (warp < rows) stage_row<T>(a, warp, k0, vec_x, lane, &xl[warp][0], &xscale[warp]);
    __syncthreads();
    if (!active) continue;  // no barrier below until the next chunk's first one

    int hi[4] = {0, 0, 0, 0}, lo[4] = {0, 0, 0, 0};
#pragma unroll 1
    for (int j0 = 0; j0 < kUnits; j0 += kRing) {
      uint4 cur[kRing];
#pragma unroll
      for (int s = 0; s < kRing; ++s) {
        cur[s] = ring[s];
        const int next = ci * kUnits + j0 + s + kRing;
        ring[s] = next < n_units ? load_unit(wp + next * 32) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int s = 0; s < kRing; ++s) {
        const int j = j0 + s;
        if (j * gl::kStepK >= k_left) continue;  // a unit past K; within K's unit x and codes are zero past it
        const uint4 f = *reinterpret_cast<const uint4*>(xb + j * gl::kStepBytes);
        mma_s8(hi, cur[s], f.x, f.y);
        mma_s8(lo, cur[s], f.z, f.w);
      }
    }
    // The chunk's exact sums (|256 hi + lo| < 2^31: gpu_limbs) times their row's scale.
    const float2 sc = *reinterpret_cast<const float2*>(&xscale[2 * t]);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] += (e & 1 ? sc.y : sc.x) * static_cast<float>(256 * hi[e] + lo[e]);
  }
  if (active) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t m = 2 * t + (e & 1), c = nt * kTileA + g + (e >= 2 ? 8 : 0);
      if (m >= a.M || c >= a.N) continue;
      store_output<T>(a, m, c, acc[e] * a.channel_scale[c]);
    }
  }
  if (a.ksplit > 1) sum_splits_if_last<T>(a, 0, rows, nt0 * kTileA, kWarps * kTileA);
}

template <class T>
void launch_typed(const WeightOnlyArgs& a, cudaStream_t s) {
  const std::int64_t n_chunks = gd::chunk_count(a.K, gd::kChunkK);
  const std::int64_t per_split = (n_chunks + a.ksplit - 1) / a.ksplit;
  const dim3 grid(static_cast<unsigned>((a.n_tiles + kWarps - 1) / kWarps), static_cast<unsigned>(a.ksplit), 1);
  limbs_kernel<T><<<grid, kThreads, 0, s>>>(a, static_cast<int>(per_split));
}

}  // namespace

void launch_decode_limbs(DType d, const WeightOnlyArgs& a, cudaStream_t s) {
  if (d == DType::bf16) launch_typed<__nv_bfloat16>(a, s);
  else launch_typed<__half>(a, s);
}

}  // namespace opmeter::linear::quant_cuda::wo
