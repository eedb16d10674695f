// The correctness gate: no number without a correct answer.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/onednn_caps.hpp"

#include <fmt/format.h>

#include "engine/ceiling_rate.hpp"
#include "engine/runner.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "ops/gemm/gemm.hpp"
#include "ops/peak/peak.hpp"
#include "tests/quick_options.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {
Result run(const std::string& c) { return run_case(parse_case(c), quick_options()); }
}  // namespace

TEST(CorrectnessGate, WrongImplIsFailedAndNotTimed) {
  auto r = run("gemm/test_wrong/fp32/M=33,N=17,K=29/threads=1");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("wrong result before timing"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("C[0,0]"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.max_error.has_value());
  EXPECT_GT(*r.max_error, *r.tolerance);
  EXPECT_TRUE(r.samples.empty());

  // The error's value: test_wrong adds 0.5 to C[0,0] (tests/test_impls.cpp), and gemm.hpp's metric
  // divides |c - ref| by sum_k |a_0k b_0k|. Inputs drawn again for the seed of the check before
  // timing (the run's seed + 1, runner.cpp), in double.
  gemm::GemmSpec spec;
  spec.bind(parse_case("gemm/test_wrong/fp32/M=33,N=17,K=29/threads=1"));
  const auto in = spec.make_inputs(quick_options().seed + 1);
  const std::size_t K = 29;
  double magnitude = 0;
  for (std::size_t k = 0; k < K; ++k) magnitude += std::fabs(in[0][k] * in[1][k]);  // row 0 of A and of B
  // Besides the 0.5, C[0,0] carries its fp32 sum's rounding (at most about K units of 2^-24 of the
  // magnitude) and the rounding of adding 0.5 (2^-24 of |c| + 0.5): the bound below, scaled.
  const double slack = (double(K + 1) * magnitude + 0.5) * 0x1p-24 / magnitude;
  EXPECT_NEAR(*r.max_error, 0.5 / magnitude, slack) << r.reason;
  EXPECT_LT(slack, 1e-3 * 0.5 / magnitude);  // the bound is far tighter than any other normalization
}

TEST(CorrectnessGate, UnwrittenOutputIsCaughtByPoison) {
  auto r = run("gemm/test_lazy/fp32/M=16,N=16,K=16/threads=1");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("C[15,0] was not written"), std::string::npos) << r.reason;
}

class GemmImpls : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmImpls, OddShapesAreCorrectAndTimed) {
  // Sizes that are not multiples of any vector width.
  auto r = run(GetParam());
  if (r.kase.impl == "onednn" && r.kase.dtype == DType::bf16 && !opmeter::testing::onednn_has_bf16()) {
    EXPECT_EQ(r.status, Status::skipped) << r.reason;
    GTEST_SKIP() << opmeter::testing::kNoOnednnBf16;
  }
  if (r.kase.impl == "onednn" && r.kase.dtype == DType::int8 && r.status == Status::skipped) {
    EXPECT_NE(r.reason.find("without VNNI"), std::string::npos) << r.reason;  // never a wrong answer timed
    EXPECT_FALSE(cpu_info().has("avx512_vnni") || cpu_info().has("avx_vnni")) << "skipped on a CPU with VNNI";
    GTEST_SKIP() << r.reason;
  }
  ASSERT_EQ(r.status, Status::ok) << r.case_string << ": " << r.reason;
  EXPECT_EQ(r.samples.size(), 3u);
  EXPECT_LE(*r.max_error, *r.tolerance);
  EXPECT_GT(r.gflops, 0);
  EXPECT_DOUBLE_EQ(r.work.flops, 2.0 * 37 * 19 * 53);
}

INSTANTIATE_TEST_SUITE_P(All, GemmImpls,
                         ::testing::Values("gemm/reference/fp32/M=37,N=19,K=53/threads=2",
                                           "gemm/reference/fp64/M=37,N=19,K=53/threads=1",
                                           "gemm/reference/int8/M=37,N=19,K=53/threads=1",
                                           "gemm/reference/bf16/M=37,N=19,K=53/threads=1",
                                           "gemm/openblas/fp32/M=37,N=19,K=53/threads=2",
                                           "gemm/openblas/fp64/M=37,N=19,K=53/threads=1",
                                           "gemm/onednn/fp32/M=37,N=19,K=53/threads=2",
                                           "gemm/onednn/bf16/M=37,N=19,K=53/threads=1",
                                           "gemm/onednn/int8/M=37,N=19,K=53/threads=1"));

TEST(CorrectnessGate, LargeGemmIsCheckedOnSampledElements) {
  auto r = run("gemm/onednn/fp32/M=300,N=300,K=300/threads=2");
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_LE(*r.max_error, *r.tolerance);
}

TEST(Bandwidth, EveryKernelIsExactOnOddLengths) {
  for (const char* k : {"copy", "scale", "add", "triad", "read", "write", "copy_nt", "triad_nt", "write_nt"}) {
    auto r = run(fmt::format("bandwidth/opmeter/fp32/kernel={},n=100003/threads=2", k));
    ASSERT_EQ(r.status, Status::ok) << k << ": " << r.reason;
    EXPECT_EQ(*r.max_error, 0.0) << k;
    EXPECT_GT(r.gbps, 0) << k;
    EXPECT_EQ(r.gflops, 0) << k;
  }
  auto triad = run("bandwidth/opmeter/fp32/kernel=triad,n=1000/threads=1");
  EXPECT_DOUBLE_EQ(triad.work.bytes_read, 8000);
  EXPECT_DOUBLE_EQ(triad.work.bytes_written, 4000);
}

// `passes`: a call goes over its arrays P times (a cache level's read); its bytes count every pass,
// its sum is still exact, and GB/s is those bytes over the call's time.
TEST(Bandwidth, PassesReadTheArrayThatManyTimesInOneCall) {
  for (const char* k : {"read", "triad"}) {
    auto r = run(fmt::format("bandwidth/opmeter/fp32/kernel={},n=4099,passes=7/threads=2,hot", k));
    ASSERT_EQ(r.status, Status::ok) << k << ": " << r.reason;
    EXPECT_EQ(*r.max_error, 0.0) << k;
    const double reads = std::string(k) == "read" ? 1 : 2;
    EXPECT_DOUBLE_EQ(r.work.bytes_read, 7 * reads * 4099 * 4) << k;
    EXPECT_NEAR(r.gbps, r.work.bytes() / r.summary.median / 1e9, 1e-9 * r.gbps) << k;
  }
  auto bad = run("bandwidth/opmeter/fp32/kernel=read,n=64,passes=0/threads=1");
  EXPECT_EQ(bad.status, Status::error) << bad.reason;
  EXPECT_NE(bad.reason.find("passes=0 out of range"), std::string::npos) << bad.reason;
}

TEST(Peak, MeasuresAndChecksItsKernel) {
  auto r = run("peak/opmeter/fp32/kernel=fma/threads=1");
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_GT(r.gflops, 1.0);
  EXPECT_EQ(r.cache, "none");
  EXPECT_FALSE(r.details.at("isa").empty());
}

TEST(Skips, UnsupportedCombinationsSayWhy) {
  auto r = run("gemm/openblas/int8/M=8,N=8,K=8/threads=1");
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_EQ(r.reason, "openblas has no int8 gemm");
  r = run("gemm/reference/fp32/M=4096,N=4096,K=4096/threads=1");
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("reference runs only up to"), std::string::npos);
  r = run("gemm/onednn/fp32/M=1048576,N=1048576,K=1048576/threads=1");
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("of memory"), std::string::npos) << r.reason;
}

TEST(Ceilings, PercentOfMeasuredPeakAndFasterThanPeakFlag) {
  Ceilings c;
  Result peak;
  peak.kase = parse_case("peak/opmeter/fp32/kernel=fma/threads=2");
  peak.gflops = 200;
  c.learn(peak);
  Result g;
  g.kase = parse_case("gemm/onednn/fp32/M=8,N=8,K=8/threads=2");
  g.gflops = 150;
  c.annotate(g);
  ASSERT_TRUE(g.pct_peak.has_value());
  EXPECT_DOUBLE_EQ(*g.pct_peak, 75.0);
  EXPECT_FALSE(g.has_flag("faster-than-peak"));
  Result fast = g;
  fast.pct_peak.reset();
  fast.gflops = 230;
  c.annotate(fast);
  EXPECT_TRUE(fast.has_flag("faster-than-peak"));
  Result other_threads;
  other_threads.kase = parse_case("gemm/onednn/fp32/M=8,N=8,K=8/threads=1");
  other_threads.gflops = 10;
  c.annotate(other_threads);
  EXPECT_FALSE(other_threads.pct_peak.has_value());
}

TEST(Ceilings, NeededPeaksComeFirst) {
  std::vector<Case> cases = {parse_case("gemm/onednn/bf16/M=8,N=8,K=8/threads=2"),
                             parse_case("bandwidth/opmeter/fp32/kernel=copy,n=64/threads=2"),
                             parse_case("peak/opmeter/fp32/kernel=fma/threads=2"),
                             parse_case("gemm/onednn/fp32/M=8,N=8,K=8/threads=2")};
  auto out = with_needed_peaks(cases);
  // bf16's peak kernels: fma, and amx on an AMX CPU (PeakAmx.*).
  const std::size_t bf16_peaks = peak::kernels_for(DType::bf16, false).size();
  ASSERT_EQ(out.size(), 4u + bf16_peaks);
  EXPECT_EQ(out[0].to_string(), "peak/opmeter/bf16/kernel=fma/threads=2");
  if (bf16_peaks == 2) {
    EXPECT_EQ(out[1].to_string(), "peak/opmeter/bf16/kernel=amx/threads=2");
  }
  EXPECT_EQ(out[bf16_peaks].op, "bandwidth");
  EXPECT_EQ(out[bf16_peaks + 1].to_string(), "peak/opmeter/fp32/kernel=fma/threads=2");
  EXPECT_EQ(out[bf16_peaks + 2].op, "gemm");
}

TEST(Ceilings, TensorOpsGetABandwidthCeilingUnlessAProfileIsGiven) {
  std::vector<Case> cases = {parse_case("layernorm/opmeter/fp32/batch=1,seq=2,hidden=3/threads=2")};
  auto out = with_needed_peaks(cases, 1024);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].to_string(), "peak/opmeter/fp32/kernel=fma/threads=2");
  // A copy and a read: the ceiling is the faster (a layer that only reads reads at a read's speed).
  EXPECT_EQ(out[1].to_string(), "bandwidth/opmeter/fp32/kernel=copy,n=1024/threads=2");
  EXPECT_EQ(out[2].to_string(), "bandwidth/opmeter/fp32/kernel=read,n=1024/threads=2");
  EXPECT_EQ(out[3].op, "layernorm");
  Ceilings profile;
  profile.load_profile({{"schema", kCalibrationSchema},
                        {"threads", 2},
                        {"peak_gflops", {{"fp32", 300.0}}},
                        {"bandwidth", {{"memory_gbps", 25.0}}}});
  EXPECT_EQ(with_needed_peaks(cases, 1024, profile).size(), 1u);
}

// A profile holds the ceilings of its thread count and dtypes only: the others are measured.
TEST(Ceilings, AProfileReplacesOnlyTheCeilingsItHolds) {
  Ceilings profile;
  profile.load_profile({{"schema", kCalibrationSchema},
                        {"threads", 2},
                        {"peak_gflops", {{"fp32", 300.0}}},
                        {"bandwidth", {{"memory_gbps", 25.0}}}});
  auto out = with_needed_peaks({parse_case("layernorm/opmeter/fp32/batch=1,seq=2,hidden=3/threads=2"),
                                parse_case("layernorm/opmeter/fp32/batch=1,seq=2,hidden=3/threads=1")},
                               1024, profile);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].to_string(), "peak/opmeter/fp32/kernel=fma/threads=1");
  EXPECT_EQ(out[1].to_string(), "bandwidth/opmeter/fp32/kernel=copy,n=1024/threads=1");
  EXPECT_EQ(out[2].to_string(), "bandwidth/opmeter/fp32/kernel=read,n=1024/threads=1");
  out = with_needed_peaks({parse_case("gemm/openblas/fp64/M=8,N=8,K=8/threads=2")}, 1024, profile);
  ASSERT_EQ(out.size(), 2u);  // fp64's peak: the profile has none
  EXPECT_EQ(out[0].to_string(), "peak/opmeter/fp64/kernel=fma/threads=2");
}

// A config's own bandwidth case too small to stream from memory (8 MiB) is no ceiling: the
// default-sized one is planned beside it; one of 128 MiB is, and nothing is added.
TEST(Ceilings, ASmallBandwidthCaseGetsTheDefaultCeilingBesideIt) {
  const Case layer = parse_case("linear/onednn/fp32/batch=1,seq=4,hidden=64,out=32,act=none/threads=1");
  auto out = with_needed_peaks({parse_case("bandwidth/opmeter/fp32/kernel=read,n=2097152/threads=1"), layer}, 1 << 24);
  std::vector<std::string> bandwidth;
  for (auto& c : out)
    if (c.op == "bandwidth") bandwidth.push_back(c.to_string());
  EXPECT_EQ(bandwidth, (std::vector<std::string>{"bandwidth/opmeter/fp32/kernel=copy,n=16777216/threads=1",
                                                 "bandwidth/opmeter/fp32/kernel=read,n=16777216/threads=1",
                                                 "bandwidth/opmeter/fp32/kernel=read,n=2097152/threads=1"}));
  out = with_needed_peaks({parse_case("bandwidth/opmeter/fp32/kernel=read,n=33554432/threads=1"), layer}, 1 << 24);
  EXPECT_EQ(std::count_if(out.begin(), out.end(), [](const Case& c) { return c.op == "bandwidth"; }), 1);
}

// No peak kernel takes fp16 on the CPU: no peak case is planned only to be skipped; bf16's is.
TEST(Ceilings, APeakNoImplTakesHereIsNotPlanned) {
  auto out = with_needed_peaks({parse_case("linear/onednn/fp16/batch=1,seq=4,hidden=64,out=32,act=none/threads=1")});
  EXPECT_EQ(std::count_if(out.begin(), out.end(), [](const Case& c) { return c.op == "peak"; }), 0);
  out = with_needed_peaks({parse_case("linear/onednn/bf16/batch=1,seq=4,hidden=64,out=32,act=none/threads=1")});
  EXPECT_GE(std::count_if(out.begin(), out.end(), [](const Case& c) { return c.op == "peak" && c.dtype == DType::bf16; }), 1);
}

TEST(Ceilings, RooflineFromMeasuredCeilings) {
  Ceilings ceilings;
  Result peak, bw, ln;
  peak.kase = parse_case("peak/opmeter/fp32/kernel=fma/threads=2");
  peak.gflops = 400;
  bw.kase = parse_case("bandwidth/opmeter/fp32/kernel=copy,n=33554432/threads=2");
  bw.work = {0, 128.0 * (1 << 20), 128.0 * (1 << 20)};
  bw.gbps = 20;
  ceilings.learn(peak);
  ceilings.learn(bw);
  ln.kase = parse_case("layernorm/opmeter/fp32/batch=1,seq=2,hidden=3/threads=2");
  ln.gflops = 4;   // at intensity 0.5 flop/byte the bound is 0.5 * 20 = 10 GFLOP/s
  ln.gbps = 8;
  ln.intensity = 0.5;
  ceilings.annotate(ln);
  ASSERT_TRUE(ln.roofline_gflops.has_value());
  EXPECT_DOUBLE_EQ(*ln.roofline_gflops, 10);
  EXPECT_DOUBLE_EQ(*ln.efficiency, 0.4);
  EXPECT_DOUBLE_EQ(*ln.pct_bandwidth, 40);
  EXPECT_DOUBLE_EQ(*ln.pct_peak, 1);
}

TEST(Ceilings, SmallBandwidthArraysAreNotTheMemoryCeiling) {
  Ceilings ceilings;
  Result bw;
  bw.kase = parse_case("bandwidth/opmeter/fp32/kernel=copy,n=1024/threads=2");
  bw.work = {0, 4096, 4096};
  bw.gbps = 500;  // an L1-resident array
  ceilings.learn(bw);
  EXPECT_FALSE(ceilings.bandwidth(2).has_value());
}

// A peak measured beside a co-tenant: a fifth of its samples ran alone (2 us a call), the rest
// slowed to 3-3.9 us. The ceiling is the rate of the fastest tenth (nearest rank), not the
// median's; a bandwidth case's likewise; and a case of a few samples keeps its median's rate.
TEST(Ceilings, AreTheRateOfTheFastestTenthOfTheirSamples) {
  using opmeter::fixtures::measured;
  std::vector<double> samples;
  for (int i = 0; i < 40; ++i) samples.push_back(i % 5 == 0 ? 2e-6 + 1e-9 * i : 3e-6 + 2.5e-8 * i);
  const Work work{4e6, 0, 0};  // 4 MFLOP a call
  Result peak = measured("peak/opmeter/fp32/kernel=fma/threads=2", samples, work);
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double fastest_tenth = sorted[3];  // the 4th of 40: nearest rank of the 10th percentile
  EXPECT_NEAR(ceiling_gflops(peak), 4e6 / fastest_tenth * 1e-9, 1e-9);
  EXPECT_LT(peak.gflops, 0.7 * ceiling_gflops(peak));  // the median is a slowed sample
  Ceilings c;
  c.learn(peak);
  EXPECT_NEAR(*c.peak(DType::fp32, 2), 4e6 / fastest_tenth * 1e-9, 1e-9);
  c.annotate(peak);
  EXPECT_EQ(peak.details.at("ceiling_gflops"), fmt::format("{:.4g}", 4e6 / fastest_tenth * 1e-9));

  const Work bytes{0, 128.0 * (1 << 20), 128.0 * (1 << 20)};  // 256 MiB a call
  Result bandwidth = measured("bandwidth/opmeter/fp32/kernel=copy,n=33554432/threads=2", samples, bytes);
  c.learn(bandwidth);
  EXPECT_NEAR(*c.bandwidth(2), 256.0 * (1 << 20) / fastest_tenth * 1e-9, 1e-6);

  Result few = measured("peak/opmeter/fp64/kernel=fma/threads=2", {3e-6, 2e-6, 3e-6, 3e-6}, work);
  EXPECT_DOUBLE_EQ(ceiling_gflops(few), few.gflops);  // too few samples for a tenth
}

TEST(Ceilings, ProfileMustBeACalibrationProfile) {
  Ceilings ceilings;
  EXPECT_THROW(ceilings.load_profile(nlohmann::json{{"schema", "something-else"}}), UsageError);
  EXPECT_THROW(ceilings.load_profile(nlohmann::json{{"schema", kCalibrationSchema}}), UsageError);
  ceilings.load_profile({{"schema", kCalibrationSchema},
                         {"threads", 2},
                         {"peak_gflops", {{"fp32", 300.0}}},
                         {"bandwidth", {{"memory_gbps", 25.0}}}});
  EXPECT_DOUBLE_EQ(*ceilings.peak(DType::fp32, 2), 300);
  EXPECT_DOUBLE_EQ(*ceilings.bandwidth(2), 25);
  EXPECT_FALSE(ceilings.peak(DType::fp32, 1).has_value());
}
