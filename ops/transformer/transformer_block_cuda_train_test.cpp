// cuda_train, transformer_block's training step on CUDA devices (in suite TransformerBlockCuda, so
// that scripts/gpu-check.sh's GPU tests run it): registered for CUDA training
// cases only, skipped with the plugin's reason without a GPU; on a GPU every phase passes the
// block's mode=train check (y and every gradient against fp64) on odd shapes: head dims outside
// the flash kernel's, sequences of one and of a few, causal or not, gelu / silu / none, sections
// of the output at unaligned offsets.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/runner.hpp"
#include "opmeter/registry.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {
std::string train_case(const std::string& dtype, const std::string& shape, const std::string& extra = "") {
  return fmt::format("transformer_block/cuda_train/{}/{},mode=train{}/device=cuda:0", dtype, shape, extra);
}
}  // namespace

TEST(TransformerBlockCuda, TrainStepRegisteredForCudaTrainingCasesOnly) {
  const ImplDef* def = Registry::global().impl("transformer_block", "cuda_train");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->runs_on("cuda"));
  EXPECT_FALSE(def->runs_on("cpu"));
  EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp16, DType::bf16}));
  EXPECT_EQ(def->needs, std::vector<std::string>{"mode"});
  // Any head_dim: attention's products are cuBLAS GEMMs (48 / 1 heads is outside the flash kernel).
  EXPECT_TRUE(def->supports(parse_case(train_case("bf16", "batch=1,seq=8,hidden=48,heads=1,mlp=0,act=gelu,causal=0"))).ok);
  auto inference = def->supports(parse_case(
      "transformer_block/cuda_train/bf16/batch=1,seq=8,hidden=48,heads=1,mlp=0,act=gelu,causal=0,mode=inference/device=cuda:0"));
  EXPECT_FALSE(inference.ok);
  EXPECT_NE(inference.reason.find("runs mode=train"), std::string::npos) << inference.reason;
  // A case without mode is not its.
  EXPECT_FALSE(takes_optional_params(
                   *def, parse_case("transformer_block/cuda_train/bf16/batch=1,seq=8,hidden=48,heads=1,mlp=0,act=gelu,causal=0/device=cuda:0"))
                   .ok);
}

TEST(TransformerBlockCuda, TrainStepSkippedWithTheReasonWithoutAGpu) {
  if (opmeter::testing::gpu_here()) GTEST_SKIP() << "a GPU is here: TrainStepPassesTheTrainingCheckOnAGpu covers it";
  auto r = run_case(parse_case(train_case("bf16", "batch=1,seq=8,hidden=48,heads=3,mlp=0,act=gelu,causal=1")), quick_options());
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_FALSE(r.reason.empty());
}

TEST(TransformerBlockCuda, TrainStepPassesTheTrainingCheckOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  // head_dim 16 over two sequences (the per-sequence GEMMs), 18 with sections at odd offsets
  // (staged and copied in), a sequence of one with no activation, seq a multiple of 4 (the softmax
  // backward's 16-byte path); each phase on the first.
  const char* shapes[] = {"batch=2,seq=7,hidden=48,heads=3,mlp=40,act=gelu,causal=1",
                          "batch=1,seq=9,hidden=36,heads=2,mlp=0,act=silu,causal=0",
                          "batch=3,seq=1,hidden=64,heads=4,mlp=24,act=none,causal=1",
                          "batch=1,seq=32,hidden=64,heads=2,mlp=128,act=gelu,causal=1"};
  std::vector<std::string> cases;
  for (const char* dtype : {"bf16", "fp16"})
    for (const char* shape : shapes) cases.push_back(train_case(dtype, shape));
  for (const char* phase : {",phase=forward", ",phase=backward"}) cases.push_back(train_case("bf16", shapes[0], phase));
  for (const auto& kase : cases) {
    auto r = run_case(parse_case(kase), quick_options());
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
  }
}
