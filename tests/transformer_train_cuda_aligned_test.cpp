// cuda_train (transformer_block's training step on CUDA) where the backward's row kernels take
// their 16-byte paths: sequences a multiple of 4 (softmax_backward.cu moves 4 scores a lane, the
// causal edge inside and past a pack) and hidden a multiple of 8 (LayerNorm's dx). The odd shapes
// of ops/transformer/transformer_block_cuda_train_test.cpp keep the single-element paths covered.
// Suite TransformerBlockCuda: scripts/gpu-check.sh's GPU tests run it.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "engine/runner.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

TEST(TransformerBlockCuda, TrainStepAtAlignedRowsPassesTheTrainingCheckOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* dtype : {"bf16", "fp16"})
    for (const char* shape : {"batch=2,seq=12,hidden=64,heads=2,mlp=32,act=gelu,causal=1",
                              "batch=1,seq=8,hidden=48,heads=3,mlp=0,act=none,causal=0"}) {
      const auto kase = fmt::format("transformer_block/cuda_train/{}/{},mode=train/device=cuda:0", dtype, shape);
      auto r = run_case(parse_case(kase), quick_options());
      ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
      EXPECT_LE(*r.max_error, *r.tolerance) << kase;
    }
}
