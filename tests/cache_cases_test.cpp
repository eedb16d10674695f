// The calibration's cache read cases: hot, and sized inside the level they measure.
#include <gtest/gtest.h>

#include "cli/cache_cases.hpp"

using namespace opmeter;

namespace {
std::size_t array_bytes(const Case& c) { return std::stoull(c.get("n")) * 4; }
const std::vector<CacheLevel> kCaches = {
    {.level = 1, .type = "Data", .bytes = 48 << 10, .shared_by = 2},  // one core, two hyperthreads
    {.level = 1, .type = "Instruction", .bytes = 32 << 10, .shared_by = 2},
    {.level = 2, .type = "Unified", .bytes = 2 << 20, .shared_by = 2},
    {.level = 3, .type = "Unified", .bytes = 32 << 20, .shared_by = 16},
};
}  // namespace

TEST(CacheCases, HotAndHalfOfWhatTheThreadsReach) {
  // 4 threads over cores of 2 hyperthreads: 2 L1d and 2 L2 instances, one L3.
  auto cases = cache_read_cases(kCaches, 4, 64 << 20);
  ASSERT_EQ(cases.size(), 3u);  // no instruction cache
  std::vector<std::size_t> want = {2 * (48 << 10) / 2, 2 * (2 << 20) / 2, (32 << 20) / 2};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i].kase;
    EXPECT_TRUE(c.hot) << c.to_string();  // no rotating copies: cold copies would read DRAM
    EXPECT_EQ(c.op, "bandwidth");
    EXPECT_EQ(c.get("kernel"), "read");
    EXPECT_EQ(c.threads, 4);
    EXPECT_EQ(cases[i].level, static_cast<int>(i) + 1);
    EXPECT_EQ(array_bytes(c), want[i]) << c.to_string();
    EXPECT_LE(array_bytes(c), cases[i].capacity / 2);
    // A call reads the array often enough to read at least 8 MiB; the L3's half once (no passes).
    const std::size_t passes = c.has("passes") ? std::stoull(c.get("passes")) : 1;
    EXPECT_GE(passes * array_bytes(c), std::size_t{8} << 20) << c.to_string();
    EXPECT_LT((passes - 1) * array_bytes(c), std::size_t{8} << 20) << c.to_string();
  }
  EXPECT_EQ(cases[0].kase.get("passes"), "171");  // ceil(8 MiB / 48 KiB)
  EXPECT_FALSE(cases[2].kase.has("passes"));
}

TEST(CacheCases, UnknownSharingIsPrivateUpToL2AndTheLastLevelIsCapped) {
  std::vector<CacheLevel> caches = {{1, "Data", 32 << 10}, {2, "Unified", 1 << 20}, {3, "Unified", 508 << 20}};
  auto cases = cache_read_cases(caches, 2, 96 << 20);  // a VM reporting its host's L3
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(array_bytes(cases[0].kase), 2 * (32 << 10) / 2);  // private: one per thread
  EXPECT_EQ(array_bytes(cases[1].kase), 2 * (1 << 20) / 2);
  EXPECT_EQ(array_bytes(cases[2].kase), (96 << 20) / 2);  // shared, at the size opmeter believes
  // One thread: half of one instance each.
  auto one = cache_read_cases(caches, 1, 96 << 20);
  EXPECT_EQ(array_bytes(one[0].kase), (32 << 10) / 2);
  EXPECT_EQ(array_bytes(one[1].kase), (1 << 20) / 2);
}

TEST(CacheCases, CpuListCount) {
  EXPECT_EQ(cpu_list_count("0"), 1);
  EXPECT_EQ(cpu_list_count("0-1"), 2);
  EXPECT_EQ(cpu_list_count("0-3,8-11,16"), 9);
  EXPECT_EQ(cpu_list_count(""), 0);
  EXPECT_EQ(cpu_list_count("x"), 0);
  EXPECT_EQ(cpu_list_count("3-1"), 0);
}
