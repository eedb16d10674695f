// The activations' `cuda` impl: known and planned without a GPU, and on a GPU correct for every
// dtype, size (vector body and scalar tail) and row count.
#include <gtest/gtest.h>

#include "ops/tensor/kernels.hpp"
#include "opmeter/registry.hpp"
#include "tests/gpu_op_sweep.hpp"

using namespace opmeter;

TEST(ActivationCuda, ImplIsKnownWithoutThePluginInEveryDtype) {
  for (tensor::Act a : tensor::all_acts()) {
    std::string op(tensor::to_string(a));
    const ImplDef* def = Registry::global().impl(op, "cuda");
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->runs_on("cuda")) << op;
    EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16})) << op;
    EXPECT_NO_THROW(validate_case(parse_case(op + "/cuda/fp16/batch=2,seq=3,hidden=37/device=cuda:0"))) << op;
  }
}

TEST(ActivationCuda, SpecAcceptsTheReferenceRoundedTo16BitsAtEveryWidth) {
  for (const char* op : {"relu6", "gelu", "gelu_tanh", "silu", "sigmoid"})
    for (const char* dtype : {"fp16", "bf16"})
      for (int hidden : {7, 4097, 262144}) {
        auto kase = fmt::format("{}/cuda/{}/batch=2,seq=1,hidden={}/device=cuda:0", op, dtype, hidden);
        auto check = opmeter::testing::check_of_rounded_reference(kase);
        EXPECT_TRUE(check.ok) << kase << ": " << check.detail;
      }
}

TEST(ActivationCuda, EveryDtypeAndSizeIsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  // Every activation at one row and a few rows of every width; the grid's loop over many rows
  // (2^22 elements and more a case; the whole test took 108 s on an H200) with the first only, as
  // all share the elementwise kernel's shapes.
  bool first = true;
  for (tensor::Act a : tensor::all_acts()) {
    opmeter::testing::run_gpu_sweep(std::string(tensor::to_string(a)), first);
    first = false;
  }
}
