// The tensor ops (activations, norms, losses, linear, conv, attention): every impl against the
// fp64 reference on odd shapes, BN folding, fusion arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/fusion.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "tests/result_fixtures.hpp"
#include "ops/conv/conv.hpp"
#include "ops/tensor/kernels.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

TEST(TensorOps, EveryImplMatchesTheReferenceOnTheOpsCheckShapes) {
  // Each CPU impl of the tensor ops in each dtype on the first check shape it runs (odd, not a
  // multiple of any vector width); `opmeter check --device cpu` (a CTest) runs every shape.
  int checked = 0;
  for (const OpDef* op : Registry::global().ops()) {
    if (op->defaults.empty()) continue;  // gemm, bandwidth, peak have their own tests
    for (const ImplDef* impl : Registry::global().impls_of(op->name)) {
      if (!impl->runs_on("cpu") || impl->on_request) continue;  // device impls are checked on their devices (GPU tests)
      for (DType d : impl->dtypes)
        for (auto& params : check_shapes_of(*op)) {
          Case c;
          c.op = op->name;
          c.impl = impl->impl;
          c.dtype = d;
          c.params = params;
          c.threads = 2;
          if (!takes_optional_params(*impl, c).ok) continue;  // a recipe only its impls run
          Result r = check_case(c, quick_options(2));
          EXPECT_TRUE(r.status == Status::ok || r.status == Status::skipped)
              << c.to_string() << ": " << to_string(r.status) << " " << r.reason;
          if (r.status == Status::ok) {
            ++checked;
            ASSERT_TRUE(r.max_error.has_value());
            EXPECT_LE(*r.max_error, *r.tolerance) << c.to_string();
            EXPECT_GT(r.work.bytes(), 0) << c.to_string();
          }
          break;
        }
    }
  }
  EXPECT_GT(checked, 150);  // 8 activations, 4 norms, 2 losses, 9 linear ops, conv, attention
}

TEST(TensorOps, ToleranceIsTightEnoughToCatchOneBf16RoundingInFp32) {
  // A bf16 rounding (2^-9 relative) must fail every fp32 check: the fp32 tolerances are far below.
  for (const char* name : {"layernorm", "gelu", "linear", "attention", "conv2d"}) {
    const OpDef* op = Registry::global().op(name);
    ASSERT_NE(op, nullptr);
    // The op's first CPU impl (its device impls are made by their backend).
    auto impls = Registry::global().impls_of(name);
    auto cpu = std::find_if(impls.begin(), impls.end(), [](const ImplDef* d) { return d->runs_on("cpu") && d->make; });
    ASSERT_NE(cpu, impls.end()) << name;
    Case c;
    c.op = name;
    c.impl = (*cpu)->impl;
    c.dtype = DType::fp32;
    c.params = op->example;
    c.threads = 1;
    auto impl = (*cpu)->make();
    impl->setup(c, {1, 1});
    auto* spec = dynamic_cast<const OpSpec*>(impl.get());
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_LT(spec->tolerance(), 0x1p-9 / 4) << name;
  }
}

TEST(TensorOps, BatchNormFoldingEqualsConvThenBatchNorm) {
  const std::size_t oc = 3, per_oc = 5;
  std::vector<float> w(oc * per_oc), b(oc), mean(oc), var(oc), gamma(oc), beta(oc), x(per_oc);
  Rng rng(42);
  for (auto& v : w) v = float(rng.uniform(-1, 1));
  for (auto& v : x) v = float(rng.uniform(-1, 1));
  for (std::size_t o = 0; o < oc; ++o) {
    b[o] = float(rng.uniform(-1, 1));
    mean[o] = float(rng.uniform(-0.5, 0.5));
    var[o] = float(rng.uniform(0.25, 1.5));
    gamma[o] = float(rng.uniform(0.5, 1.5));
    beta[o] = float(rng.uniform(-0.5, 0.5));
  }
  std::vector<float> wf(oc * per_oc), bf(oc);
  conv::fold_batchnorm(w.data(), b.data(), mean.data(), var.data(), gamma.data(), beta.data(), oc, per_oc, wf.data(),
                       bf.data());
  for (std::size_t o = 0; o < oc; ++o) {
    double conv = b[o], folded = bf[o];
    for (std::size_t i = 0; i < per_oc; ++i) {
      conv += double(w[o * per_oc + i]) * x[i];
      folded += double(wf[o * per_oc + i]) * x[i];
    }
    double unfused = (conv - mean[o]) / std::sqrt(double(var[o]) + tensor::kNormEps) * gamma[o] + beta[o];
    EXPECT_NEAR(folded, unfused, 1e-5) << "channel " << o;
  }
}

TEST(TensorOps, ActivationNamesRoundTrip) {
  for (auto a : tensor::all_acts()) EXPECT_EQ(tensor::parse_act(tensor::to_string(a)), a);
  EXPECT_FALSE(tensor::parse_act("swishy").has_value());
  EXPECT_EQ(tensor::all_acts().size(), 8u);
}

namespace {
Result timed(const std::string& case_string, double median_s, double gflops) {
  Result r = fixtures::timed(case_string, median_s);
  r.gflops = gflops;
  return r;
}
}  // namespace

TEST(Fusion, RowsCompareEachFusedImplWithTheUnfusedSequence) {
  const std::string shape = "batch=1,seq=4,hidden=8,out=16,act=gelu/threads=2";
  std::vector<Result> results = {timed("linear/onednn_unfused/fp32/" + shape, 2e-3, 10),
                                 timed("linear/onednn/fp32/" + shape, 1e-3, 20),
                                 timed("linear/opmeter/fp32/" + shape, 2.04e-3, 9.8),
                                 timed("linear/reference/fp32/" + shape, 9e-3, 1)};
  auto rows = fusion_rows(results);
  ASSERT_EQ(rows.size(), 2u);  // the reference is not a fused form
  EXPECT_EQ(rows[0].pattern, "linear+bias+gelu");
  EXPECT_EQ(rows[0].fused_impl, "onednn");
  EXPECT_DOUBLE_EQ(rows[0].speedup, 2.0);
  EXPECT_EQ(rows[0].verdict, "fuse");
  EXPECT_NEAR(rows[1].speedup, 2.0 / 2.04, 1e-12);
  EXPECT_EQ(rows[1].verdict, "no benefit");
  // Unfused: x W^T written, then read and rewritten by the bias pass and the activation pass.
  // rows=4, out=16, fp32: 2 extra passes x (read + write) x 4*16*4 bytes.
  EXPECT_DOUBLE_EQ(rows[0].unfused_bytes - rows[0].fused_bytes, 2 * 2 * 4 * 16 * 4);
  // Fused, the ideal traffic: x 4 x 8, W 16 x 8, y 4 x 16 in fp32 and the fp32 bias of 16:
  // 4 x (32 + 128 + 64) + 4 x 16 = 960 B. Unfused adds the two passes above: 960 + 1024 = 1984 B,
  // so the fused form moves 1024 / 1984 = 51.6% fewer bytes.
  EXPECT_DOUBLE_EQ(rows[0].fused_bytes, 960);
  EXPECT_DOUBLE_EQ(rows[0].unfused_bytes, 1984);
  EXPECT_NEAR(rows[0].traffic_reduction, 1024.0 / 1984.0, 1e-12);
}

TEST(Fusion, VerdictThresholds) {
  FusionThresholds t;
  EXPECT_EQ(fusion_verdict(1.10, t), "fuse");
  EXPECT_EQ(fusion_verdict(1.09, t), "no benefit");
  EXPECT_EQ(fusion_verdict(0.95, t), "no benefit");
  EXPECT_EQ(fusion_verdict(0.94, t), "avoid");
}

// A verdict holds over the speedup's whole interval: medians known to ±50% (3 samples spread
// wide, no interval below 6 samples) or whose intervals reach past a threshold are uncertain.
TEST(Fusion, AnImpreciseSpeedupIsUncertain) {
  FusionThresholds t;
  EXPECT_EQ(fusion_verdict(1.12, 1.30, t), "fuse");
  EXPECT_EQ(fusion_verdict(1.05, 1.30, t), "uncertain");
  EXPECT_EQ(fusion_verdict(0.80, 0.90, t), "avoid");
  EXPECT_EQ(fusion_verdict(0.49, 1.49, t), "uncertain");
  const std::string shape = "batch=1,seq=4,hidden=8,out=16,act=gelu/threads=2";
  auto sampled = [&](const std::string& impl, std::vector<double> samples) {
    Result r = fixtures::timed("linear/" + impl + "/fp32/" + shape, 0);
    r.status = Status::ok;
    r.samples = samples;
    r.summary = summarize(samples);
    return r;
  };
  // 20 samples a side, each within ±1%: the 1.5x speedup's interval is about 1.48-1.52.
  std::vector<double> unfused, fused;
  for (int i = 0; i < 20; ++i) {
    unfused.push_back(3e-3 * (1 + 0.001 * (i % 10 - 5)));
    fused.push_back(2e-3 * (1 + 0.001 * (i % 10 - 5)));
  }
  auto rows = fusion_rows({sampled("onednn_unfused", unfused), sampled("onednn", fused)});
  ASSERT_EQ(rows.size(), 1u);
  const double pu = summarize(unfused).precision, pf = summarize(fused).precision;
  EXPECT_NEAR(rows[0].speedup_low, 1.5 * (1 - pu) / (1 + pf), 1e-9);
  EXPECT_NEAR(rows[0].speedup_high, 1.5 * (1 + pu) / (1 - pf), 1e-9);
  EXPECT_GT(rows[0].speedup_low, 1.4);
  EXPECT_EQ(rows[0].verdict, "fuse");
  // 3 samples a side: no interval, no verdict.
  auto few = fusion_rows({sampled("onednn_unfused", {3e-3, 3e-3, 3e-3}), sampled("onednn", {2e-3, 2e-3, 2e-3})});
  ASSERT_EQ(few.size(), 1u);
  EXPECT_EQ(few[0].verdict, "uncertain");
  EXPECT_TRUE(std::isinf(few[0].speedup_high));
  EXPECT_TRUE(to_json(few[0])["speedup_high"].is_null());
}

TEST(Fusion, PairsOnlyCasesOnTheSameDeviceGraphModeAndCacheMode) {
  const std::string shape = "batch=1,seq=4,hidden=8,out=16,act=gelu/";
  auto rows_of = [&](const std::string& unfused_settings, const std::string& fused_settings) {
    return fusion_rows({timed("linear/onednn_unfused/fp32/" + shape + unfused_settings, 2e-3, 10),
                        timed("linear/onednn/fp32/" + shape + fused_settings, 1e-3, 20)});
  };
  EXPECT_EQ(rows_of("device=cuda:0", "device=cuda:0").size(), 1u);
  EXPECT_EQ(rows_of("device=cuda:0,graph=8", "device=cuda:0,graph=8").size(), 1u);
  EXPECT_TRUE(rows_of("threads=1", "device=cuda:0").empty());
  EXPECT_TRUE(rows_of("device=cuda:1", "device=cuda:0").empty());
  EXPECT_TRUE(rows_of("device=cuda:0", "device=cuda:0,graph=8").empty());
  EXPECT_TRUE(rows_of("device=cuda:0,graph=4", "device=cuda:0,graph=8").empty());
  EXPECT_TRUE(rows_of("threads=2", "threads=2,hot").empty());
  EXPECT_TRUE(rows_of("threads=1", "threads=2").empty());
}

TEST(Fusion, NoBaselineNoRow) {
  std::vector<Result> results = {timed("linear/onednn/fp32/batch=1,seq=4,hidden=8,out=16,act=gelu/threads=2", 1e-3, 20)};
  EXPECT_TRUE(fusion_rows(results).empty());
  results[0].status = Status::failed;
  results.push_back(timed("linear/onednn_unfused/fp32/batch=1,seq=4,hidden=8,out=16,act=gelu/threads=2", 2e-3, 10));
  EXPECT_TRUE(fusion_rows(results).empty());  // failed cases are not compared
}

// A verdict from a doubtful time says so: the fused case's flags and its baseline's, prefixed,
// in the row, its JSON (which calibrate keeps in its profile) and the table.
TEST(Fusion, FlaggedTimesMarkTheRowAndItsVerdict) {
  const std::string shape = "batch=1,seq=4,hidden=8,out=16,act=gelu/threads=2";
  Result unfused = timed("linear/onednn_unfused/fp32/" + shape, 2e-3, 10);
  unfused.add_flag("unconverged");
  Result fused = timed("linear/onednn/fp32/" + shape, 1e-3, 20);
  fused.add_flag("contended");
  fused.add_flag("unchecked");  // not about its time
  auto rows = fusion_rows({unfused, fused});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].flags, (std::vector<std::string>{"contended", "unfused:unconverged"}));
  EXPECT_EQ(to_json(rows[0])["flags"], nlohmann::json({"contended", "unfused:unconverged"}));
  const auto md = fusion_markdown(rows, {});
  EXPECT_NE(md.find("| fuse | contended, unfused:unconverged |"), std::string::npos) << md;
  EXPECT_NE(fusion_markdown(fusion_rows({timed("linear/onednn_unfused/fp32/" + shape, 2e-3, 10),
                                         timed("linear/onednn/fp32/" + shape, 1e-3, 20)}),
                            {})
                .find("| fuse | - |"),
            std::string::npos);
}
