// The norms' `cuda` impl: known and planned without a GPU (skipped with the reason), and on a GPU
// correct for every dtype, width and row count, with the kernel shape each width should take.
#include <gtest/gtest.h>

#include <algorithm>

#include "opmeter/registry.hpp"
#include "tests/gpu_op_sweep.hpp"

using namespace opmeter;

namespace {
const char* const kNorms[] = {"layernorm", "rmsnorm", "batchnorm", "softmax"};

const Result* find(const std::vector<Result>& rs, const std::string& kase) {
  auto it = std::find_if(rs.begin(), rs.end(), [&](const Result& r) { return r.kase.to_string() == kase; });
  return it == rs.end() ? nullptr : &*it;
}
}  // namespace

TEST(NormCuda, ImplIsKnownWithoutThePluginInEveryDtype) {
  for (const char* op : kNorms) {
    const ImplDef* def = Registry::global().impl(op, "cuda");
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->runs_on("cuda")) << op;
    EXPECT_FALSE(def->runs_on("cpu")) << op;
    EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16})) << op;
    EXPECT_NO_THROW(validate_case(parse_case(fmt::format("{}/cuda/fp16/batch=2,seq=3,hidden=37/device=cuda:0", op)))) << op;
  }
}

TEST(NormCuda, SpecAcceptsTheReferenceRoundedTo16BitsAtEveryWidth) {
  for (const char* op : kNorms)
    for (const char* dtype : {"fp16", "bf16"})
      for (int hidden : {7, 4097, 262144}) {
        auto kase = fmt::format("{}/cuda/{}/batch=2,seq=1,hidden={}/device=cuda:0", op, dtype, hidden);
        auto check = opmeter::testing::check_of_rounded_reference(kase);
        EXPECT_TRUE(check.ok) << kase << ": " << check.detail;
      }
}

TEST(NormCuda, EveryDtypeWidthAndRowCountIsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* op : kNorms) {
    auto rs = opmeter::testing::run_gpu_sweep(op);
    if (std::string(op) == "batchnorm") continue;
    // The width picks the kernel: a lane per row, a warp, a block, the wide two-pass kernel; rows
    // that are not 16-byte aligned take scalar accesses.
    auto shape = [&](const std::string& kase) {
      const Result* r = find(rs, fmt::format(fmt::runtime(kase), op));
      return r ? r->details.at("kernel") : std::string("(no result)");
    };
    EXPECT_NE(shape("{}/cuda/bf16/batch=1,seq=1,hidden=8/device=cuda:0").find("a row per 1 lane"), std::string::npos);
    EXPECT_NE(shape("{}/cuda/bf16/batch=3,seq=37,hidden=1024/device=cuda:0").find("a row per warp"), std::string::npos);
    EXPECT_NE(shape("{}/cuda/fp32/batch=3,seq=37,hidden=4097/device=cuda:0").find("scalar"), std::string::npos);
    const auto [batch, seq] = opmeter::testing::sweep_rows(262144).back();  // the sweep's many rows at that width
    EXPECT_NE(
        shape(fmt::format("{{}}/cuda/fp16/batch={},seq={},hidden=262144/device=cuda:0", batch, seq)).find("two passes"),
        std::string::npos);
  }
}
