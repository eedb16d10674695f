// transformer_block's `cuda_quant` impl: what any machine knows of it (listing, the recipes it
// takes and why not the others, skipped cases without a GPU), and on a GPU: every weight-only
// recipe passes the spec's fp64 gate with the recipe's stored weights, reports the SQNR of y - x
// as the CPU impl opmeter_quant does on the same case, and the weight bytes of the packed layout.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/linear/quant_gpu_plan.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

// head_dim 64 (the flash kernel's), mlp 256; groups of 32 and 64 divide hidden and mlp.
std::string qblock_case(const std::string& impl, const std::string& recipe, const std::string& tail = "device=cuda:0",
                        int seq = 9) {
  return fmt::format(
      "transformer_block/{}/bf16/batch=2,seq={},hidden=128,heads=2,mlp=256,act=gelu,causal=1,quant={}/{}", impl, seq,
      recipe, tail);
}

double metric(const Result& r, const std::string& name) {
  auto it = r.metrics.find(name);
  return it == r.metrics.end() ? std::nan("") : it->second.value;
}

}  // namespace

TEST(TransformerBlockCudaQuant, IsListedForCudaAndNeedsARecipe) {
  const ImplDef* impl = Registry::global().impl("transformer_block", "cuda_quant");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->runs_on("cuda"));
  EXPECT_FALSE(impl->runs_on("cpu"));
  EXPECT_EQ(impl->dtypes, (std::vector<DType>{DType::fp16, DType::bf16}));
  EXPECT_EQ(impl->needs, (std::vector<std::string>{"quant"}));
}

TEST(TransformerBlockCudaQuant, RecipesItCannotRunSayWhy) {
  const ImplDef* impl = Registry::global().impl("transformer_block", "cuda_quant");
  ASSERT_NE(impl, nullptr);
  for (const char* r : {"int8wo", "float8wo", "int4wo-64", "hqq-int4-32"})
    EXPECT_TRUE(impl->supports(parse_case(qblock_case("cuda_quant", r))).ok) << r;
  auto dynamic = impl->supports(parse_case(qblock_case("cuda_quant", "int8dq")));
  EXPECT_FALSE(dynamic.ok);
  EXPECT_NE(dynamic.reason.find("weight-only recipes"), std::string::npos) << dynamic.reason;
  auto baseline = impl->supports(parse_case(qblock_case("cuda_quant", "baseline")));
  EXPECT_FALSE(baseline.ok);
  EXPECT_NE(baseline.reason.find("impl cuda"), std::string::npos) << baseline.reason;
  // A group that does not divide hidden 128.
  auto group = impl->supports(parse_case(qblock_case("cuda_quant", "int4wo-256")));
  EXPECT_FALSE(group.ok);
  EXPECT_FALSE(group.reason.empty());
  // The flash kernel's head dims still apply.
  auto d96 = impl->supports(parse_case(
      "transformer_block/cuda_quant/bf16/batch=1,seq=8,hidden=96,heads=1,mlp=0,act=gelu,causal=0,quant=int8wo/device=cuda:0"));
  EXPECT_FALSE(d96.ok);
  EXPECT_NE(d96.reason.find("head_dim"), std::string::npos) << d96.reason;
}

TEST(TransformerBlockCudaQuant, CasesAreSkippedWithAReasonWithoutAGpu) {
  if (opmeter::testing::gpu_here()) GTEST_SKIP() << "a GPU is here: the GPU test covers these cases";
  auto r = run_case(parse_case(qblock_case("cuda_quant", "int4wo-64")), quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_FALSE(r.reason.empty());
}

TEST(TransformerBlockCudaQuant, IsCorrectOnAGpuWithTheCpuImplsSqnr) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  const double h = 128, m = 256;
  const double shapes[4][2] = {{3 * h, h}, {h, h}, {m, h}, {h, m}};  // (out, in) of Wqkv, Wo, W1, W2
  for (const char* recipe : {"int8wo", "float8wo", "int4wo-64", "hqq-int4-32"})
    for (int seq : {1, 9, 40}) {  // decode (split-K), a few rows, more than 64 rows (64-row tiles)
      const auto kase = qblock_case("cuda_quant", recipe, "device=cuda:0", seq);
      auto r = run_case(parse_case(kase), quick_options());
      if (r.status == Status::skipped && std::string(recipe) == "float8wo") {
        EXPECT_NE(r.reason.find("8.9"), std::string::npos) << r.reason;  // fp8 on older GPUs
        continue;
      }
      ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
      EXPECT_LE(*r.max_error, *r.tolerance) << kase;
      // The same case on the CPU: the same spec, weights and codes, so SQNR within rounding noise.
      auto cpu = run_case(parse_case(qblock_case("opmeter_quant", recipe, "threads=2", seq)), quick_options());
      ASSERT_EQ(cpu.status, Status::ok) << cpu.reason;
      EXPECT_GT(metric(r, "sqnr_db"), 10) << kase;
      EXPECT_NEAR(metric(r, "sqnr_db"), metric(cpu, "sqnr_db"), 2.0) << kase;
      const auto rec = *quant::parse_recipe(recipe);
      double bytes = 0;
      for (auto& [out, in] : shapes)
        bytes += double(linear::gpu_pack::weight_only_device_bytes(rec, std::size_t(out), std::size_t(in),
                                                                   std::size_t(2 * seq)));  // batch=2
      EXPECT_EQ(metric(r, "weight_bytes"), bytes) << kase;
    }
}
