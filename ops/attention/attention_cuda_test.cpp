// The CUDA attention impls: what any machine knows of them (listing, the flash kernel's shape
// limits and their reasons, skipped cases without a GPU), and on a GPU their results against the
// fp64 reference over dtypes, head dims, odd and tile-sized seq, causal and every stage.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

std::string attention_case(const char* impl, const char* dtype, int batch, int heads, int seq, int head_dim, int causal,
                           const char* stage) {
  return fmt::format("attention/{}/{}/batch={},heads={},seq={},head_dim={},causal={},stage={}/device=cuda:0", impl, dtype,
                     batch, heads, seq, head_dim, causal, stage);
}

Support flash_supports(const std::string& kase) {
  const ImplDef* impl = Registry::global().impl("attention", "cuda");
  if (!impl) return Support::no("no impl attention/cuda");
  return impl->supports(parse_case(kase));
}

bool gpu_here(std::string& why) {
  auto* p = cuda::plugin();
  if (p && p->device(0).ok) return true;
  why = p ? p->device(0).reason : cuda::load_reason();
  return false;
}

const int kSeqs[] = {1, 17, 64, 129, 1024};

}  // namespace

TEST(AttentionCuda, ImplsAreRegisteredForCudaWithTheirDtypes) {
  const ImplDef* flash = Registry::global().impl("attention", "cuda");
  const ImplDef* unfused = Registry::global().impl("attention", "cuda_unfused");
  ASSERT_NE(flash, nullptr);
  ASSERT_NE(unfused, nullptr);
  EXPECT_TRUE(flash->runs_on("cuda"));
  EXPECT_FALSE(flash->runs_on("cpu"));
  EXPECT_EQ(flash->dtypes, (std::vector<DType>{DType::fp16, DType::bf16}));
  EXPECT_EQ(unfused->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16}));
  EXPECT_FALSE(flash->on_request);  // measured with the op's other impls, like every own CUDA kernel

  auto out = cli("list");
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("cuda_unfused"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("opmeter's flash-attention kernel"), std::string::npos) << out.text;
}

TEST(AttentionCuda, FlashKernelShapeLimitsSayWhy) {
  EXPECT_TRUE(flash_supports(attention_case("cuda", "bf16", 8, 16, 4096, 128, 1, "full")).ok);
  EXPECT_TRUE(flash_supports(attention_case("cuda", "fp16", 1, 1, 17, 64, 0, "full")).ok);

  auto d96 = flash_supports(attention_case("cuda", "bf16", 1, 2, 64, 96, 0, "full"));
  EXPECT_FALSE(d96.ok);
  EXPECT_EQ(d96.reason, "the flash kernel is built for head_dim 64 and 128, not 96");

  for (const char* stage : {"scores", "probs"}) {
    auto s = flash_supports(attention_case("cuda", "bf16", 1, 2, 64, 64, 0, stage));
    EXPECT_FALSE(s.ok) << stage;
    EXPECT_EQ(s.reason, "the flash kernel computes stage=full (cuda_unfused runs every stage)") << stage;
  }

  auto fp32 = flash_supports(attention_case("cuda", "fp32", 1, 2, 64, 64, 0, "full"));
  EXPECT_FALSE(fp32.ok);
  EXPECT_NE(fp32.reason.find("bf16/fp16 tensor cores, not fp32"), std::string::npos) << fp32.reason;
}

TEST(AttentionCuda, CasesAreSkippedWithAReasonWithoutAGpu) {
  std::string why;
  if (gpu_here(why)) GTEST_SKIP() << "a GPU is here: the GPU tests cover these cases";
  for (const char* impl : {"cuda", "cuda_unfused"}) {
    auto kase = attention_case(impl, "bf16", 1, 2, 129, 64, 1, "full");
    auto r = run_case(parse_case(kase), quick_options());
    EXPECT_EQ(r.status, Status::skipped) << kase << ": " << r.reason;
    EXPECT_FALSE(r.reason.empty()) << kase;
  }
  // A dtype the flash kernel lacks says so before anything looks for a device.
  auto r = run_case(parse_case(attention_case("cuda", "fp32", 1, 2, 129, 64, 0, "full")), quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_FALSE(r.reason.empty());
}

TEST(AttentionCuda, FlashKernelIsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  for (const char* dtype : {"bf16", "fp16"})
    for (int d : {64, 128})
      for (int seq : kSeqs)
        for (int causal : {0, 1}) {
          // Several heads and batches: per-head offsets and the grid's head axis are exercised.
          auto kase = attention_case("cuda", dtype, 2, 3, seq, d, causal, "full");
          auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
  // On a GPU the shape limits still give their reason.
  for (auto kase : {attention_case("cuda", "bf16", 1, 2, 64, 96, 0, "full"),
                    attention_case("cuda", "bf16", 1, 2, 64, 64, 1, "probs")}) {
    auto r = run_case(parse_case(kase), quick_options());
    EXPECT_EQ(r.status, Status::skipped) << kase;
    EXPECT_NE(r.reason.find("the flash kernel"), std::string::npos) << kase << ": " << r.reason;
  }
}

TEST(AttentionCuda, UnfusedIsCorrectOnAGpuForEveryStage) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (const char* stage : {"scores", "probs", "full"})
      for (int causal : {0, 1}) {
        std::vector<std::pair<int, int>> shapes;  // (seq, head_dim)
        // Not seq 1024: cuBLAS and the softmax have no tile that 129 misses, and the host's
        // reference of 1024 would take most of the test's time.
        for (int seq : kSeqs)
          if (seq < 1024)
            for (int d : {64, 128}) shapes.emplace_back(seq, d);
        shapes.emplace_back(71, 13);  // odd rows: the softmax's scalar path, cuBLAS at odd leading dims
        for (auto [seq, d] : shapes) {
          auto kase = attention_case("cuda_unfused", dtype, 2, 3, seq, d, causal, stage);
          auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
      }
}

TEST(AttentionCuda, UnfusedSaysWhenSAndPWouldNotFit) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  // 2^31 heads' worth of seq x seq: far beyond any GPU, but within the op's parameter ranges.
  auto kase = attention_case("cuda_unfused", "bf16", 64, 4096, 16384, 64, 0, "full");
  auto r = run_case(parse_case(kase), quick_options());
  EXPECT_EQ(r.status, Status::skipped) << kase;
  EXPECT_NE(r.reason.find("GiB"), std::string::npos) << r.reason;
}
