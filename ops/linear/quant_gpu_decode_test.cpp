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
  // 20 channels (3 n-tiles, 24 padded), hidden 1536 in groups of 64: 24 groups a row, chunks of 8.
  quant::QuantizedWeights q;
  q.recipe = *quant::parse_recipe("int4wo-64");
  q.out = 20;
  q.hidden = 1536;
  const std::size_t groups = q.hidden / 64;
  for (std::size_t i = 0; i < q.out * groups; ++i) {
    q.scales.push_back(0.5f + float(i % 64));  // exact in bf16
    q.zeros.push_back(float(i % 16));
  }
  const std::size_t n_tiles = 3;
  const auto words = gp::pack_group_params(q, n_tiles * gp::kTileN, Elem::bf16);
  const int per_chunk = gd::kChunkK / 64;
  for (std::int64_t chunk = 0; chunk < 3; ++chunk) {
    std::vector<std::uint32_t> smem(gd::kWarps * gd::kMaxGroupsPerChunk * gd::kTileN, 0xDEADBEEFu);
    std::vector<int> stores(smem.size(), 0);
    const int copies = gd::kWarps * gd::kTileN * per_chunk;
    for (int i = 0; i < copies; ++i) {
      const auto c = gd::param_copy(i, per_chunk, 0, n_tiles, groups, chunk * per_chunk);
      ASSERT_GE(c.smem, 0);
      ASSERT_LT(std::size_t(c.smem), smem.size());
      smem[c.smem] = c.src >= 0 ? words.at(c.src) : 0u;
      ++stores[c.smem];
      if (i + 1 < copies && (i + 1) % per_chunk != 0 && c.src >= 0) {  // coalesced: the next group
        EXPECT_EQ(gd::param_copy(i + 1, per_chunk, 0, n_tiles, groups, chunk * per_chunk).src, c.src + 1);
      }
    }
    for (int w = 0; w < gd::kWarps; ++w)
      for (int g = 0; g < per_chunk; ++g)
        for (int t = 0; t < 4; ++t)
          for (int e = 0; e < 2; ++e) {  // the lane's uint2: channels 2t, 2t + 1
            const int at = gd::param_smem(w, g, 2 * t) + e;
            EXPECT_EQ(stores[at], 1);
            const std::size_t j = std::size_t(w) * gp::kTileN + 2 * t + e, gi = std::size_t(chunk * per_chunk + g);
            const std::uint32_t want =
                j < q.out ? std::uint32_t{to_bf16(q.scales[j * groups + gi])} | std::uint32_t{to_bf16(q.zeros[j * groups + gi])} << 16
                          : 0u;
            EXPECT_EQ(smem[at], want) << "warp " << w << " group " << g << " lane t " << t << " +" << e;
          }
  }
  // A group past K (the last chunk of a K that is not a multiple of the chunk) copies a zero.
  EXPECT_EQ(gd::param_copy(0, per_chunk, 0, n_tiles, groups, std::int64_t(groups)).src, -1);
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

TEST(QuantGpuDecode, KsplitFillsEverySmAndBalancesThem) {
  // H100 / H200: 132 SMs. 4096 out (64 blocks) x K 4096 (8 chunks): 8 splits, 512 blocks of one chunk.
  EXPECT_EQ(gd::decode_ksplit(64, 8, 132, 1 << 20), 8);
  // 12288 out (192 blocks): 2 splits (384 blocks, 3 an SM at most, 4 chunks each) cost as little as 8.
  EXPECT_EQ(gd::decode_ksplit(192, 8, 132, 1 << 20), 2);
  // 16384 out (256 blocks) is < 2 an SM unsplit: 2 splits.
  EXPECT_EQ(gd::decode_ksplit(256, 8, 132, 1 << 20), 2);
  // 4096 out x K 16384 (32 chunks): 8 splits of 4 chunks.
  EXPECT_EQ(gd::decode_ksplit(64, 32, 132, 1 << 20), 8);
  // LLaMA-2-70B's Wqkv (10240 out, 160 blocks) x K 8192 (16 chunks): 4 splits (640 blocks of 4).
  EXPECT_EQ(gd::decode_ksplit(160, 16, 132, 1 << 20), 4);
  // Enough blocks unsplit (8 splits would be 63 rounds against 64: not worth it); one chunk; the
  // partials' budget.
  EXPECT_EQ(gd::decode_ksplit(1024, 8, 132, 1 << 20), 1);
  EXPECT_EQ(gd::decode_ksplit(64, 1, 132, 1 << 20), 1);
  EXPECT_EQ(gd::decode_ksplit(64, 8, 132, 3), 3);  // too few blocks whatever: the most allowed
  EXPECT_EQ(gd::decode_ksplit(1, 1, 0, 0), 1);
}
