#pragma once
// The index arithmetic of cuda_quant's decode kernel (M <= 16 rows a block,
// cuda/quant_weight_only_decode_sm80.cu), as plain functions the CPU tests check against the
// pack's layout (quant_gpu_pack.hpp), and the split-K choice for decode shapes.
//
// A block is 8 warps (one tile of 8 channels each, or 16 where int4 weights are the mma's A
// operand, at M <= 8) x up to 16 rows x a range of k chunks of 512. Per chunk it stages in shared
// memory x's rows < M, and for int4 the chunk's group parameters of its 64 (128) channels and x's
// group sums (xsum); the codes stream through registers.
#include <algorithm>
#include <cstdint>

#ifdef __CUDACC__
#define OPMETER_DECODE_HD __host__ __device__
#else
#define OPMETER_DECODE_HD
#endif

namespace opmeter::linear::gpu_decode {

inline constexpr int kChunkK = 512;  // k of x staged at once (a multiple of every int4 group)
inline constexpr int kWarps = 8;     // n-tiles per block
inline constexpr int kTileN = 8;     // channels per n-tile
inline constexpr int kTileNA = 16;   // channels per tile where int4 weights are the A operand
inline constexpr int kRows = 16;     // rows per block: one m16n8k16 tile
inline constexpr int kLanes = 32;
inline constexpr int kRing = 4;      // 16-byte code units in flight per lane
inline constexpr int kBlocksPerSm = 3;  // resident at once (<= 80 registers a thread)
inline constexpr int kMinGroup = 16;
inline constexpr int kMaxGroupsPerChunk = kChunkK / kMinGroup;

// xsum[r][q] = sum of x[r][k] over group q of the chunk, by whole warps: slot i (one lane) sums
// `per` consecutive k of one row, then `lanes` neighbouring lanes (one group) add up with xor
// shuffles (offsets lanes/2 .. 1), and the first of them writes. lanes divides 32 and a row's
// slots, so a lane group never straddles two groups, rows or warps.
struct XsumPlan {
  int per = 8, lanes = 1, slots_per_row = kChunkK / 8;
};
OPMETER_DECODE_HD constexpr XsumPlan xsum_plan(int group) {
  const int per = group / kLanes > 8 ? group / kLanes : 8;
  return {per, group / per, kChunkK / per};
}
OPMETER_DECODE_HD constexpr int xsum_row(const XsumPlan& p, int slot) { return slot / p.slots_per_row; }
OPMETER_DECODE_HD constexpr int xsum_k(const XsumPlan& p, int slot) { return slot % p.slots_per_row * p.per; }
OPMETER_DECODE_HD constexpr int xsum_group(const XsumPlan& p, int slot) { return slot % p.slots_per_row / p.lanes; }
OPMETER_DECODE_HD constexpr bool xsum_writes(const XsumPlan& p, int lane) { return lane % p.lanes == 0; }

// PTX's lop3.b32 on the CPU: bit i of the result is bit (a_i << 2 | b_i << 1 | c_i) of `lut`.
// The kernels decode codes with one lop3 each, `(a & mask) | exponent`: written as an and and an
// or, two constants, the compiler emits two LOP3s (a LOP3 takes one immediate), and the H200's
// SASS (2026-11-27) had 64 LOP3s per 8 mma in the int8 step loop where 32 do.
OPMETER_DECODE_HD constexpr std::uint32_t lop3(std::uint32_t a, std::uint32_t b, std::uint32_t c, unsigned lut) {
  std::uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    const unsigned row = ((a >> i) & 1u) << 2 | ((b >> i) & 1u) << 1 | ((c >> i) & 1u);
    r |= ((lut >> row) & 1u) << i;
  }
  return r;
}
// lop3's truth tables of its inputs a, b, c, and the two the decodes use.
inline constexpr unsigned kLutA = 0xF0, kLutB = 0xCC, kLutC = 0xAA;
inline constexpr unsigned kLutAndOr = (kLutA & kLutB) | kLutC;              // (a & b) | c
inline constexpr unsigned kLutAndNotOr = (~kLutA & 0xFFu & kLutB) | kLutC;  // (~a & b) | c

// bf16's exponent of 128 in both halves of a register (and fp16's of 1024): a code in the low
// mantissa bits reads as 128 + code (1024 + code).
inline constexpr std::uint32_t kBf16Exponent128 = 0x43004300u;
inline constexpr std::uint32_t kHalfExponent1024 = 0x64006400u;
inline constexpr std::uint32_t kInt8LowBits = 0x007F007Fu, kInt8TopBit = 0x00800080u, kNibble0 = 0x000F000Fu;

// int8 codes (stored + 128: u = code + 128) to bf16, exactly: `spread` holds a pair's two bytes
// u0, u1 at bits 0-7 and 16-23 (the kernel's byte_perm).
// bf16 has 7 mantissa bits, so u (8 bits) cannot sit in one fixed-exponent mantissa; instead
//   high = 128 + (u & 127)                 (exponent 2^7, u's low 7 bits as mantissa)
//   low  = u < 128 ? 256 : 128             (exponent 2^8 or 2^7 from u's top bit, inverted)
// and high - low = u - 128, the code, an integer of [-128, 127] that bf16 holds exactly.
// With the byte_perm that is four instructions a pair (two LOP3s and a bf16x2 subtraction after
// it) where the float route took five.
// The kernel computes each as one lop3 (kLutAndOr, kLutAndNotOr) with these masks.
OPMETER_DECODE_HD constexpr std::uint32_t int8_bf16_high(std::uint32_t spread) {
  return (spread & kInt8LowBits) | kBf16Exponent128;
}
OPMETER_DECODE_HD constexpr std::uint32_t int8_bf16_low(std::uint32_t spread) {
  return (~spread & kInt8TopBit) | kBf16Exponent128;
}

// x's rows in shared memory are permuted within each 16 k (one mma step) so that a lane (g, t)
// reads its step's two A fragments, k 2t, 2t + 1 and 2t + 8, 2t + 9, as one 8-byte load at 4t:
// k -> its position. A group (16 k or a multiple, aligned) keeps its elements, so its sum does not
// change. kXStride: a row's length, 512 + 16, puts rows 32 bytes apart modulo 128, so the 8-byte
// loads of a half warp (rows g..g+3, t 0..3) hit 32 different banks.
inline constexpr int kXStride = kChunkK + 16;
OPMETER_DECODE_HD constexpr int x_position(int k) {
  const int r = k & 15;
  return (k & ~15) + ((r & 7) >> 1) * 4 + (r >> 3) * 2 + (r & 1);
}
// Staging a step's 16 k: its k pair j (0-7, in order) goes to 32-bit word x_staged_word_of(j) of
// the permuted step.
OPMETER_DECODE_HD constexpr int x_staged_word_of(int j) { return 2 * (j % 4) + j / 4; }

// The chunk's int4 group parameters in shared memory, [warp][group of the chunk][channel of the
// warp's tile of tile_n], room for `slots` groups a warp (a chunk's groups: 8 for groups of 64,
// where the kernel knows the group; kMaxGroupsPerChunk otherwise): a lane (g, t) reads its two
// channels in one load (the decode kernel keeps each as a float pair: 16 bytes). With weights as
// B those are channels 2t and 2t + 1, adjacent; as A (tile_n 16) channels g and g + 8, so there
// channel c sits at 2 (c % 8) + c / 8.
OPMETER_DECODE_HD constexpr int param_smem(int warp, int q, int channel, int tile_n = kTileN,
                                           int slots = kMaxGroupsPerChunk) {
  const int at = tile_n == kTileNA ? 2 * (channel % kTileN) + channel / kTileN : channel;
  return (warp * slots + q) * tile_n + at;
}
// Staging entry i (i < kWarps x tile_n channels x groups_per_chunk, consecutive i reading
// consecutive groups of one channel): where it goes in shared memory and which word of
// group_params ([padded_out][groups_per_row]) it copies; -1 for a zero (tile past the weight,
// group past K).
// `next`: the word the same entry copies for the next chunk, -1 past K (the kernel prefetches it
// into L2 while this chunk computes).
struct ParamCopy {
  int smem = 0;
  std::int64_t src = -1, next = -1;
};
OPMETER_DECODE_HD inline ParamCopy param_copy(int i, int groups_per_chunk, std::int64_t first_n_tile,
                                              std::int64_t n_tiles, std::int64_t groups_per_row,
                                              std::int64_t first_group, int tile_n = kTileN,
                                              int slots = kMaxGroupsPerChunk) {
  const int ch = i / groups_per_chunk, q = i % groups_per_chunk, warp = ch / tile_n, c = ch % tile_n;
  const std::int64_t nt = first_n_tile + warp, gi = first_group + q;
  ParamCopy p;
  p.smem = param_smem(warp, q, c, tile_n, slots);
  if (nt < n_tiles && gi < groups_per_row) p.src = (nt * tile_n + c) * groups_per_row + gi;
  if (p.src >= 0 && gi + groups_per_chunk < groups_per_row) p.next = p.src + groups_per_chunk;
  return p;
}

// Split s of `ksplit` takes chunks [s * per_split, min(n_chunks, (s + 1) * per_split)) and their
// code units [first chunk * units_per_chunk, min(k_units, end chunk * units_per_chunk)).
struct UnitRange {
  std::int64_t begin = 0, end = 0;
};
OPMETER_DECODE_HD inline UnitRange split_units(std::int64_t split, std::int64_t per_split, std::int64_t n_chunks,
                                               int units_per_chunk, std::int64_t k_units) {
  const std::int64_t c0 = split * per_split, c1 = c0 + per_split < n_chunks ? c0 + per_split : n_chunks;
  const std::int64_t u1 = c1 * units_per_chunk;
  return {c0 * units_per_chunk, u1 < k_units ? u1 : k_units};
}

// Chunks of `chunk_k` that cover k (at least one).
OPMETER_DECODE_HD constexpr std::int64_t chunk_count(std::int64_t k, std::int64_t chunk_k) {
  return k > chunk_k ? (k + chunk_k - 1) / chunk_k : 1;
}

// Whether `ks` splits of `n_chunks` chunks give every split a chunk (split s takes chunks from
// s x ceil(n_chunks / ks)): 16 chunks split 1, 2, 3, 4, 6, 8 or 16 ways, not 5 (4 x 4 leaves one
// empty).
OPMETER_DECODE_HD constexpr bool splits_evenly(std::int64_t n_chunks, std::int64_t ks) {
  if (ks < 1 || n_chunks < 1 || ks > n_chunks) return false;
  const std::int64_t per = (n_chunks + ks - 1) / ks;
  return (n_chunks + per - 1) / per == ks;
}

// What one chunk of K asks of a decode block: code units a lane streams (int4 4, int8 and fp8 8;
// twice as many as the A operand, whose tiles are twice as wide) and whether the chunk waits for
// its group parameters (int4).
struct ChunkWork {
  int units_per_lane = 8;
  bool group_params = false;
};
OPMETER_DECODE_HD constexpr ChunkWork chunk_work(bool int4, bool weights_a = false) {
  const int units = (int4 ? 4 : 8) * (weights_a ? 2 : 1);
  return {units, int4};
}

// A decode call's time, in memory round trips (~1 us each under load), for ksplit `ks` (-1 where
// some split would get no chunk). Each block waits:
//   - one round trip for its first codes, then one per kRing units a lane streams (the ring holds
//     kRing in flight), and for int4 one per chunk for its group parameters (read after the
//     chunk's barrier);
//   - where split, three more at its end: its partials written and fenced, the arrival counter,
//     the last block's reads of the partials.
// Blocks beyond what the SMs hold at once (kBlocksPerSm each) run in further waves, each as long
// as a block. The memory bounds it too: at the copy ceiling an SM streams about
// kBytesPerRoundTrip (4.8 TB/s x ~700 ns / 132 SMs) a round trip.
// On the H200 (2026-11-27, M = 1 in graphs over weight copies, the previous choice of splits) the
// four LLaMA-2-70B shard layers took 1.0-1.6 us a round trip counted so with int8wo (7.8-28.4 us
// for 6-24 of them), 1.5-2.0 us with int4wo-64. With the splits this model chose, later that day,
// forced splits (ksplit=) were no faster on 7 of those 8 layer x recipe pairs, but the times fell
// less than the round trips: the kernel was bound by the instructions it issued (Nsight
// Compute), and where one block filled each SM (attn.wo, int4) two splits beat the model's one.
inline constexpr double kBytesPerRoundTrip = 25e3;
inline double decode_round_trips(std::int64_t n_blocks, std::int64_t n_chunks, int sms, std::int64_t ks, ChunkWork w) {
  if (!splits_evenly(n_chunks, ks)) return -1;
  const std::int64_t per = (n_chunks + ks - 1) / ks;
  const std::int64_t slots = static_cast<std::int64_t>(kBlocksPerSm) * sms;
  const std::int64_t waves = (n_blocks * ks + slots - 1) / slots;
  const double per_chunk = double(w.units_per_lane) / kRing + (w.group_params ? 1 : 0);
  const double chain = 1 + double(per) * per_chunk + (ks > 1 ? 3 : 0);
  const double chunk_bytes = double(kWarps) * w.units_per_lane * kLanes * 16;
  const double stream = double(n_blocks) * double(n_chunks) * chunk_bytes / (double(sms) * kBytesPerRoundTrip);
  return std::max(double(waves) * chain, stream);
}

// The split-K factor for `n_blocks` blocks (n-blocks x row blocks) over `n_chunks` chunks of K on
// `sms` multiprocessors, at most `max_splits`: among the splits within 5% of the fewest round
// trips (decode_round_trips), the one that gives the most SMs a block, then the fewest splits
// (fewer partials). Every split gets chunks (as weight_only_ksplit makes them). The previous rule
// balanced chunks over the SMs, which took many short blocks in several waves, each paying its
// start and its split's end. The kernel is bound by the instructions it issues as much as by its
// round trips (the H200, 2026-11-27: attn.wo's int4 ran faster on 2 splits than on the 1 this
// model chose, 128 blocks on 132 SMs), so where round trips tie an idle SM decides.
inline int decode_ksplit(std::int64_t n_blocks, std::int64_t n_chunks, int sms, std::int64_t max_splits, ChunkWork w) {
  n_blocks = std::max<std::int64_t>(1, n_blocks);
  n_chunks = std::max<std::int64_t>(1, n_chunks);
  sms = std::max(1, sms);
  max_splits = std::clamp<std::int64_t>(max_splits, 1, n_chunks);
  double least = -1;
  for (std::int64_t ks = 1; ks <= max_splits; ++ks)
    if (const double c = decode_round_trips(n_blocks, n_chunks, sms, ks, w); c >= 0 && (least < 0 || c < least))
      least = c;
  std::int64_t best = 1, busiest = 0;
  for (std::int64_t ks = 1; ks <= max_splits; ++ks) {
    const double c = decode_round_trips(n_blocks, n_chunks, sms, ks, w);
    const std::int64_t busy = std::min<std::int64_t>(n_blocks * ks, sms);
    if (c >= 0 && c <= least * 1.05 && busy > busiest) {
      best = ks;
      busiest = busy;
    }
  }
  return static_cast<int>(best);
}

}  // namespace opmeter::linear::gpu_decode

#undef OPMETER_DECODE_HD
