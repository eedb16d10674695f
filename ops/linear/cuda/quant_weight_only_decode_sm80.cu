// The weight-only GEMM at decode shapes (16-row tiles: M <= 16, or int4 groups the 64-row kernel
// cannot take): y = act(x W^T + b), W in gpu_pack's layout, streamed once. It is memory bound by
// design, so what matters is the bytes in flight: an SM needs about bandwidth x latency / SMs =
// 4.8 TB/s x ~700 ns / 132 ~ 25 KB of loads outstanding to stream at the copy ceiling. What the
// first kernel (one loop for all M; 0.46 TB/s for int4 at M = 1 on an H200) did, and what this
// one does instead:
// - x was staged for all 16 rows of the mma tile (15/16 zeros at M = 1) behind barriers, and the
//   codes were loaded only after them: each chunk began with nothing in flight. Here only rows < M
//   are staged (rows M..15 stay zero, see below), and the codes stream through a
//   ring of kRing 16-byte units per lane: loaded kRing units ahead of use, across the chunks'
//   barriers, the first ones before x is staged. 8 warps x 4 x 512 B = 16 KB a block; 3 blocks
//   an SM (80 registers, no spills: kSpan bounds what the compiler hoists) = 48 KB in flight.
// - int4: each group's scale and zero were two dependent, uncoalesced loads in the inner loop.
//   Here the chunk's parameters of the block's 64 channels are copied to shared memory with x
//   (coalesced: consecutive threads read consecutive groups of a channel), codes in flight, and
//   the next chunk's are prefetched into L2 meanwhile.
// - int4: x's group sums were a serial loop (one thread, 64 adds) over all 16 rows. Here every
//   lane sums 8 (or group / 32) values of a real row and the group's lanes add with shuffles.
// - Split K wrote fp32 partials that a second kernel summed: a launch and a dependency more, at
//   shapes that take a few microseconds. Here the last block of each tile to finish sums them.
// - ksplit asked for ~4 blocks an SM whatever the waves; decode_ksplit then balanced the chunks
//   over the SMs, which took many short blocks in 2-3 waves (the H200, 2026-11-27: int8wo at
//   2.1 TB/s on ffn.w13). It now counts each block's memory round trips and the waves.
// - The H200 then measured int4 slower than int8 on fewer bytes (16.1 vs 13.6 us at 8192 x 1280,
//   M = 1): int4 issues twice the instructions a byte (at M = 1 about what the SM can issue while
//   streaming at full bandwidth), so per step they count:
//   - every step loaded the A fragments of rows g and g + 8 under per-lane conditions (rows < M).
//     Now rows M..15 of xs are zeroed once, so rows g load unconditionally, and at M <= 8 (kUpper
//     false) rows g + 8 are zero registers, not loads;
//   - bf16 int4 codes are decoded as 128 + code, one LOP3 a fragment (decode_int4_offset).
//   - the last block of a tile summed the splits' partials with four L2 loads in flight; now 16.
// - The H200's Nsight Compute then showed the kernel bound by the instructions it issues (15 M at
//   int8wo and 22 M at int4wo-64 on ffn.w13, where cuBLASLt's bf16 GEMV issues 2.4 M). In the
//   PTX of the step loop, a third of them were bookkeeping:
//   - a test per step whether it was past K, which also kept the compiler from scheduling and
//     sharing addresses across steps. Now a unit past K is skipped whole, and the steps of the
//     unit holding K multiply zeros (x is staged as zeros past K, the pack's codes are zeros);
//   - int4's test per step whether it ended a group: for groups of 32 and 64 (kGroupSteps) the
//     steps that end one are known at compile time;
//   - int4's group ends updated rows g + 8 also where they are zero (!kUpper).
//   PTX instructions (movs aside) of a unit's steps at M <= 8, bf16: int8 167 -> 131; int4 with
//   groups of 64 445 (a group end's code in each step, run in two of eight) -> 147. int4 with
//   other groups keeps both tests, without which ptxas spills at 80 registers (sm_90 and later).
// - The H200 measured that loop 16-25% faster for int4 (ffn.w13 M = 1: 15.2 M instructions, 22.5
//   M before), and its SASS (Nsight Compute's source page, 2026-11-27) showed per 8 mma: int8 199
//   instructions, 64 of them LOP3s, because a decode's mask and bf16 exponent are two immediates
//   and a LOP3 takes one; int4 177, a dozen of them moving the ring down a slot each unit, and
//   each group end shifting by the group's size read at run time. Now each decode is one lop3
//   with the exponent in a register, int4 at M <= 8 takes two units a pass, groups of 32 and 64
//   shift by a constant, the group parameters are floats in shared memory (converted once per
//   chunk, not at every group end), and x is staged permuted within each step so that a lane's
//   two A fragments are one 8-byte load (gd::x_position). PTX (movs aside) per 8 mma at M <= 8,
//   bf16: int8 131 -> 109, int4 with groups of 64 147 -> 103, of 32 185 -> 142. The group
//   sums' slots are constants for groups of 32 and 64. ptxas spills only in fp16 int4 with groups
//   of 32 at M > 8 (4-8 bytes, sm_80 to sm_90). Not yet run on a GPU.
// - At M = 1 with the weights as B, 15 of the mma's 16 A rows are zeros: a weight costs 1/128 of
//   an mma, an x load and a ring move. int4 at M <= 8 now takes its weights as A (kWeightsA: 16
//   channels a warp, x's rows as B's columns, gpu_pack::Operand::a): PTX (movs aside) of the step
//   loop per 1024 weights, bf16: groups of 64 76 -> 46, of 32 92 -> 61; int8 at M <= 8 runs on
//   integer tensor cores instead (quant_weight_only_limbs_sm80.cu). ptxas -v: no spills on sm_80,
//   sm_90 and sm_120; 4-8 bytes in int4 with groups of 32 on sm_86 / sm_89 (M > 8, and fp16 as
//   A). Not yet run on a GPU.
// - Groups of 128 (int4wo-128, hqq-int4-128) took the run-time path meant for any group, at 2.5-3.7x
//   the PTX per mma of groups of 64 and, as A, 42 KB of shared memory (two blocks an SM on sm_86 /
//   sm_89). They are a kGroupSteps of 8 now: as A a pass of two units is one group, as B a unit.
//   PTX per 8 mma as A, bf16: 352 -> 122; 12.7 KB of shared memory; no spills on sm_80 to sm_90.
//   Checked by a lane-by-lane CPU emulation of the fragments (PTX ISA layouts); not yet run on a GPU.
// Index arithmetic (xsum slots, parameter copies, split ranges, ksplit) is ops/linear/
// quant_gpu_decode.hpp's, tested on the CPU; the decoding and mma step are quant_weight_only.cuh's,
// shared with the 64-row kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>

#include "opmeter/cuda/float_convert.cuh"
#include "ops/linear/cuda/quant_decode_common.cuh"
#include "ops/linear/cuda/quant_weight_only.cuh"
#include "ops/linear/quant_gpu_decode.hpp"
#include "ops/linear/quant_gpu_plan.hpp"

namespace opmeter::linear::quant_cuda::wo {
namespace {
using cuda::narrow;
using cuda::widen;
namespace gd = gpu_decode;

static_assert(gd::kWarps == kWarps && gd::kTileN == kTileN, "one block shape");
// Blocks an SM keeps resident (<= 80 registers a thread): 48 KB of codes in flight per SM.
constexpr int kMinBlocks = gd::kBlocksPerSm;

// Into L2 ahead of its use (no register, no wait): a later chunk's group parameters.
__device__ inline void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

// Step s of a lane's int4 unit as bf16 128 + code (int4_pair_offset: one LOP3 a fragment), without
// int4_pair's subtraction of 128, which the group's correction takes instead (x (128 + q) summed,
// minus (zero + 128) x's sum). The products stay exact in fp32; the sums grow 9-143x, which costs
// the fp32 accumulation a few of its 24 bits, far below bf16's 8.
template <class T>
__device__ inline void decode_int4_offset(const std::uint32_t (&w)[4], int s, std::uint32_t& b0, std::uint32_t& b1) {
  const std::uint32_t v = w[s / 2] >> (8 * (s % 2));
  b0 = int4_pair_offset<T>(v);
  b1 = int4_pair_offset<T>(v >> 4);
}

// Sum of n 16-bit values of T from shared memory at p (16-byte aligned, n a multiple of 8).
template <class T>
__device__ inline float sum_shared(const T* p, int n) {
  float s = 0.f;
  for (int i = 0; i < n; i += 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(p + i);
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int j = 0; j < 8; ++j) s += widen(e[j]);
  }
  return s;
}

// kUpper: rows 8..15 of the tile may hold x (M > 8). kGroupSteps (int4): the k16 steps of a
// group where the launch knows them (groups of 32, 64, 128: 2, 4, 8), so that which steps end a
// group is known at compile time; 0: tested at run time, every step. kWeightsA (int4, M <= 8):
// the codes are the mma's A operand, 16 channels a warp, and x's rows are B's columns
// (gpu_pack::Operand::a): one mma takes 256 weights, not 128 of which 15/16 of the A rows are
// zeros, so a weight costs half the mma, x loads, group ends and ring moves.
template <class T, Codes C, bool kUpper, int kGroupSteps, bool kWeightsA>
__global__ void __launch_bounds__(kThreads, kMinBlocks) decode_kernel(WeightOnlyArgs a, int chunks_per_split) {
  constexpr bool kInt4 = C == Codes::int4;
  static_assert(!kWeightsA || (kInt4 && !kUpper), "int4 at M <= 8 only");
  constexpr bool kTestEachStep = kInt4 && kGroupSteps == 0;  // past K and group ends, at run time
  constexpr int kChunk = gd::kChunkK;
  constexpr int kStride = gd::kXStride;  // x permuted per step: see gd::x_position
  constexpr int kWarpN = kWeightsA ? gd::kTileNA : kTileN;  // channels a warp
  constexpr int kUnitK = kInt4 && !kWeightsA ? 128 : 64;
  constexpr int kUnits = kChunk / kUnitK;  // per warp and chunk: 4 (int4 as B) or 8
  static_assert(kUnits == gd::chunk_work(kInt4, kWeightsA).units_per_lane, "what decode_ksplit counts");
  constexpr int kSteps = kUnitK / 16;
  constexpr int kRing = gd::kRing;
  // Units a pass: the ring moves down once a pass (the H200's SASS, int4 one unit a pass: ~12 of a
  // unit's 177 instructions were those moves). Two for int4 too where M <= 8, but for groups of 32
  // (8 group ends a pass) and at M > 8, where two spill.
  constexpr int kSpan = kInt4 && !kWeightsA && (kUpper || kGroupSteps == 2) ? 1 : 2;
  static_assert(kRing % kSpan == 0 && kUnits % kSpan == 0, "whole passes");
  static_assert(kGroupSteps == 0 || (kInt4 && (kSpan * kSteps) % (kGroupSteps > 0 ? kGroupSteps : 1) == 0),
                "whole groups a pass");
  // Group slots a chunk: its groups where kGroupSteps knows them (8 of 64), else as many as groups
  // of 16 take (32 KB of parameters a block as A).
  constexpr int kGroups = !kInt4 ? 1 : kGroupSteps > 0 ? kChunk / (16 * kGroupSteps) : gd::kMaxGroupsPerChunk;
  // bf16 int4: B holds 128 + code (see decode_int4_offset); the group's zero takes the 128.
  constexpr bool kOffsetInt4 = kInt4 && std::is_same_v<T, __nv_bfloat16>;
  constexpr float kCodeOffset = kOffsetInt4 ? kInt4Offset<T> : 0.f;
  constexpr int kXRows = kUpper ? gd::kRows : gd::kRows / 2;  // rows of x a block reads
  __shared__ __align__(16) T xs[kXRows][kStride];
  // [group][row]: with weights as A a lane reads rows 2t, 2t + 1 of a group in one load.
  __shared__ __align__(8) float xsum[kGroups][kInt4 ? kXRows : 1];
  // int4: each (scale, zero + kCodeOffset) as two floats, converted once when copied: a group end
  // reads its lane's two channels' four in one 16-byte load (the H200's SASS had an 8-byte load,
  // four conversions and two additions at each).
  __shared__ __align__(16) float2 params[kInt4 ? kWarps * kGroups * kWarpN : 1];

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t nt0 = static_cast<std::int64_t>(blockIdx.x) * kWarps, nt = nt0 + warp;
  const bool active = nt < a.n_tiles;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.z) * gd::kRows;
  const int rows = a.M - m0 < gd::kRows ? static_cast<int>(a.M - m0) : gd::kRows;
  const bool lo = g < rows, hi = g + 8 < rows;  // this lane's A rows g and g + 8 hold x
  const std::int64_t n_chunks = (a.K + kChunk - 1) / kChunk;
  const std::int64_t c_begin = static_cast<std::int64_t>(blockIdx.y) * chunks_per_split;
  const std::int64_t c_end = c_begin + chunks_per_split < n_chunks ? c_begin + chunks_per_split : n_chunks;
  const gd::UnitRange units = gd::split_units(blockIdx.y, chunks_per_split, n_chunks, kUnits, a.k_units);
  const T* x = static_cast<const T*>(a.x) + m0 * a.K;
  const bool vec_x = a.K % 8 == 0 && reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0;
  // int4: a power of two from 16 to kChunk (supports); launch_typed picks kGroupSteps from it.
  const int group = kInt4 ? a.group : kChunk;
  // Known at compile time where kGroupSteps is: the group parameters' and sums' slots of a step
  // are then constants from the unit's (the H200's SASS had the run-time shift and its address
  // arithmetic at every group end).
  const int group_shift = kGroupSteps == 2 ? 5 : kGroupSteps == 4 ? 6 : kGroupSteps == 8 ? 7 : __ffs(group) - 1;
  static_assert(kGroupSteps == 0 || kGroupSteps == 2 || kGroupSteps == 4 || kGroupSteps == 8, "groups of 32, 64, 128");
  const int groups_per_chunk = kChunk / group;
  const std::int64_t groups_per_row = kInt4 ? a.K / group : 1;
  // A constant where kGroupSteps is: the group sums' slots then need no integer division (the
  // H200's SASS had divisions by run-time values in each chunk's staging). The parameter copy's
  // groups_per_chunk stays a run-time value: as a constant too, ptxas spilled 4-24 bytes.
  const gd::XsumPlan xp = gd::xsum_plan(kGroupSteps > 0 ? 16 * kGroupSteps : group);

  float acc[4] = {0.f, 0.f, 0.f, 0.f}, gacc[4] = {0.f, 0.f, 0.f, 0.f};
  const T* const xa0 = &xs[g][4 * t];  // this lane's A fragments of a step: 8 bytes at kk (+ 8 rows)

  // The ring of kRing units in flight, slot 0 the next to use; the first kRing are loaded now,
  // before x is staged, so the block's bytes are in flight from the start. Unit indices count
  // from the block's first unit (units.begin = c_begin * kUnits).
  const uint4* wp = reinterpret_cast<const uint4*>(a.codes) + (nt * a.k_units + units.begin) * 32 + lane;
  const int n_units = static_cast<int>(units.end - units.begin);
  uint4 ring[kRing];
#pragma unroll
  for (int b = 0; b < kRing; ++b) ring[b] = active && b < n_units ? load_unit(wp + b * 32) : make_uint4(0, 0, 0, 0);

  // Rows M..kXRows-1 of xs are zero for the whole kernel, written with the codes in flight:
  // staging writes only rows < M, and the x fragments read every row without a per-lane test.
  // 16-byte stores (a row is 66 of them). So are their group sums, which the staging does not
  // write either (with weights as A a lane reads rows 2t, 2t + 1 whatever M).
  constexpr int kRowVecs = kStride * static_cast<int>(sizeof(T)) / 16;
  static_assert(kRowVecs * 16 == kStride * static_cast<int>(sizeof(T)), "rows of whole 16-byte units");
  for (int i = rows * kRowVecs + static_cast<int>(threadIdx.x); i < kXRows * kRowVecs; i += kThreads)
    reinterpret_cast<uint4*>(&xs[0][0])[i] = make_uint4(0, 0, 0, 0);
  if constexpr (kInt4)
    for (int i = static_cast<int>(threadIdx.x); i < kGroups * kXRows; i += kThreads) xsum[i / kXRows][i % kXRows] = 0.f;

  const int my_chunks = static_cast<int>(c_end - c_begin);
#pragma unroll 1
  for (int ci = 0; ci < my_chunks; ++ci) {
    const std::int64_t k0 = (c_begin + ci) * kChunk;
    const int k_left = a.K - k0 < kChunk ? static_cast<int>(a.K - k0) : kChunk;  // k of x in the chunk
    __syncthreads();  // the previous chunk's readers are done with xs, xsum and params
    // x's rows < M, permuted within each step (gd::x_position).
    if (vec_x) {  // 8 k a thread, read in order; its k pair j goes to word 2j + h of its step
      constexpr int kVecs = kChunk / 8;
      for (int i = static_cast<int>(threadIdx.x); i < rows * kVecs; i += kThreads) {
        const int r = i / kVecs, c = (i % kVecs) * 8, h = (c / 8) % 2;
        const std::int64_t k = k0 + c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (k < a.K) v = *reinterpret_cast<const uint4*>(x + r * a.K + k);  // K % 8 == 0: k + 8 <= K
        std::uint32_t* step = reinterpret_cast<std::uint32_t*>(&xs[r][c - 8 * h]) + h;  // word 2j + h
        step[gd::x_staged_word_of(0)] = v.x;
        step[gd::x_staged_word_of(1)] = v.y;
        step[gd::x_staged_word_of(2)] = v.z;
        step[gd::x_staged_word_of(3)] = v.w;
      }
    } else {
      for (int i = static_cast<int>(threadIdx.x); i < rows * kChunk; i += kThreads) {
        const int r = i / kChunk, c = i % kChunk;
        const std::int64_t k = k0 + c;
        xs[r][gd::x_position(c)] = k < a.K ? x[r * a.K + k] : narrow<T>(0.f);
      }
    }
    if constexpr (kInt4) {
      for (int i = static_cast<int>(threadIdx.x); i < kWarps * kWarpN * groups_per_chunk; i += kThreads) {
        const gd::ParamCopy p =
            gd::param_copy(i, groups_per_chunk, nt0, a.n_tiles, groups_per_row, k0 >> group_shift, kWarpN, kGroups);
        const std::uint32_t word = p.src >= 0 ? __ldg(a.group_params + p.src) : 0u;  // 0: scale 0
        params[p.smem] = make_float2(half_bits_to_float<T>(word), half_bits_to_float<T>(word >> 16) + kCodeOffset);
        // The next chunk's word of this entry: its copy, after that chunk's barrier, then waits
        // on L2, not on memory.
        if (ci + 1 < my_chunks && p.next >= 0) prefetch_l2(a.group_params + p.next);
      }
    }
    __syncthreads();
    if constexpr (kInt4) {
      // Whole warps per pass (the shuffles need every lane); a lane group is all in or all out.
      const int slots = rows * xp.slots_per_row;
      for (int base = warp * 32; base < slots; base += kThreads) {
        const int i = base + lane;
        float s = i < slots ? sum_shared(&xs[gd::xsum_row(xp, i)][gd::xsum_k(xp, i)], xp.per) : 0.f;
        for (int o = xp.lanes / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
        if (i < slots && gd::xsum_writes(xp, lane)) xsum[gd::xsum_group(xp, i)][gd::xsum_row(xp, i)] = s;
      }
      __syncthreads();
    }
    if (!active) continue;  // no barrier below until the next chunk's first one

    // kSpan units a pass (what the compiler schedules at once): the ring moves down by kSpan
    // slots and its top takes the loads of the units kRing ahead.
#pragma unroll 1
    for (int j0 = 0; j0 < kUnits; j0 += kSpan) {
      const int u0 = ci * kUnits + j0;
      uint4 cur[kSpan];
#pragma unroll
      for (int s = 0; s < kSpan; ++s) cur[s] = ring[s];
#pragma unroll
      for (int s = 0; s < kRing - kSpan; ++s) ring[s] = ring[s + kSpan];
#pragma unroll
      for (int s = 0; s < kSpan; ++s) {
        const int next = u0 + s + kRing;
        ring[kRing - kSpan + s] = next < n_units ? load_unit(wp + next * 32) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int s = 0; s < kSpan; ++s) {
        // A unit past K is skipped whole; within the unit holding K, steps past it multiply zeros
        // (x is staged as zeros there and the pack's codes are zeros).
        if (!kTestEachStep && (j0 + s) * kUnitK >= k_left) continue;
        const std::uint32_t w[4] = {cur[s].x, cur[s].y, cur[s].z, cur[s].w};
#pragma unroll
        for (int st = 0; st < kSteps; ++st) {
          const int kk = (j0 + s) * kUnitK + st * 16;  // k of the step within the chunk
          if constexpr (kTestEachStep)
            if (kk >= k_left) continue;
          const uint2 f0 = *reinterpret_cast<const uint2*>(xa0 + kk);  // row g: k 2t, 2t + 1 | 2t + 8, 2t + 9
          if constexpr (kWeightsA) {
            // Word st holds the step's A fragments a_i in nibbles i, i + 4; x's row g is B's column g.
            std::uint32_t wa[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
              wa[i] = kOffsetInt4 ? int4_pair_offset<T>(w[st] >> (4 * i)) : int4_pair<T>(w[st] >> (4 * i));
            mma<T>(gacc, wa, f0.x, f0.y);
          } else {
            std::uint32_t b0, b1;
            if constexpr (kOffsetInt4) decode_int4_offset<T>(w, st, b0, b1);
            else decode<T, C>(w, st, b0, b1);
            const uint2 f1 = kUpper ? *reinterpret_cast<const uint2*>(xa0 + 8 * kStride + kk) : make_uint2(0, 0);
            const std::uint32_t af[4] = {f0.x, f1.x, f0.y, f1.y};
            if constexpr (kInt4) mma<T>(gacc, af, b0, b1);
            else mma<T>(acc, af, b0, b1);
          }
          if constexpr (kInt4) {
            // Not the group's last step: a constant where kGroupSteps is (st is unrolled).
            if constexpr (kTestEachStep) {
              if (((kk + 16) & (group - 1)) != 0) continue;
            } else if ((s * kSteps + st + 1) % kGroupSteps != 0) {  // a pass starts a group (j0 * kSteps)
              continue;
            }
            const int q = kk >> group_shift;
            if constexpr (kWeightsA) {
              // Accumulator e: channel g (+8 for e >= 2), row 2t (+1 for odd e).
              const float4 p = *reinterpret_cast<const float4*>(&params[gd::param_smem(warp, q, g, kWarpN, kGroups)]);
              const float2 xr = *reinterpret_cast<const float2*>(&xsum[q][2 * t]);
              acc[0] += p.x * (gacc[0] - p.y * xr.x);
              acc[1] += p.x * (gacc[1] - p.y * xr.y);
              acc[2] += p.z * (gacc[2] - p.w * xr.x);
              acc[3] += p.z * (gacc[3] - p.w * xr.y);
              gacc[0] = gacc[1] = gacc[2] = gacc[3] = 0.f;
              continue;
            }
            const float4 p = *reinterpret_cast<const float4*>(&params[gd::param_smem(warp, q, 2 * t, kTileN, kGroups)]);
            const float s0 = p.x, z0 = p.y, s1 = p.z, z1 = p.w;
            const float xa = lo ? xsum[q][g] : 0.f;
            acc[0] += s0 * (gacc[0] - z0 * xa);
            acc[1] += s1 * (gacc[1] - z1 * xa);
            gacc[0] = gacc[1] = 0.f;
            if constexpr (kUpper) {  // rows g + 8 (x * 0 is no constant the compiler may fold)
              const float xb = hi ? xsum[q][g + 8] : 0.f;
              acc[2] += s0 * (gacc[2] - z0 * xb);
              acc[3] += s1 * (gacc[3] - z1 * xb);
              gacc[2] = gacc[3] = 0.f;
            }
          }
        }
      }
    }
  }
  // Accumulator e: row g (+8 for e >= 2), channel 2t (+1 for odd e) of the n-tile; with weights
  // as A channel g (+8 for e >= 2), row 2t (+1 for odd e).
  if (active) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int hi_e = e >= 2 ? 8 : 0, odd_e = e & 1;
      const std::int64_t m = m0 + (kWeightsA ? 2 * t + odd_e : g + hi_e);
      const std::int64_t c = nt * kWarpN + (kWeightsA ? g + hi_e : 2 * t + odd_e);
      if (m >= a.M || c >= a.N) continue;
      float v = acc[e];
      if constexpr (!kInt4) v *= a.channel_scale[c];
      store_output<T>(a, m, c, v);
    }
  }
  if (a.ksplit > 1) sum_splits_if_last<T>(a, m0, rows, nt0 * kWarpN, kWarps * kWarpN);
}

template <class T, Codes C, int kGroupSteps>
void launch_rows(dim3 grid, const WeightOnlyArgs& a, int per_split, cudaStream_t s) {
  if constexpr (C == Codes::int4)
    if (a.weights_a) return decode_kernel<T, C, false, kGroupSteps, true><<<grid, kThreads, 0, s>>>(a, per_split);
  if (a.M <= gd::kRows / 2) decode_kernel<T, C, false, kGroupSteps, false><<<grid, kThreads, 0, s>>>(a, per_split);
  else decode_kernel<T, C, true, kGroupSteps, false><<<grid, kThreads, 0, s>>>(a, per_split);
}

template <class T, Codes C>
void launch_typed(const WeightOnlyArgs& a, cudaStream_t s) {
  const std::int64_t n_chunks = gd::chunk_count(a.K, gd::kChunkK);
  const std::int64_t per_split = (n_chunks + a.ksplit - 1) / a.ksplit;
  const dim3 grid(static_cast<unsigned>((a.n_tiles + kWarps - 1) / kWarps), static_cast<unsigned>(a.ksplit),
                  static_cast<unsigned>((a.M + gd::kRows - 1) / gd::kRows));
  const int per = static_cast<int>(per_split);
  if constexpr (C == Codes::int4) {
    if (a.group == 32) return launch_rows<T, C, 2>(grid, a, per, s);
    if (a.group == 64) return launch_rows<T, C, 4>(grid, a, per, s);
    if (a.group == 128) return launch_rows<T, C, 8>(grid, a, per, s);
  }
  launch_rows<T, C, 0>(grid, a, per, s);
}

template <class T>
void launch_codes(Codes c, const WeightOnlyArgs& a, cudaStream_t s) {
  switch (c) {
    case Codes::int8: launch_typed<T, Codes::int8>(a, s); break;
    case Codes::fp8: launch_typed<T, Codes::fp8>(a, s); break;
    case Codes::int4: launch_typed<T, Codes::int4>(a, s); break;
  }
}

}  // namespace

void launch_decode(DType d, Codes c, const WeightOnlyArgs& a, cudaStream_t s) {
  // The A forms stage 8 rows of x: more would overrun the int4 kernel's shared x and be left
  // unwritten by the limbs kernel (plan() refuses them; a direct launch must too).
  if (a.weights_a && a.M > static_cast<std::int64_t>(gpu_pack::kMaxRowsWeightsA))
    throw std::logic_error("the decode kernel takes its weights as A at M <= 8 only");
  if (c == Codes::int8 && a.weights_a) return launch_decode_limbs(d, a, s);
  if (d == DType::bf16)
    launch_codes<__nv_bfloat16>(c, a, s);
  else
    launch_codes<__half>(c, a, s);
}

}  // namespace opmeter::linear::quant_cuda::wo
