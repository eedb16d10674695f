// Ceilings most of their results beat: named once, with the counts, whatever flagged (or did not
// flag) them contended.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "analysis/exceeded_ceilings.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::fixtures;

namespace {

Result rated(const std::string& kase, double gflops, double peak) {
  auto r = measured(kase, 1e-3);
  r.gflops = gflops;
  apply_peak(r, peak, "peak/opmeter/fp32/kernel=fma/threads=2");
  return r;
}

}  // namespace

TEST(ExceededCeilings, APeakMostResultsBeatIsNamed) {
  const std::string gemm = "gemm/onednn/fp32/M=64,N=64,K={}/threads=2";
  std::vector<Result> results;
  for (int k : {64, 128, 256}) results.push_back(rated(fmt::format(fmt::runtime(gemm), k), 90, 6.3));
  results.push_back(rated(fmt::format(fmt::runtime(gemm), 512), 5, 6.3));
  auto w = exceeded_ceilings(results);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("the peak 6.3 GFLOP/s (measured by peak/opmeter/fp32/kernel=fma/threads=2) is below what 3 of "
                       "the 4 results rated against it reached",
                       0),
            0u)
      << w[0];
}

TEST(ExceededCeilings, OneOutlierOrAMinorityIsNoSuspectCeiling) {
  const std::string gemm = "gemm/onednn/fp32/M=64,N=64,K={}/threads=2";
  std::vector<Result> results{rated(fmt::format(fmt::runtime(gemm), 64), 400, 350)};  // one above: noise
  EXPECT_TRUE(exceeded_ceilings(results).empty());
  for (int k : {128, 256, 512, 1024}) results.push_back(rated(fmt::format(fmt::runtime(gemm), k), 200, 350));
  results.push_back(rated(fmt::format(fmt::runtime(gemm), 2048), 400, 350));  // 2 of 6 above
  EXPECT_TRUE(exceeded_ceilings(results).empty());
}

// Hot data reads faster than memory: the bandwidth ceiling is suspect only when cold cases beat it.
TEST(ExceededCeilings, HotCasesAboveBandwidthAreNoEvidence) {
  std::vector<Result> results;
  for (int n : {1024, 2048, 4096}) {
    auto r = measured(fmt::format("silu/opmeter/fp32/batch=1,seq=1,hidden={}/threads=2,hot", n), 1e-6);
    r.gbps = 100;
    r.cache = "hot";
    apply_roofline(r, 15, "bandwidth/opmeter/fp32/kernel=read,n=67108864/threads=2");
    results.push_back(r);
  }
  EXPECT_TRUE(exceeded_ceilings(results).empty());
  for (auto& r : results) {
    r.cache = "cold";
    r.flags.clear();
    apply_roofline(r, 15, "bandwidth/opmeter/fp32/kernel=read,n=67108864/threads=2");
  }
  auto w = exceeded_ceilings(results);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("the memory bandwidth 15 GB/s (measured by bandwidth/opmeter"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("3 of the 3 results"), std::string::npos) << w[0];
}
