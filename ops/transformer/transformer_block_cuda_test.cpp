// transformer_block's `cuda` impl: what any machine knows of it (listing, the head dims of the
// flash kernel and their reason, skipped cases without a GPU), and on a GPU its results against
// the fp64 reference over dtypes, head dims 64 and 128, seq 1 / odd / tile-sized, causal or not,
// and activations in and out of the GEMM epilogue.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/transformer/head_layout_index.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

std::string block_case(const char* dtype, int batch, int seq, int hidden, int heads, int causal,
                       const char* act = "gelu", int mlp = 0) {
  return fmt::format(
      "transformer_block/cuda/{}/batch={},seq={},hidden={},heads={},mlp={},act={},causal={}/device=cuda:0", dtype,
      batch, seq, hidden, heads, mlp, act, causal);
}

}  // namespace

TEST(TransformerBlockCuda, ImplIsListedForCudaInFp16AndBf16) {
  const ImplDef* impl = Registry::global().impl("transformer_block", "cuda");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->runs_on("cuda"));
  EXPECT_FALSE(impl->runs_on("cpu"));
  EXPECT_FALSE(impl->on_request);
  EXPECT_EQ(impl->dtypes, (std::vector<DType>{DType::fp16, DType::bf16}));
  auto out = cli("list");
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("opmeter's CUDA pieces in sequence"), std::string::npos) << out.text;
}

TEST(TransformerBlockCuda, HeadDimsOutsideTheFlashKernelSayWhy) {
  const ImplDef* impl = Registry::global().impl("transformer_block", "cuda");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->supports(parse_case(block_case("bf16", 1, 8, 256, 4, 0))).ok);  // head_dim 64
  EXPECT_TRUE(impl->supports(parse_case(block_case("fp16", 1, 8, 768, 6, 1))).ok);  // 128
  auto d48 = impl->supports(parse_case(block_case("bf16", 1, 8, 48, 1, 0)));
  EXPECT_FALSE(d48.ok);
  EXPECT_EQ(d48.reason, "the flash-attention kernel is built for head_dim (hidden / heads) 64 and 128, not 48");
  // A run is skipped, for the head dim on a GPU (IsCorrectOnAGpu), else for the missing device.
  auto r = run_case(parse_case(block_case("bf16", 1, 8, 96, 1, 0)), quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_FALSE(r.reason.empty());
}

// The mapping the head split and merge kernels use, against the plain loops over (batch, head,
// position, 8-element piece): q's part of a QKV row (stride 3 * hidden) and a plain row.
TEST(TransformerBlockCuda, HeadLayoutMovesMapRowsToHeads) {
  const int batch = 3, seq = 5, heads = 4, head_dim = 24;
  const std::int64_t hidden = heads * head_dim;
  for (std::int64_t stride : {hidden, 3 * hidden}) {
    std::int64_t i = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t t = 0; t < seq; ++t)
          for (std::int64_t e = 0; e < head_dim; e += transformer::kHeadMoveElems, ++i) {
            auto m = transformer::move_offsets(i, seq, heads, head_dim, stride);
            ASSERT_EQ(m.row_elem, (b * seq + t) * stride + h * head_dim + e) << i;
            ASSERT_EQ(m.head_elem, ((b * heads + h) * seq + t) * head_dim + e) << i;
            ASSERT_EQ(m.row_elem % transformer::kHeadMoveElems, 0) << i;  // 16-byte moves stay aligned
          }
    EXPECT_EQ(i, batch * heads * seq * head_dim / transformer::kHeadMoveElems);
  }
  // Offsets past 2^31 stay exact (int64 throughout).
  const std::int64_t big_batch = 1 << 16;
  auto last = transformer::move_offsets(big_batch * 16 * 2048 * 16 - 1, 2048, 16, 128, 3 * 2048);
  EXPECT_EQ(last.head_elem, big_batch * 16 * 2048 * 128 - 8);
  EXPECT_EQ(last.row_elem, (big_batch * 2048 - 1) * 3 * 2048 + 15 * 128 + 120);
}

TEST(TransformerBlockCuda, CasesAreSkippedWithAReasonWithoutAGpu) {
  if (opmeter::testing::gpu_here()) GTEST_SKIP() << "a GPU is here: the GPU test covers these cases";
  auto kase = block_case("bf16", 2, 37, 256, 4, 1);
  auto r = run_case(parse_case(kase), quick_options());
  EXPECT_EQ(r.status, Status::skipped) << kase << ": " << r.reason;
  EXPECT_FALSE(r.reason.empty()) << kase;
}

TEST(TransformerBlockCuda, IsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* dtype : {"bf16", "fp16"})
    for (auto [hidden, heads] : {std::pair{256, 4}, std::pair{256, 2}})  // head_dim 64 and 128
      for (int seq : {1, 37, 256})
        for (int causal : {0, 1}) {
          // Two sequences: the head split and merge index the batch too.
          auto kase = block_case(dtype, 2, seq, hidden, heads, causal);
          auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
  // Activations in the W1 epilogue (relu, gelu_tanh), in the separate pass (silu), none; an
  // explicit mlp width not a multiple of hidden.
  for (const char* act : {"relu", "gelu_tanh", "silu", "none"}) {
    auto kase = block_case("bf16", 1, 37, 128, 2, 1, act, 200);
    auto r = run_case(parse_case(kase), quick_options());
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
  }
  auto d96 = run_case(parse_case(block_case("bf16", 1, 8, 96, 1, 0)), quick_options());
  EXPECT_EQ(d96.status, Status::skipped);
  EXPECT_NE(d96.reason.find("head_dim (hidden / heads) 64 and 128, not 96"), std::string::npos) << d96.reason;
}
