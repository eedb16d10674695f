// cublaslt_train, the CUDA training step of linear and ln_linear_<act>: registered for CUDA
// devices only, for training cases only; skipped with the plugin's
// reason without a GPU; on a GPU, every phase passes the step's fp64 gradient check.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {
bool gpu_present() {
  auto* p = cuda::plugin();
  return p && p->device(0).ok;
}
std::string train_case(const std::string& dtype, const std::string& shape, const std::string& extra = "") {
  return fmt::format("linear/cublaslt_train/{}/{},mode=train{}/device=cuda:0", dtype, shape, extra);
}
}  // namespace

TEST(LinearTrainCuda, RegisteredForCudaTrainingCasesOfTheLinearOps) {
  auto* def = Registry::global().impl("linear", "cublaslt_train");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->runs_on("cuda"));
  EXPECT_FALSE(def->runs_on("cpu"));
  EXPECT_EQ(def->needs, std::vector<std::string>{"mode"});
  EXPECT_TRUE(def->supports(parse_case(train_case("bf16", "batch=1,seq=8,hidden=16,out=8,act=none"))).ok);
  EXPECT_TRUE(def->supports(parse_case(train_case("bf16", "batch=1,seq=8,hidden=16,out=8,act=gelu"))).ok);
  ASSERT_NE(Registry::global().impl("ln_linear_relu", "cublaslt_train"), nullptr);
  EXPECT_TRUE(Registry::global().impl("ln_linear_relu", "cublaslt_train")->runs_on("cuda"));
  // An inference case is not its.
  EXPECT_FALSE(takes_optional_params(*def, parse_case("linear/cublaslt_train/bf16/batch=1,seq=8,hidden=16,out=8,act=none/device=cuda:0")).ok);
}

TEST(LinearTrainCuda, SkippedWithTheReasonWithoutAGpu) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is here: LinearTrainCuda.EveryPhasePassesTheGradientCheckOnAGpu covers it";
  auto r = run_case(parse_case(train_case("bf16", "batch=1,seq=8,hidden=16,out=8,act=none")), quick_options());
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_FALSE(r.reason.empty());
}

TEST(LinearTrainCuda, EveryPhasePassesTheGradientCheckOnAGpu) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (const char* shape : {"batch=1,seq=1,hidden=37,out=7,act=none", "batch=2,seq=33,hidden=264,out=136,act=gelu",
                              "batch=3,seq=5,hidden=40,out=24,act=relu"})
      for (const char* phase : {"", ",phase=forward", ",phase=backward"}) {
        auto kase = train_case(dtype, shape, phase);
        auto r = run_case(parse_case(kase), quick_options());
        EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        auto ln = fmt::format("ln_linear_gelu/cublaslt_train/{}/batch=2,seq=9,hidden=40,out=24,mode=train{}/device=cuda:0", dtype, phase);
        auto l = run_case(parse_case(ln), quick_options());
        EXPECT_EQ(l.status, Status::ok) << ln << ": " << l.reason;
      }
}

// LayerNorm's backward kernels beyond the shapes above: a block per row (hidden > 1024), 16-byte
// accesses (hidden 1032) and scalar ones (1031, odd), dgamma / dbeta over several row slabs with
// a shorter last one (layernorm_grad_partition.hpp: 200 rows -> 6 slabs of 34, the last 30).
TEST(LinearTrainCuda, LayerNormBackwardAtWideRowsPassesTheGradientCheckOnAGpu) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* shape : {"batch=2,seq=100,hidden=1032,out=8", "batch=1,seq=97,hidden=1031,out=8"}) {
      auto ln = fmt::format("ln_linear_gelu/cublaslt_train/{}/{},mode=train/device=cuda:0", dtype, shape);
      auto r = run_case(parse_case(ln), quick_options());
      EXPECT_EQ(r.status, Status::ok) << ln << ": " << r.reason;
    }
}
