// The losses' `cuda` impl: known and planned without a GPU, and on a GPU correct for every dtype,
// width and row count, and deterministic (the same inputs give the same bits).
#include <gtest/gtest.h>

#include "opmeter/registry.hpp"
#include "tests/gpu_op_sweep.hpp"

using namespace opmeter;

TEST(LossCuda, ImplIsKnownWithoutThePluginInEveryDtype) {
  for (const char* op : {"mse", "cross_entropy"}) {
    const ImplDef* def = Registry::global().impl(op, "cuda");
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->runs_on("cuda")) << op;
    EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16})) << op;
    EXPECT_NO_THROW(validate_case(parse_case(fmt::format("{}/cuda/fp16/batch=2,seq=3,hidden=37/device=cuda:0", op)))) << op;
  }
}

TEST(LossCuda, SpecAcceptsTheReferenceRoundedTo16BitsAtEveryWidth) {
  for (const char* op : {"mse", "cross_entropy"})
    for (const char* dtype : {"fp16", "bf16"})
      for (int hidden : {7, 4097, 262144}) {
        auto kase = fmt::format("{}/cuda/{}/batch=2,seq=1,hidden={}/device=cuda:0", op, dtype, hidden);
        auto check = opmeter::testing::check_of_rounded_reference(kase);
        EXPECT_TRUE(check.ok) << kase << ": " << check.detail;
      }
}

TEST(LossCuda, EveryDtypeWidthAndRowCountIsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* op : {"mse", "cross_entropy"}) opmeter::testing::run_gpu_sweep(op);
}

TEST(LossCuda, TheReductionIsDeterministicOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* kase : {"mse/cuda/bf16/batch=32,seq=1024,hidden=1024/device=cuda:0",
                           "cross_entropy/cuda/fp32/batch=64,seq=64,hidden=4097/device=cuda:0"}) {
    auto a = run_case(parse_case(kase), opmeter::testing::quick_options(2));
    auto b = run_case(parse_case(kase), opmeter::testing::quick_options(2));
    ASSERT_EQ(a.status, Status::ok) << kase << ": " << a.reason;
    ASSERT_EQ(b.status, Status::ok) << kase << ": " << b.reason;
    EXPECT_EQ(*a.max_error, *b.max_error) << kase;  // the same inputs (same seed): the same loss, bit for bit
  }
}
