// The decode kernel's index arithmetic (quant_gpu_decode.hpp), run on the CPU the way the kernel
// runs it: x's group sums by warps of 32 lanes with xor shuffles, the int4 group parameters copied
// from gpu_pack's layout to shared memory and read back by each lane, the split-K unit ranges, and
// the split choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "ops/linear/quant/quantize.hpp"
#include "ops/linear/quant_gpu_decode.hpp"
#include "ops/linear/quant_gpu_pack.hpp"
#include "opmeter/dtype.hpp"

using namespace opmeter;
namespace gd = opmeter::linear::gpu_decode;
namespace gp = opmeter::linear::gpu_pack;

TEST(QuantGpuDecode, XsumWarpsSumEveryGroupOfEveryRealRowOnce) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  for (int group : {16, 32, 64, 128, 256, 512})
    for (int rows : {1, 3, 16}) {
      std::vector<std::vector<float>> x(rows, std::vector<float>(gd::kChunkK));
      for (auto& r : x)
        for (auto& v : r) v = dist(gen);
      const gd::XsumPlan p = gd::xsum_plan(group);
      ASSERT_EQ(gd::kLanes % p.lanes, 0) << group;
      ASSERT_EQ(p.per % 8, 0) << group;  // whole 16-byte shared loads
      const int groups = gd::kChunkK / group, slots = rows * p.slots_per_row;
      std::vector<std::vector<double>> sum(rows, std::vector<double>(groups, 0.0));
      std::vector<std::vector<int>> writes(rows, std::vector<int>(groups, 0));
      for (int base = 0; base < slots; base += gd::kLanes) {  // one warp's pass
        std::array<double, gd::kLanes> s{};
        for (int lane = 0; lane < gd::kLanes; ++lane) {
          const int i = base + lane;
          if (i >= slots) continue;
          const int r = gd::xsum_row(p, i), k = gd::xsum_k(p, i);
          for (int j = 0; j < p.per; ++j) s[lane] += x[r][k + j];
        }
        for (int o = p.lanes / 2; o > 0; o /= 2) {  // __shfl_xor_sync: every lane at once
          std::array<double, gd::kLanes> n{};
          for (int lane = 0; lane < gd::kLanes; ++lane) n[lane] = s[lane] + s[lane ^ o];
          s = n;
        }
        for (int lane = 0; lane < gd::kLanes; ++lane) {
          const int i = base + lane;
          if (i >= slots || !gd::xsum_writes(p, lane)) continue;
          const int r = gd::xsum_row(p, i), q = gd::xsum_group(p, i);
          ASSERT_LT(r, rows);
          ASSERT_LT(q, groups);
          sum[r][q] = s[lane];
          ++writes[r][q];
        }
      }
      for (int r = 0; r < rows; ++r)
        for (int q = 0; q < groups; ++q) {
          double want = 0.0;
          for (int k = q * group; k < (q + 1) * group; ++k) want += x[r][k];
          EXPECT_EQ(writes[r][q], 1) << "group " << group << " row " << r << " q " << q;
          EXPECT_NEAR(sum[r][q], want, 1e-9) << "group " << group << " row " << r << " q " << q;
        }
    }
}

TEST(QuantGpuDecode, EachLaneReadsItsChannelsGroupParamsFromTheCopy) {
  // 20 channels (3 n-tiles of 8, 24 padded; or 2 of 16 as the A operand, 32 padded), hidden 1536
  // in groups of 64: 24 groups a row, chunks of 8.
  quant::QuantizedWeights q;
  q.recipe = *quant::parse_recipe("int4wo-64");
  q.out = 20;
  q.hidden = 1536;
  const std::size_t groups = q.hidden / 64;
  for (std::size_t i = 0; i < q.out * groups; ++i) {
    q.scales.push_back(0.5f + float(i % 64));  // exact in bf16
    q.zeros.push_back(float(i % 16));
  }
  const int per_chunk = gd::kChunkK / 64;
  // Room for every group size's groups, or for a chunk's 8 (groups of 64 known to the kernel).
  for (const int slots : {gd::kMaxGroupsPerChunk, per_chunk})
    for (const int tile_n : {gd::kTileN, gd::kTileNA}) {
      const std::size_t n_tiles = (q.out + tile_n - 1) / tile_n;
      const auto words = gp::pack_group_params(q, n_tiles * tile_n, Elem::bf16);
      for (std::int64_t chunk = 0; chunk < 3; ++chunk) {
        std::vector<std::uint32_t> smem(gd::kWarps * slots * tile_n, 0xDEADBEEFu);
        std::vector<int> stores(smem.size(), 0);
        const int copies = gd::kWarps * tile_n * per_chunk;
        for (int i = 0; i < copies; ++i) {
          const auto c = gd::param_copy(i, per_chunk, 0, n_tiles, groups, chunk * per_chunk, tile_n, slots);
          ASSERT_GE(c.smem, 0);
          ASSERT_LT(std::size_t(c.smem), smem.size());
          smem[c.smem] = c.src >= 0 ? words.at(c.src) : 0u;
          ++stores[c.smem];
          if (i + 1 < copies && (i + 1) % per_chunk != 0 && c.src >= 0) {  // coalesced: the next group
            EXPECT_EQ(gd::param_copy(i + 1, per_chunk, 0, n_tiles, groups, chunk * per_chunk, tile_n, slots).src,
                      c.src + 1);
          }
          // What it prefetches is what the same entry copies for the next chunk; none past K (3 chunks).
          const auto later = gd::param_copy(i, per_chunk, 0, n_tiles, groups, (chunk + 1) * per_chunk, tile_n, slots);
          EXPECT_EQ(c.next, chunk + 1 < 3 ? later.src : -1) << "entry " << i << " chunk " << chunk;
        }
        // A lane (g, t) reads two neighbouring entries: channels 2t, 2t + 1 of its warp's tile as B,
        // channels g, g + 8 as A (mma fragments' channels, from PTX's m16n8k16 layouts).
        for (int w = 0; w < gd::kWarps; ++w)
          for (int gq = 0; gq < per_chunk; ++gq)
            for (int lane = 0; lane < gd::kLanes; ++lane)
              for (int e = 0; e < 2; ++e) {
                const int g = lane / 4, t = lane % 4;
                const int first = tile_n == gd::kTileNA ? g : 2 * t,
                          channel = tile_n == gd::kTileNA ? g + 8 * e : 2 * t + e;
                const int at = gd::param_smem(w, gq, first, tile_n, slots) + e;
                EXPECT_EQ(stores[at], 1);
                const std::size_t j = std::size_t(w) * tile_n + channel, gi = std::size_t(chunk * per_chunk + gq);
                const std::uint32_t want = j < q.out ? std::uint32_t{to_bf16(q.scales[j * groups + gi])} |
                                                           std::uint32_t{to_bf16(q.zeros[j * groups + gi])} << 16
                                                     : 0u;
                EXPECT_EQ(smem[at], want) << "slots " << slots << " tile " << tile_n << " warp " << w << " group " << gq
                                          << " lane " << lane << " +" << e;
              }
      }
      // A group past K (the last chunk of a K that is not a multiple of the chunk) copies a zero.
      EXPECT_EQ(gd::param_copy(0, per_chunk, 0, n_tiles, groups, std::int64_t(groups), tile_n).src, -1);
    }
}

// The kernel's int8 -> bf16 decode: bf16(high) - bf16(low) is the code for every stored byte,
// and both halves of a register decode independently.
TEST(QuantGpuDecode, Int8CodesDecodeToBf16Exactly) {
  const auto half_value = [](std::uint32_t word, int half) {
    return from_bf16(static_cast<std::uint16_t>(word >> (16 * half)));
  };
  for (int u = 0; u < 256; ++u) {
    const int v = 255 - u;  // the other half holds another code
    const std::uint32_t spread = static_cast<std::uint32_t>(u) | static_cast<std::uint32_t>(v) << 16;
    const std::uint32_t high = gd::int8_bf16_high(spread), low = gd::int8_bf16_low(spread);
    for (int h = 0; h < 2; ++h) {
      const int stored = h == 0 ? u : v;
      const float hi = half_value(high, h), lo = half_value(low, h);
      EXPECT_EQ(hi - lo, float(stored - 128)) << "stored byte " << stored;
      // The difference is an integer bf16 holds, so the kernel's bf16 subtraction is exact too.
      EXPECT_EQ(from_bf16(to_bf16(hi - lo)), hi - lo) << stored;
      EXPECT_TRUE(hi >= 128.f && hi < 256.f && (lo == 128.f || lo == 256.f)) << stored;
    }
  }
}

// The kernels' one-instruction decodes: lop3 with the tables and masks they pass is the decode's
// and + or, and the CPU lop3 is PTX's (its manual's examples: 0x96 is a ^ b ^ c, 0x80 a & b & c).
TEST(QuantGpuDecode, Lop3DecodesAreTheAndOrForms) {
  std::mt19937 gen(5);
  for (int i = 0; i < 2000; ++i) {
    const std::uint32_t a = gen(), b = gen(), c = gen();
    ASSERT_EQ(gd::lop3(a, b, c, gd::kLutA), a);
    ASSERT_EQ(gd::lop3(a, b, c, gd::kLutB), b);
    ASSERT_EQ(gd::lop3(a, b, c, gd::kLutC), c);
    ASSERT_EQ(gd::lop3(a, b, c, 0x96), a ^ b ^ c);
    ASSERT_EQ(gd::lop3(a, b, c, 0x80), a & b & c);
    ASSERT_EQ(gd::lop3(a, gd::kInt8LowBits, gd::kBf16Exponent128, gd::kLutAndOr), gd::int8_bf16_high(a)) << a;
    ASSERT_EQ(gd::lop3(a, gd::kInt8TopBit, gd::kBf16Exponent128, gd::kLutAndNotOr), gd::int8_bf16_low(a)) << a;
    // int4: nibbles 0 and 16 read as 128 + nibble in bf16 and 1024 + nibble in fp16.
    const std::uint32_t b16 = gd::lop3(a, gd::kNibble0, gd::kBf16Exponent128, gd::kLutAndOr);
    const std::uint32_t f16 = gd::lop3(a, gd::kNibble0, gd::kHalfExponent1024, gd::kLutAndOr);
    for (int h = 0; h < 2; ++h) {
      const float nibble = float((a >> (16 * h)) & 0xFu);
      ASSERT_EQ(from_bf16(static_cast<std::uint16_t>(b16 >> (16 * h))), 128.f + nibble) << a;
      ASSERT_EQ(from_fp16(static_cast<std::uint16_t>(f16 >> (16 * h))), 1024.f + nibble) << a;
    }
  }
}

// x staged permuted: each lane's 8-byte load of a step holds its A fragments' k, the staging's
// words go where x_position says, a group keeps its k, and a half warp's loads hit 32 banks.
TEST(QuantGpuDecode, PermutedXGivesEachLaneItsFragmentsInOneLoad) {
  std::vector<int> seen(gd::kChunkK, 0);
  for (int k = 0; k < gd::kChunkK; ++k) {
    const int p = gd::x_position(k);
    ASSERT_GE(p, k / 16 * 16);
    ASSERT_LT(p, k / 16 * 16 + 16) << k;  // within its step: groups of 16 and up keep their k
    ++seen[p];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), gd::kChunkK);
  for (int step = 0; step < gd::kChunkK / 16; ++step)
    for (int t = 0; t < 4; ++t) {
      // The mma's A fragments of lane (g, t): a0 holds k 2t, 2t + 1; a2 holds 2t + 8, 2t + 9.
      const int k0 = 16 * step + 2 * t;
      const int at = 16 * step + 4 * t;  // where the lane's one 8-byte load starts
      EXPECT_EQ(gd::x_position(k0), at);
      EXPECT_EQ(gd::x_position(k0 + 1), at + 1);
      EXPECT_EQ(gd::x_position(k0 + 8), at + 2);
      EXPECT_EQ(gd::x_position(k0 + 9), at + 3);
    }
  for (int j = 0; j < 8; ++j) {  // k pair j of a step is staged as word x_staged_word_of(j)
    EXPECT_EQ(gd::x_position(2 * j), 2 * gd::x_staged_word_of(j)) << j;
    EXPECT_EQ(gd::x_position(2 * j + 1), 2 * gd::x_staged_word_of(j) + 1) << j;
  }
  const int row_bytes = gd::kXStride * 2;
  for (int half = 0; half < 2; ++half) {  // a warp's 8-byte loads go in two phases of 16 lanes
    std::vector<int> banks;
    for (int lane = 16 * half; lane < 16 * half + 16; ++lane) {
      const int g = lane / 4, t = lane % 4, byte = g * row_bytes + 8 * t;
      banks.push_back(byte % 128 / 4);
      banks.push_back(byte % 128 / 4 + 1);
    }
    std::sort(banks.begin(), banks.end());
    EXPECT_EQ(std::adjacent_find(banks.begin(), banks.end()), banks.end()) << "bank conflict, phase " << half;
  }
  EXPECT_EQ(row_bytes % 16, 0);  // rows of whole 16-byte stores
}

TEST(QuantGpuDecode, SplitsCoverEveryCodeUnitOnce) {
  for (std::int64_t K : {64, 512, 520, 4096, 28672})
    for (int unit_k : {64, 128}) {
      const std::int64_t k_units = (K + unit_k - 1) / unit_k, n_chunks = (K + gd::kChunkK - 1) / gd::kChunkK;
      const int per_chunk = gd::kChunkK / unit_k;
      for (int want : {1, 2, 3, 5, 8, 64}) {
        // weight_only_ksplit's rule: every split gets chunks.
        const std::int64_t w = std::min<std::int64_t>(want, n_chunks), per = (n_chunks + w - 1) / w;
        const std::int64_t ks = (n_chunks + per - 1) / per;
        std::int64_t next = 0;
        for (std::int64_t s = 0; s < ks; ++s) {
          const auto r = gd::split_units(s, per, n_chunks, per_chunk, k_units);
          EXPECT_EQ(r.begin, next) << K << " split " << s;
          EXPECT_GT(r.end, r.begin) << K << " split " << s << " of " << ks;  // every split has work
          EXPECT_EQ(r.begin % per_chunk, 0);                                  // starts on a chunk
          next = r.end;
        }
        EXPECT_EQ(next, k_units) << K << " want " << want;
      }
    }
}

// Round trips by hand (H100 / H200: 132 SMs, 3 blocks an SM = 396 at once; a chunk of int4 or
// int8 is 2 round trips; a block of int8 streams 32 KB a chunk, of int4 16 KB).
TEST(QuantGpuDecode, RoundTripsCountWavesTheBlocksChainAndTheMemory) {
  const gd::ChunkWork int8 = gd::chunk_work(false), int4 = gd::chunk_work(true);
  EXPECT_EQ(int8.units_per_lane, 8);
  EXPECT_EQ(int4.units_per_lane, 4);
  EXPECT_TRUE(int4.group_params && !int8.group_params);
  // ffn.w13 (7168 out: 112 blocks; K 8192: 16 chunks) in 8 splits: 896 blocks, 3 waves of
  // 1 + 2 x 2 + 3 = 8.
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(112, 16, 132, 8, int8), 24);
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(112, 16, 132, 8, int4), 24);
  // In 3 splits: one wave of 1 + 6 x 2 + 3 = 16; int8's 112 x 16 x 32 KB read at 25 KB a round
  // trip on each of 132 SMs take longer: 17.8.
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(112, 16, 132, 3, int4), 16);
  EXPECT_NEAR(gd::decode_round_trips(112, 16, 132, 3, int8), 112.0 * 16 * 32768 / (132 * 25e3), 1e-9);
  // Unsplit: no end of split: 1 + 16 x 2.
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(112, 16, 132, 1, int4), 33);
  // 5 splits of 16 chunks are 4 of 4: one split would get none.
  EXPECT_LT(gd::decode_round_trips(112, 16, 132, 5, int4), 0);
}

TEST(QuantGpuDecode, KsplitTakesTheFewestRoundTrips) {
  const gd::ChunkWork int8 = gd::chunk_work(false), int4 = gd::chunk_work(true);
  // LLaMA-2-70B's shards on 132 SMs. ffn.w13: 3 splits (16 and 17.8 round trips; 8 splits were 24).
  EXPECT_EQ(gd::decode_ksplit(112, 16, 132, 1 << 20, int4), 3);
  EXPECT_EQ(gd::decode_ksplit(112, 16, 132, 1 << 20, int8), 3);
  // ffn.w2 (8192 out: 128 blocks; K 3584: 7 chunks): 3 splits, one wave of 1 + 3 x 2 + 3 = 10
  // (7 splits: 896 blocks in 3 waves of 6 = 18).
  EXPECT_EQ(gd::decode_ksplit(128, 7, 132, 1 << 20, int8), 3);
  // attn.wqkv (1280 out: 20 blocks; 16 chunks): 16 splits, one wave of 1 + 2 + 3 = 6.
  EXPECT_EQ(gd::decode_ksplit(20, 16, 132, 1 << 20, int4), 16);
  // attn.wo (8192 out; K 1024: 2 chunks): unsplit, 1 + 2 x 2 = 5 against 1 + 2 + 3 = 6.
  EXPECT_EQ(gd::decode_ksplit(128, 2, 132, 1 << 20, int4), 1);
  // 4096 x 4096 (64 blocks, 8 chunks): 4 splits (1 + 2 x 2 + 3 = 8; 8 splits: 1 + 2 + 3 = 6,
  // but 512 blocks are 2 waves).
  EXPECT_EQ(gd::decode_ksplit(64, 8, 132, 1 << 20, int8), 4);
  // int4 as the A operand (M <= 8): tiles of 16 channels, so half the blocks, each streaming 8
  // units a lane (32 KB) a chunk: 3 round trips a chunk.
  const gd::ChunkWork int4a = gd::chunk_work(true, true);
  EXPECT_EQ(int4a.units_per_lane, 8);
  EXPECT_TRUE(int4a.group_params);
  // ffn.w13 (56 blocks): 6 splits, one wave of 1 + 3 x 3 + 3 = 13 (4: 16; 8: two waves of 10).
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(56, 16, 132, 6, int4a), 13);
  EXPECT_EQ(gd::decode_ksplit(56, 16, 132, 1 << 20, int4a), 6);
  // ffn.w2 (64 blocks, 7 chunks): 4 splits of 2 chunks, 1 + 2 x 3 + 3 = 10 (7 splits: two waves of 7).
  EXPECT_EQ(gd::decode_ksplit(64, 7, 132, 1 << 20, int4a), 4);
  // attn.wo (64 blocks, 2 chunks): 1 + 2 x 3 = 7 unsplit and 1 + 3 + 3 = 7 in 2; the tie goes to
  // the 128 SMs of 2 splits over the 64 of one.
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(64, 2, 132, 1, int4a), 7);
  EXPECT_DOUBLE_EQ(gd::decode_round_trips(64, 2, 132, 2, int4a), 7);
  EXPECT_EQ(gd::decode_ksplit(64, 2, 132, 1 << 20, int4a), 2);
  // attn.wqkv (10 blocks): 16 splits, 1 + 3 + 3 = 7.
  EXPECT_EQ(gd::decode_ksplit(10, 16, 132, 1 << 20, int4a), 16);
  // int8 as A (the integer kernel): a step a unit, 16 units a chunk, 4 round trips; 64 KB a block.
  const gd::ChunkWork int8a = gd::chunk_work(false, true);
  EXPECT_EQ(int8a.units_per_lane, 16);
  EXPECT_FALSE(int8a.group_params);
  // ffn.w13 (56 blocks): 6 splits, 1 + 3 x 4 + 3 = 16 round trips, under the memory's floor of
  // 56 x 16 x 64 KB at 25 KB a round trip on 132 SMs (17.8); 4 splits: 20, 8: two waves of 12.
  EXPECT_NEAR(gd::decode_round_trips(56, 16, 132, 6, int8a), 56.0 * 16 * 65536 / (132 * 25e3), 1e-9);
  EXPECT_EQ(gd::decode_ksplit(56, 16, 132, 1 << 20, int8a), 6);
  // The partials' budget bounds it; one chunk is never split; no SM count still gives a split.
  EXPECT_EQ(gd::decode_ksplit(112, 16, 132, 2, int4), 2);
  EXPECT_EQ(gd::decode_ksplit(64, 1, 132, 1 << 20, int8), 1);
  EXPECT_EQ(gd::decode_ksplit(1, 1, 0, 0, int8), 1);
}
