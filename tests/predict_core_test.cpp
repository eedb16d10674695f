// opmeter predict's core: samples, ceilings, features, the roofline and the analytic model.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "predict/analytic.hpp"
#include "predict/ceilings.hpp"
#include "predict/features.hpp"
#include "predict/sample.hpp"
#include "tests/result_fixtures.hpp"

namespace opmeter::predict {
namespace {

using fixtures::gemm_work;
using fixtures::measured;

Sample gemm_sample(double m, double n, double k, int threads = 2, const std::string& device = "cpu") {
  Sample s;
  s.kase = parse_case(fmt::format("gemm/onednn/fp32/M={},N={},K={}/threads={}", m, n, k, threads));
  s.kase.device = device;
  s.case_string = s.kase.to_string();
  Work w = gemm_work(m, n, k);
  s.flops = w.flops;
  s.bytes = w.bytes();
  return s;
}

Ceilings cpu_ceilings() {
  Ceilings c;
  c.peak_gflops = {{"fp32", 100}, {"bf16", 300}};
  c.memory_gbps = 20;
  c.threads = 2;
  c.cache_bytes = 8u << 20;
  return c;
}

Ceilings gpu_ceilings() {
  Ceilings c;
  c.device = "cuda:0";
  c.peak_gflops = {{"fp32", 50000}};
  c.memory_gbps = 3000;
  c.sm_count = 132;
  c.cache_bytes = 50u << 20;
  return c;
}

// ---- samples ----

TEST(PredictSample, GroupKeyIsDeviceOpImplDtype) {
  EXPECT_EQ(group_key(parse_case("gemm/onednn/bf16/M=64,N=64,K=64/threads=2")), "cpu/gemm/onednn/bf16");
  Case c = parse_case("gemm/openblas/fp32/M=8,N=8,K=8/threads=1");
  c.device = "cuda:1";
  c.impl = "cublas";
  EXPECT_EQ(group_key(c), "cuda:1/gemm/cublas/fp32");
}

TEST(PredictSample, SampleOfTakesTheOpsWork) {
  for (const char* text : {"gemm/onednn/fp32/M=64,N=32,K=16/threads=2",
                           "linear/onednn/bf16/batch=2,seq=8,hidden=64,out=32,act=gelu/threads=1",
                           "peak/opmeter/fp32/kernel=fma/threads=1"}) {
    Case c = parse_case(text);
    Sample s = sample_of(c);
    Work w = Registry::global().op(c.op)->work(c);
    EXPECT_EQ(s.flops, w.flops) << text;
    EXPECT_EQ(s.bytes, w.bytes()) << text;
    EXPECT_EQ(s.case_string, c.to_string());
    EXPECT_EQ(s.time_s, 0);
    EXPECT_TRUE(s.source.empty());
  }
  EXPECT_EQ(sample_of(parse_case("gemm/onednn/fp32/M=4,N=5,K=6/threads=1")).flops, 2.0 * 4 * 5 * 6);
}

TEST(PredictSample, SampleOfAnUnknownOpNamesIt) {
  Case c = parse_case("gemm/onednn/fp32/M=4,N=5,K=6/threads=1");
  c.op = "gemmm";
  try {
    sample_of(c);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("gemmm"), std::string::npos) << m;
    EXPECT_NE(m.find("gemm'"), std::string::npos) << m;  // did you mean 'gemm'?
  }
}

TEST(PredictSample, SamplesFromKeepsOkResultsWithATime) {
  ResultSet rs;
  rs.source = "runs/a";
  rs.results.push_back(measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-4, gemm_work(64, 64, 64)));
  rs.results.push_back(fixtures::with_status("gemm/onednn/fp32/M=8,N=8,K=8/threads=2", Status::failed, "wrong"));
  rs.results.push_back(fixtures::with_status("gemm/onednn/fp32/M=9,N=8,K=8/threads=2", Status::skipped, "no"));
  Result zero = measured("gemm/onednn/fp32/M=16,N=16,K=16/threads=2", 1e-5, gemm_work(16, 16, 16));
  zero.summary.median = 0;
  rs.results.push_back(zero);
  rs.results.push_back(measured("peak/opmeter/fp32/kernel=fma/threads=2", 2e-3, Work{1e9, 0, 0}));
  auto samples = samples_from(rs);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].case_string, "gemm/onednn/fp32/M=64,N=64,K=64/threads=2");
  EXPECT_NEAR(samples[0].time_s, 1e-4, 1e-6);
  EXPECT_EQ(samples[0].flops, 2.0 * 64 * 64 * 64);
  EXPECT_EQ(samples[0].bytes, gemm_work(64, 64, 64).bytes());
  EXPECT_EQ(samples[0].source, "runs/a");
  EXPECT_EQ(samples[1].kase.op, "peak");  // ceiling ops are samples too
}

TEST(PredictSample, SamplesFromFillsMissingWorkFromTheOp) {
  ResultSet rs;
  rs.results.push_back(measured("gemm/onednn/fp32/M=4,N=5,K=6/threads=1", 1e-6));
  auto samples = samples_from(rs);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].flops, 240);
}

TEST(PredictSample, MergeKeepsTheLastMeasurement) {
  ResultSet a, b;
  a.source = "a";
  b.source = "b";
  a.results.push_back(measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-4, gemm_work(64, 64, 64)));
  a.results.push_back(measured("gemm/onednn/fp32/M=32,N=64,K=64/threads=2", 5e-5, gemm_work(32, 64, 64)));
  b.results.push_back(measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 2e-4, gemm_work(64, 64, 64)));
  auto merged = merge_samples({a, b});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].case_string, "gemm/onednn/fp32/M=64,N=64,K=64/threads=2");
  EXPECT_EQ(merged[0].source, "b");
  EXPECT_NEAR(merged[0].time_s, 2e-4, 2e-6);
  EXPECT_EQ(merged[1].source, "a");
}

// A contended result's time is partly other processes': a later contended measurement does not
// replace a clean one, a clean one replaces a contended one; flags reach the samples.
TEST(PredictSample, FlagsReachTheSamplesAndAContendedTimeReplacesNoCleanOne) {
  ResultSet a, b;
  a.source = "a";
  b.source = "b";
  a.results.push_back(measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-4, gemm_work(64, 64, 64)));
  Result slow = measured("gemm/onednn/fp32/M=32,N=64,K=64/threads=2", 9e-5, gemm_work(32, 64, 64));
  slow.add_flag("contended");
  a.results.push_back(slow);
  Result noisy = measured("gemm/onednn/fp32/M=16,N=64,K=64/threads=2", 3e-5, gemm_work(16, 64, 64));
  noisy.add_flag("unconverged");
  a.results.push_back(noisy);
  Result contended_again = measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 5e-4, gemm_work(64, 64, 64));
  contended_again.add_flag("contended");
  b.results.push_back(contended_again);
  b.results.push_back(measured("gemm/onednn/fp32/M=32,N=64,K=64/threads=2", 5e-5, gemm_work(32, 64, 64)));
  auto from_a = samples_from(a);
  ASSERT_EQ(from_a.size(), 3u);
  EXPECT_FALSE(from_a[0].contended || from_a[0].unconverged);
  EXPECT_TRUE(from_a[1].contended);
  EXPECT_TRUE(from_a[2].unconverged && !from_a[2].contended);
  auto merged = merge_samples({a, b});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].source, "a");  // b's is contended: a's clean one stays
  EXPECT_NEAR(merged[0].time_s, 1e-4, 1e-6);
  EXPECT_EQ(merged[1].source, "b");  // b's clean one replaces a's contended one
  EXPECT_FALSE(merged[1].contended);
  EXPECT_NEAR(merged[1].time_s, 5e-5, 1e-6);
}

// ---- ceilings ----

nlohmann::json cpu_profile() {
  return nlohmann::json::parse(R"({
    "schema": "opmeter-calibration/1", "threads": 2, "device": "cpu",
    "peak_gflops": {"fp32": 210.5, "bf16": 400, "fp64": 100},
    "bandwidth": {"memory_gbps": 31.5, "array_bytes": 1e9, "kernels": {"copy": 30}},
    "context": {"cpu": {"llc_bytes": 33554432, "llc_bytes_used": 16777216, "usable_cpus": 2}}
  })");
}

TEST(PredictCeilings, FromAProfile) {
  Ceilings c = ceilings_from_profile(cpu_profile(), "cal.json");
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.threads, 2);
  EXPECT_DOUBLE_EQ(c.peak_gflops.at("fp32"), 210.5);
  EXPECT_DOUBLE_EQ(c.memory_gbps, 31.5);
  EXPECT_EQ(c.cache_bytes, 16777216u);  // the size opmeter used, not the VM's report
  EXPECT_EQ(c.sm_count, 0);
  EXPECT_NE(c.source.find("cal.json"), std::string::npos);
}

TEST(PredictCeilings, FromAGpuProfileWithItsContext) {
  auto p = cpu_profile();
  p["device"] = "cuda:0";
  p["context"]["gpus"] = {{{"device", "cuda:0"}, {"sms", 132}, {"l2_bytes", 52428800}}};
  Ceilings c = ceilings_from_profile(p, "gpu.json");
  EXPECT_EQ(c.device, "cuda:0");
  EXPECT_EQ(c.sm_count, 132);
  EXPECT_EQ(c.cache_bytes, 52428800u);
  EXPECT_EQ(c.threads, 0);
}

TEST(PredictCeilings, BadProfilesAreUsageErrors) {
  auto wrong_schema = cpu_profile();
  wrong_schema["schema"] = "something/2";
  EXPECT_THROW(ceilings_from_profile(wrong_schema, "x.json"), UsageError);
  auto no_bandwidth = cpu_profile();
  no_bandwidth.erase("bandwidth");
  EXPECT_THROW(ceilings_from_profile(no_bandwidth, "x.json"), UsageError);
  auto bad_peak = cpu_profile();
  bad_peak["peak_gflops"]["fp32"] = "fast";
  EXPECT_THROW(ceilings_from_profile(bad_peak, "x.json"), UsageError);
  auto bad_dtype = cpu_profile();
  bad_dtype["peak_gflops"]["fp33"] = 1;
  EXPECT_THROW(ceilings_from_profile(bad_dtype, "x.json"), UsageError);
}

TEST(PredictCeilings, PeakForFallsBackToTheNearestMeasured) {
  Ceilings c;
  c.peak_gflops = {{"fp32", 100}, {"bf16", 300}};
  EXPECT_EQ(c.peak_for(DType::fp32), 100);
  EXPECT_EQ(c.peak_for(DType::bf16), 300);
  EXPECT_EQ(c.peak_for(DType::fp16), 300);  // the other 16-bit float
  EXPECT_EQ(c.peak_for(DType::tf32), 100);
  EXPECT_EQ(c.peak_for(DType::fp64), 100);
  EXPECT_EQ(c.peak_for(DType::int8), 300);
  Ceilings only_fp32;
  only_fp32.peak_gflops = {{"fp32", 50}};
  EXPECT_EQ(only_fp32.peak_for(DType::bf16), 50);  // a narrower float falls back to fp32
  EXPECT_EQ(only_fp32.peak_for(DType::int8), 50);
  EXPECT_FALSE(Ceilings{}.peak_for(DType::fp32).has_value());
}

TEST(PredictCeilings, JsonRoundTrip) {
  Ceilings c = gpu_ceilings();
  c.source = "somewhere";
  Ceilings back = Ceilings::from_json(nlohmann::json::parse(c.to_json().dump()));
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_THROW(Ceilings::from_json(nlohmann::json::array()), UsageError);
  EXPECT_THROW(Ceilings::from_json({{"device", "cpu"}}), UsageError);
}

TEST(PredictCeilings, FromMeasuredCeilingCases) {
  ResultSet rs;
  rs.source = "run1";
  rs.context = {{"cpu", {{"llc_bytes_used", 4194304}, {"usable_cpus", 2}}}};
  rs.results.push_back(measured("peak/opmeter/fp32/kernel=fma/threads=2", 1e-3, Work{1e8, 0, 0}));  // 100 GFLOP/s
  rs.results.push_back(measured("peak/opmeter/fp32/kernel=fma/threads=2", 5e-4, Work{1e8, 0, 0}, 3));
  rs.results.push_back(measured("peak/opmeter/bf16/kernel=fma/threads=2", 2.5e-4, Work{1e8, 0, 0}));  // 400
  // The largest arrays measure memory (20 GB/s); the small one sits in a cache (100 GB/s).
  rs.results.push_back(measured("bandwidth/opmeter/fp32/kernel=copy,n=16777216/threads=2", 1e-2, Work{0, 1e8, 1e8}));
  rs.results.push_back(measured("bandwidth/opmeter/fp32/kernel=read,n=16777216/threads=2", 1e-2, Work{0, 1.5e8, 0}));
  rs.results.push_back(measured("bandwidth/opmeter/fp32/kernel=read,n=4096/threads=2", 1e-6, Work{0, 1e5, 0}));
  auto found = ceilings_from_results({rs});
  ASSERT_EQ(found.size(), 1u);
  const Ceilings& c = found.at("cpu");
  EXPECT_NEAR(c.peak_gflops.at("fp32"), 200, 1);
  EXPECT_NEAR(c.peak_gflops.at("bf16"), 400, 2);
  EXPECT_NEAR(c.memory_gbps, 20, 0.1);
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.cache_bytes, 4194304u);
  EXPECT_NE(c.source.find("run1"), std::string::npos);
}

TEST(PredictCeilings, FromTheCeilingsResultsWereComparedWith) {
  ResultSet rs;
  rs.source = "run2";
  Result g = measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-4, gemm_work(64, 64, 64));
  g.peak_gflops = 150;
  g.bandwidth_gbps = 25;
  rs.results.push_back(g);
  ResultSet gpu;
  gpu.context = {{"gpus", {{{"device", "cuda:0"}, {"sms", 108}, {"l2_bytes", 41943040}}}}};
  Result h = measured("gemm/onednn/bf16/M=64,N=64,K=64/threads=1", 1e-5, gemm_work(64, 64, 64, 2));
  h.kase.device = "cuda:0";
  h.peak_gflops = 300000;
  h.bandwidth_gbps = 2000;
  gpu.results.push_back(h);
  Result no_bandwidth = measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=1", 1e-5, gemm_work(64, 64, 64));
  no_bandwidth.kase.device = "cuda:1";
  no_bandwidth.peak_gflops = 1000;
  gpu.results.push_back(no_bandwidth);
  auto found = ceilings_from_results({rs, gpu});
  ASSERT_EQ(found.size(), 2u) << "cuda:1 has no bandwidth figure";
  EXPECT_DOUBLE_EQ(found.at("cpu").peak_gflops.at("fp32"), 150);
  EXPECT_DOUBLE_EQ(found.at("cpu").memory_gbps, 25);
  EXPECT_EQ(found.at("cpu").threads, 2);
  const Ceilings& c = found.at("cuda:0");
  EXPECT_DOUBLE_EQ(c.peak_gflops.at("bf16"), 300000);
  EXPECT_EQ(c.sm_count, 108);
  EXPECT_EQ(c.cache_bytes, 41943040u);
  EXPECT_EQ(c.threads, 0);
}

// ---- features ----

TEST(PredictFeatures, GemmViewOfGemmAndLinear) {
  auto g = gemm_view(parse_case("gemm/onednn/fp32/M=64,N=32,K=16/threads=1"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->m, 64);
  EXPECT_EQ(g->n, 32);
  EXPECT_EQ(g->k, 16);
  EXPECT_EQ(g->count, 1);
  for (const char* text : {"linear/onednn/fp32/batch=2,seq=8,hidden=64,out=32,act=relu/threads=1",
                           "ln_linear_gelu/onednn/fp32/batch=2,seq=8,hidden=64,out=32/threads=1"}) {
    auto l = gemm_view(parse_case(text));
    ASSERT_TRUE(l) << text;
    EXPECT_EQ(l->m, 16);
    EXPECT_EQ(l->n, 32);
    EXPECT_EQ(l->k, 64);
  }
}

TEST(PredictFeatures, GemmViewOfConvolutions) {
  auto c = gemm_view(parse_case(
      "conv2d/onednn/fp32/batch=2,channels=64,out_channels=128,image=56,kernel=3,stride=1,padding=1,groups=1,"
      "bn=0,act=none/threads=1"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->m, 2 * 56 * 56);
  EXPECT_EQ(c->n, 128);
  EXPECT_EQ(c->k, 64 * 9);
  EXPECT_EQ(c->count, 1);
  // Grouped and strided: OH = (15 + 2*1 - 3) / 2 + 1 = 8.
  auto g = gemm_view(parse_case(
      "conv2d/onednn/fp32/batch=4,channels=32,out_channels=64,image=15,kernel=3,stride=2,padding=1,groups=4,"
      "bn=1,act=relu/threads=1"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->m, 4 * 8 * 8);
  EXPECT_EQ(g->n, 16);
  EXPECT_EQ(g->k, 8 * 9);
  EXPECT_EQ(g->count, 4);
  // Its flops are the view's 2 M N K count plus the epilogue.
  Case cc = parse_case(
      "conv2d/onednn/fp32/batch=4,channels=32,out_channels=64,image=15,kernel=3,stride=2,padding=1,groups=4,"
      "bn=0,act=none/threads=1");
  auto v = *gemm_view(cc);
  double flops = Registry::global().op("conv2d")->work(cc).flops;
  EXPECT_NEAR(2 * v.m * v.n * v.k * v.count, flops, 0.01 * flops);
}

TEST(PredictFeatures, GemmViewOfAttentionAndOthers) {
  auto a = gemm_view(parse_case("attention/onednn/fp32/batch=2,heads=4,seq=128,head_dim=64,causal=0,stage=full/threads=1"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->m, 128);
  EXPECT_EQ(a->n, 128);
  EXPECT_EQ(a->k, 64);
  EXPECT_EQ(a->count, 2 * 2 * 4);
  auto s = gemm_view(parse_case("attention/onednn/fp32/batch=2,heads=4,seq=128,head_dim=64,causal=0,stage=scores/threads=1"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count, 2 * 4);
  EXPECT_FALSE(gemm_view(parse_case("bandwidth/opmeter/fp32/kernel=copy,n=1024/threads=1")));
  EXPECT_FALSE(gemm_view(parse_case("peak/opmeter/fp32/kernel=fma/threads=1")));
  EXPECT_FALSE(gemm_view(parse_case("gemm/onednn/fp32/M=0,N=4,K=4/threads=1")));
}

TEST(PredictFeatures, GemmViewOfATransformerBlock) {
  // 4 hidden x hidden projections (q, k, v, o) and the MLP's two hidden x mlp ones.
  auto b = gemm_view(parse_case(
      "transformer_block/onednn/fp32/batch=2,seq=8,hidden=64,heads=4,mlp=96,act=gelu,causal=0/threads=1"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->m, 16);
  EXPECT_EQ(b->n, 64);
  EXPECT_EQ(b->k, 64);
  EXPECT_DOUBLE_EQ(b->count, (4 * 64 + 2 * 96) / 64.0);
  // mlp=0 means 4 hidden.
  auto d = gemm_view(parse_case(
      "transformer_block/onednn/fp32/batch=1,seq=8,hidden=64,heads=4,mlp=0,act=gelu,causal=0/threads=1"));
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->count, 12);
}

// The ops that declare a GEMM view (OpDef::gemm_view) are the GEMM-like ones, and each one's
// example case has a view whose multiply-adds do not exceed the op's work.
TEST(PredictFeatures, GemmLikeOpsDeclareTheirView) {
  std::set<std::string> with_view;
  for (const OpDef* op : Registry::global().ops()) {
    if (!op->gemm_view) continue;
    with_view.insert(op->name);
    Case c;
    c.op = op->name;
    c.impl = "reference";
    c.params = op->example;
    auto v = gemm_view(c);
    ASSERT_TRUE(v) << op->name;
    EXPECT_LE(2 * v->m * v->n * v->k * v->count, 1.01 * op->work(c).flops) << op->name;
  }
  std::set<std::string> expected = {"gemm", "linear", "conv2d", "attention", "transformer_block"};
  for (const OpDef* op : Registry::global().ops())
    if (op->name.rfind("ln_linear_", 0) == 0) expected.insert(op->name);
  EXPECT_GT(expected.size(), 5u);  // the ln_linear_<act> ops are registered
  EXPECT_EQ(with_view, expected);
}

Sample with_params(const std::string& text) {
  Sample s;
  s.kase = parse_case(text);
  s.case_string = s.kase.to_string();
  s.flops = 1000;
  s.bytes = 100;
  return s;
}

TEST(PredictFeatures, NumericAndCategoricalParams) {
  std::vector<Sample> group = {with_params("linear/onednn/fp32/batch=1,seq=8,hidden=64,out=32,act=relu/threads=1"),
                               with_params("linear/onednn/fp32/batch=2,seq=8,hidden=64,out=32,act=gelu/threads=1")};
  FeatureSpace f = FeatureSpace::of(group);
  EXPECT_EQ(f.numeric, (std::vector<std::string>{"batch", "seq", "hidden", "out"}));
  ASSERT_EQ(f.categorical.size(), 1u);
  EXPECT_EQ(f.categorical[0].first, "act");
  EXPECT_EQ(f.categorical[0].second, (std::vector<std::string>{"gelu", "relu"}));
  auto names = f.names();
  EXPECT_EQ(names.size(), 4u + 2u + 13u);
  EXPECT_EQ(names[4], "act=gelu");
  EXPECT_EQ(names.back(), "log2_analytic_us");

  auto row = f.row(group[1], 1e-6);
  ASSERT_EQ(row.size(), names.size());
  EXPECT_FLOAT_EQ(row[0], float(std::log2(3.0)));  // batch=2 -> log2(1 + 2)
  EXPECT_FLOAT_EQ(row[4], 1.0f);                   // act=gelu
  EXPECT_FLOAT_EQ(row[5], 0.0f);
  EXPECT_FLOAT_EQ(row.back(), 0.0f);               // 1 us -> log2(1)
  auto at = [&](const std::string& name) { return row[std::find(names.begin(), names.end(), name) - names.begin()]; };
  EXPECT_FLOAT_EQ(at("log2_m"), float(std::log2(17.0)));  // view m = batch x seq = 16
  EXPECT_FLOAT_EQ(at("log2_mn"), float(std::log2(1.0 + 16 * 32)));
  EXPECT_FLOAT_EQ(at("log2_min_dim"), float(std::log2(17.0)));
  EXPECT_FLOAT_EQ(at("fill_n16"), 1.0f);  // 32 fills two 16-wide tiles
  auto odd = f.row(with_params("linear/onednn/fp32/batch=1,seq=20,hidden=64,out=40,act=relu/threads=1"), 1e-6);
  EXPECT_FLOAT_EQ(odd[std::find(names.begin(), names.end(), "fill_m16") - names.begin()], 20.0f / 32.0f);
  EXPECT_FLOAT_EQ(odd[std::find(names.begin(), names.end(), "fill_n16") - names.begin()], 40.0f / 48.0f);

  auto unseen = f.row(with_params("linear/onednn/fp32/batch=1,seq=8,hidden=64,out=32,act=silu/threads=1"), 2e-6);
  ASSERT_EQ(unseen.size(), names.size());
  EXPECT_FLOAT_EQ(unseen[4], 0.0f);
  EXPECT_FLOAT_EQ(unseen[5], 0.0f);
  EXPECT_FLOAT_EQ(unseen.back(), 1.0f);

  auto other_op = f.row(with_params("gemm/onednn/fp32/M=4,N=4,K=4/threads=1"), 0);
  EXPECT_EQ(other_op.size(), names.size());
  EXPECT_FLOAT_EQ(other_op[0], 0.0f);  // missing param

  FeatureSpace back = FeatureSpace::from_json(nlohmann::json::parse(f.to_json().dump()));
  EXPECT_EQ(back.names(), names);
  EXPECT_EQ(back.row(group[0], 3e-6), f.row(group[0], 3e-6));
  EXPECT_THROW(FeatureSpace::from_json({{"numeric", 3}}), UsageError);
}

TEST(PredictFeatures, AParamWithANonIntegerValueIsCategorical) {
  std::vector<Sample> group = {with_params("gemm/onednn/fp32/M=4,N=4,K=4/threads=1"),
                               with_params("gemm/onednn/fp32/M=x,N=4,K=4/threads=1")};
  FeatureSpace f = FeatureSpace::of(group);
  EXPECT_EQ(f.numeric, (std::vector<std::string>{"N", "K"}));
  ASSERT_EQ(f.categorical.size(), 1u);
  EXPECT_EQ(f.categorical[0].second, (std::vector<std::string>{"4", "x"}));
}

// ---- roofline ----

TEST(PredictRoofline, ComputeAndMemoryBound) {
  Ceilings c = cpu_ceilings();  // 100 GFLOP/s fp32, 20 GB/s, 2 threads
  Sample big = gemm_sample(1024, 1024, 1024);
  EXPECT_NEAR(roofline_time(big, c), big.flops / 100e9, 1e-12);
  Sample thin = gemm_sample(1, 4096, 4096);  // a GEMV: memory-bound
  EXPECT_NEAR(roofline_time(thin, c), thin.bytes / 20e9, 1e-12);
  // One thread of two gets half the peak.
  EXPECT_NEAR(roofline_time(gemm_sample(1024, 1024, 1024, 1), c), big.flops / 50e9, 1e-12);
  Ceilings no_peak = c;
  no_peak.peak_gflops.clear();
  EXPECT_NEAR(roofline_time(big, no_peak), big.bytes / 20e9, 1e-15);
}

// ---- analytic model ----

std::vector<Sample> random_gemms(int n, unsigned seed, int threads = 2, const std::string& device = "cpu") {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> log_size(0, 11);  // 1 .. 2048
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    auto dim = [&] { return std::round(std::exp2(log_size(rng))); };
    out.push_back(gemm_sample(dim(), dim(), dim(), threads, device));
  }
  return out;
}

std::vector<double> apes(const std::vector<Sample>& test, const std::function<double(const Sample&)>& predict) {
  std::vector<double> e;
  for (auto& s : test) e.push_back(std::fabs(predict(s) - s.time_s) / s.time_s);
  std::sort(e.begin(), e.end());
  return e;
}

double median(const std::vector<double>& sorted) { return sorted[sorted.size() / 2]; }
double p90(const std::vector<double>& sorted) { return sorted[sorted.size() * 9 / 10]; }

void time_by(const AnalyticModel& truth, const Ceilings& c, std::vector<Sample>& samples, double noise = 0,
             unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> eps(0, noise);
  for (auto& s : samples) s.time_s = truth.predict(s, c) * std::exp(noise > 0 ? eps(rng) : 0.0);
}

TEST(PredictAnalytic, DefaultConstantsAreTheRooflineOnUntiledWork) {
  AnalyticModel empty;
  Ceilings c = cpu_ceilings();
  for (auto& s : random_gemms(20, 3)) EXPECT_NEAR(empty.predict(s, c), roofline_time(s, c), 1e-9 * roofline_time(s, c));
}

// The model's formula (analytic.cpp's header) evaluated by hand for fixed constants, on the
// ceilings above: fp32 peak 100 GFLOP/s measured on 2 threads, 20 GB/s, 8 MiB of last-level cache.
TEST(PredictAnalytic, PredictsByHandForFixedConstants) {
  Ceilings c = cpu_ceilings();
  AnalyticModel m;
  m.constants = {{"overhead_s", 1e-6}, {"compute_eff", 0.5}, {"memory_eff", 1},      {"k_half", 8},
                 {"tile_m", 16},       {"tile_n", 32},       {"cache_penalty", 0.05}};
  // M = 17, N = 33, K = 64 on 2 threads: 16 x 32 tiles cover 17 x 33 with ceil(17/16) x ceil(33/32)
  // = 4 tiles, run 2 at a time in 2 rounds: 2 x 2 x 16 x 32 = 2048 outputs computed for the 561
  // needed, pad = 2048 / 561 = 3.651. The flops 2 x 561 x 64 x pad = 2 x 2048 x 64 = 262144 at the
  // whole 100 GFLOP/s (2 of the ceilings' 2 threads), halved by compute_eff, times 1 + 8 / 64 for
  // small K: 5.89824 us. Memory: 4 x (17 x 64 + 64 x 33 + 17 x 33) = 15044 B at 20 GB/s = 0.75 us,
  // under it. The operands fit the cache (7.5 kB a thread): no penalty. Plus the 1 us overhead.
  EXPECT_NEAR(m.predict(gemm_sample(17, 33, 64, 2), c), 1e-6 + 262144 / 100e9 / 0.5 * 1.125, 1e-12 * 6.9e-6);
  EXPECT_NEAR(m.predict(gemm_sample(17, 33, 64, 2), c), 6.89824e-6, 1e-12 * 6.9e-6);
  // M = N = K = 1024 on 1 thread: 64 x 32 = 2048 tiles in 2048 rounds of 1, no padding. The thread
  // gets half the peak (1 of the ceilings' 2 threads): 2^31 flops at 50 GFLOP/s, halved by
  // compute_eff, times 1 + 8 / 1024. Its 12 MiB of operands overflow its 4 MiB share of the cache
  // 3 times over: times 1 + 0.05 x log2(3). Memory, 12 MiB at 20 GB/s = 0.63 ms, is under it.
  const double big = 1e-6 + std::pow(2.0, 31) / 50e9 / 0.5 * (1 + 8.0 / 1024) * (1 + 0.05 * std::log2(3.0));
  EXPECT_NEAR(m.predict(gemm_sample(1024, 1024, 1024, 1), c), big, 1e-12 * big);
}

TEST(PredictAnalytic, FitRecoversACpuModel) {
  Ceilings c = cpu_ceilings();
  AnalyticModel truth;
  truth.constants = {{"overhead_s", 4e-6}, {"compute_eff", 0.8}, {"memory_eff", 0.7}, {"k_half", 24},
                     {"tile_m", 16},       {"tile_n", 32},      {"cache_penalty", 0.05}};
  auto train = random_gemms(150, 11), test = random_gemms(60, 12);
  time_by(truth, c, train);
  time_by(truth, c, test);
  AnalyticModel fitted = AnalyticModel::fit(train, c);
  auto e = apes(test, [&](const Sample& s) { return fitted.predict(s, c); });
  EXPECT_LT(median(e), 0.02) << nlohmann::json(fitted.constants).dump();
  EXPECT_LT(p90(e), 0.05) << nlohmann::json(fitted.constants).dump();
  EXPECT_NEAR(fitted.constants.at("overhead_s"), 4e-6, 1e-6);
  EXPECT_NEAR(fitted.constants.at("compute_eff"), 0.8, 0.1);
}

TEST(PredictAnalytic, FitRecoversAGpuModelWithWaves) {
  Ceilings c = gpu_ceilings();
  AnalyticModel truth;
  truth.constants = {{"overhead_s", 6e-6}, {"compute_eff", 0.7}, {"memory_eff", 0.85},
                     {"k_half", 64},       {"tile_m", 128},     {"tile_n", 128}};
  auto train = random_gemms(200, 21, 1, "cuda:0"), test = random_gemms(60, 22, 1, "cuda:0");
  time_by(truth, c, train);
  time_by(truth, c, test);
  AnalyticModel fitted = AnalyticModel::fit(train, c);
  auto e = apes(test, [&](const Sample& s) { return fitted.predict(s, c); });
  EXPECT_LT(median(e), 0.02) << nlohmann::json(fitted.constants).dump();
  EXPECT_LT(p90(e), 0.05) << nlohmann::json(fitted.constants).dump();
  EXPECT_FALSE(fitted.constants.count("cache_penalty"));  // a CPU effect only
}

TEST(PredictAnalytic, BeatsTheRooflineWithOverheadAndSmallK) {
  Ceilings c = cpu_ceilings();
  AnalyticModel truth;
  truth.constants = {{"overhead_s", 1e-5}, {"compute_eff", 0.6}, {"memory_eff", 0.5}, {"k_half", 100}};
  auto train = random_gemms(120, 31), test = random_gemms(60, 32);
  time_by(truth, c, train, 0.05, 1);
  time_by(truth, c, test, 0.05, 2);
  AnalyticModel fitted = AnalyticModel::fit(train, c);
  auto analytic = apes(test, [&](const Sample& s) { return fitted.predict(s, c); });
  auto roofline = apes(test, [&](const Sample& s) { return roofline_time(s, c); });
  EXPECT_LT(median(analytic), 0.06);
  EXPECT_LT(median(analytic) * 5, median(roofline));
  EXPECT_LT(p90(analytic), p90(roofline));
}

TEST(PredictAnalytic, NonGemmOpsFitOverheadAndEfficiencies) {
  Ceilings c = cpu_ceilings();
  std::vector<Sample> group;
  for (int i = 10; i < 27; ++i) {
    Sample s = sample_of(parse_case(fmt::format("bandwidth/opmeter/fp32/kernel=copy,n={}/threads=2", 1 << i)));
    s.time_s = 2e-6 + s.bytes / (20e9 * 0.6);
    group.push_back(s);
  }
  AnalyticModel m = AnalyticModel::fit(group, c);
  EXPECT_FALSE(m.constants.count("tile_m"));
  EXPECT_NEAR(m.constants.at("memory_eff"), 0.6, 0.02);
  EXPECT_NEAR(m.constants.at("overhead_s"), 2e-6, 2e-7);
  for (auto& s : group) EXPECT_NEAR(m.predict(s, c), s.time_s, 0.02 * s.time_s);
}

TEST(PredictAnalytic, DegenerateGroupsGiveSanePredictions) {
  Ceilings c = cpu_ceilings();
  c.peak_gflops.clear();  // no peak for any dtype
  std::vector<Sample> same;
  for (int i = 0; i < 6; ++i) {
    Sample s = gemm_sample(256, 256, 256);
    s.time_s = 1e-3 * (1 + 0.01 * i);
    same.push_back(s);
  }
  AnalyticModel m = AnalyticModel::fit(same, c);
  const double p = m.predict(same[0], c);
  EXPECT_TRUE(std::isfinite(p));
  EXPECT_NEAR(p, 1.025e-3, 0.05e-3);
  const double bigger = m.predict(gemm_sample(512, 512, 512), c);
  EXPECT_TRUE(std::isfinite(bigger));
  EXPECT_GT(bigger, p);
  // Nothing measured: the default constants.
  AnalyticModel none = AnalyticModel::fit({gemm_sample(8, 8, 8)}, cpu_ceilings());
  EXPECT_NEAR(none.predict(gemm_sample(64, 64, 64), cpu_ceilings()), roofline_time(gemm_sample(64, 64, 64), cpu_ceilings()),
              1e-12);
}

TEST(PredictAnalytic, FitIsFastAndDeterministic) {
  Ceilings c = cpu_ceilings();
  AnalyticModel truth;
  truth.constants = {{"overhead_s", 3e-6}, {"compute_eff", 0.9}, {"memory_eff", 0.8}, {"k_half", 16},
                     {"tile_m", 8},        {"tile_n", 64},      {"cache_penalty", 0.1}};
  auto group = random_gemms(300, 41);
  time_by(truth, c, group, 0.03);
  auto start = std::chrono::steady_clock::now();
  AnalyticModel a = AnalyticModel::fit(group, c);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("analytic fit of 300 samples: %.3f s\n", seconds);
  EXPECT_LT(seconds, 5.0);  // well under a second in a release build; sanitizers are slower
  AnalyticModel b = AnalyticModel::fit(group, c);
  EXPECT_EQ(a.constants, b.constants);
}

TEST(PredictAnalytic, JsonRoundTripGivesIdenticalPredictions) {
  Ceilings c = cpu_ceilings();
  auto group = random_gemms(60, 51);
  AnalyticModel truth;
  truth.constants = {{"overhead_s", 3e-6}, {"compute_eff", 0.9}, {"memory_eff", 0.8}, {"k_half", 16}};
  time_by(truth, c, group, 0.05);
  AnalyticModel fitted = AnalyticModel::fit(group, c);
  AnalyticModel back = AnalyticModel::from_json(nlohmann::json::parse(fitted.to_json().dump()));
  Ceilings cback = Ceilings::from_json(nlohmann::json::parse(c.to_json().dump()));
  for (auto& s : random_gemms(30, 52)) EXPECT_EQ(back.predict(s, cback), fitted.predict(s, c));
  EXPECT_THROW(AnalyticModel::from_json({{"constants", {{"overhead_s", "x"}}}}), UsageError);
  EXPECT_THROW(AnalyticModel::from_json(nlohmann::json::array()), UsageError);
}

}  // namespace
}  // namespace opmeter::predict
