// Every efficiency above its ceiling is flagged, with the ceiling and what measured it named.
#include <gtest/gtest.h>

#include "opmeter/result.hpp"
#include "engine/runner.hpp"

using namespace opmeter;

namespace {
// A result of `flops` and `bytes` per call at `median_s`.
Result timed(const std::string& kase, double flops, double bytes, double median_s) {
  Result r;
  r.kase = parse_case(kase);
  r.case_string = r.kase.to_string();
  r.cache = r.kase.hot ? "hot" : "cold";
  r.work = {flops, bytes, 0};
  r.summary.median = median_s;
  derive_rates(r);
  return r;
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(CeilingFlags, AboveThePeakBandwidthOrRooflineEachFlaggedWithItsCeiling) {
  // 238 GFLOP/s at 2 FLOP/B (119 GB/s): peak 100 GFLOP/s, memory 93.7 GB/s.
  Result r = timed("gemm/onednn/fp32/M=64,N=64,K=64/threads=2,hot", 238e9, 119e9, 1.0);
  apply_peak(r, 100, "peak/opmeter/fp32/kernel=fma/threads=2");
  apply_roofline(r, 93.7, "the calibration profile of 2026-11-25T10:00:00Z");
  EXPECT_NEAR(*r.pct_peak, 238, 1e-9);
  EXPECT_NEAR(*r.pct_bandwidth, 100 * 119 / 93.7, 1e-9);
  // Roofline: min(100, 2 x 93.7) = 100 (the peak): 238%.
  EXPECT_NEAR(*r.efficiency, 2.38, 1e-12);
  for (auto* f : {"faster-than-peak", "faster-than-bandwidth", "above-roofline"}) EXPECT_TRUE(r.has_flag(f)) << f;
  EXPECT_TRUE(has(r.details["faster-than-peak"], "238.0% of the peak 100 GFLOP/s, measured by peak/opmeter/fp32/kernel=fma/threads=2"))
      << r.details["faster-than-peak"];
  EXPECT_TRUE(has(r.details["faster-than-bandwidth"], "127.0% of the memory bandwidth 93.7 GB/s, measured by the calibration profile"))
      << r.details["faster-than-bandwidth"];
  EXPECT_TRUE(has(r.details["faster-than-bandwidth"], "stays in cache (hot)")) << r.details["faster-than-bandwidth"];
  EXPECT_TRUE(has(r.details["above-roofline"], "the peak 100 GFLOP/s")) << r.details["above-roofline"];
}

TEST(CeilingFlags, AMemoryBoundRooflineNamesTheBandwidth) {
  // 0.25 FLOP/B: roofline = 0.25 x 40 GB/s = 10 GFLOP/s; 12.4 GFLOP/s is 124% of it.
  Result r = timed("layernorm/opmeter/fp32/batch=1,seq=512,hidden=1024/threads=2", 12.4e9, 49.6e9, 1.0);
  apply_peak(r, 200);
  apply_roofline(r, 40, "bandwidth/opmeter/fp32/kernel=triad,n=67108864/threads=2");
  EXPECT_NEAR(*r.roofline_gflops, 10, 1e-9);
  EXPECT_TRUE(r.has_flag("above-roofline"));
  EXPECT_TRUE(has(r.details["above-roofline"], "124.0% of the roofline 10 GFLOP/s (intensity 0.25 FLOP/B x the memory "
                                               "bandwidth 40 GB/s), measured by bandwidth/opmeter"))
      << r.details["above-roofline"];
  EXPECT_FALSE(r.has_flag("faster-than-peak"));
}

TEST(CeilingFlags, WithinTheNoiseMarginNothingIsFlagged) {
  Result r = timed("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 104e9, 10e9, 1.0);
  apply_peak(r, 100);
  apply_roofline(r, 9.6);  // 104% of it
  EXPECT_TRUE(r.flags.empty()) << r.flags.front();
  EXPECT_FALSE(r.details.count("faster-than-peak"));
}

TEST(CeilingFlags, CeilingsNameTheCaseThatMeasuredThem) {
  Ceilings ceilings;
  Result peak = timed("peak/opmeter/fp32/kernel=fma/threads=2", 100e9, 0, 1.0);
  Result memory = timed("bandwidth/opmeter/fp32/kernel=triad,n=67108864/threads=2", 0, 20e9, 1.0);
  ceilings.learn(peak);
  ceilings.learn(memory);
  Result gemm = timed("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 150e9, 1e9, 1.0);
  ceilings.annotate(gemm);
  ASSERT_TRUE(gemm.has_flag("faster-than-peak"));
  EXPECT_TRUE(has(gemm.details["faster-than-peak"], "measured by " + peak.case_string)) << gemm.details["faster-than-peak"];
}

TEST(CeilingFlags, ACeilingMeasuredUnderContentionIsSaidToBe) {
  Ceilings ceilings;
  Result peak = timed("peak/opmeter/fp32/kernel=fma/threads=2", 3.1e9, 0, 1.0);  // a loaded machine's "peak"
  peak.add_flag("contended");
  ceilings.learn(peak);
  Result conv = timed("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 200e9, 1e9, 1.0);
  ceilings.annotate(conv);
  ASSERT_TRUE(conv.has_flag("faster-than-peak"));
  EXPECT_TRUE(has(conv.details["faster-than-peak"], "contended")) << conv.details["faster-than-peak"];
  // The result names the contended ceiling it was rated against (the run warns of it), and a
  // contended case that is no ceiling (a small bandwidth array) is not named.
  EXPECT_EQ(conv.details["contended_ceilings"], peak.case_string);
  Result small = timed("bandwidth/opmeter/fp32/kernel=copy,n=1024/threads=2", 0, 8192, 1e-6);
  small.add_flag("contended");
  ceilings.learn(small);
  Result silu = timed("silu/opmeter/fp32/batch=1,seq=4,hidden=8/threads=2", 1e9, 1e9, 1.0);
  ceilings.annotate(silu);
  EXPECT_EQ(silu.details["contended_ceilings"], peak.case_string);  // the peak, not the small array
  // An uncontended measurement of the same ceiling is faster, replaces it, and is not called contended.
  Result quiet = timed("peak/opmeter/fp32/kernel=fma/threads=2", 235e9, 0, 1.0);
  ceilings.learn(quiet);
  Result again = timed("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 200e9, 1e9, 1.0);
  ceilings.annotate(again);
  EXPECT_FALSE(again.has_flag("faster-than-peak"));
  EXPECT_FALSE(again.details.count("contended_ceilings"));
  ASSERT_TRUE(again.pct_peak.has_value());
  EXPECT_NEAR(*again.pct_peak, 100.0 * 200 / 235, 1e-9);
}
