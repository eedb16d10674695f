// decode_attention: model cost and work, parameter checks, hand-computed cases through the
// reference and opmeter's kernel, how heads are split into chunks, every CPU impl against the
// reference on odd shapes (split and unsplit), the torch form where Debian's PyTorch is, and the
// CUDA impl (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/decode_attention/decode_attention.hpp"
#include "ops/decode_attention/decode_attention_cpu.hpp"
#include "tests/case_problem.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"
#include "worker/shared_worker.hpp"

using namespace opmeter;
using opmeter::testing::case_problem;
using namespace opmeter::decode_attention;
using opmeter::testing::quick_options;

namespace {

std::string decode_case(const char* impl, const char* dtype, int batch, int heads, int kv, int head_dim,
                        const char* where = "threads=2") {
  return fmt::format("decode_attention/{}/{}/batch={},heads={},kv={},head_dim={}/{}", impl, dtype, batch, heads, kv, head_dim,
                     where);
}

bool gpu_here(std::string& why) {
  auto* p = cuda::plugin();
  if (p && p->device(0).ok) return true;
  why = p ? p->device(0).reason : cuda::load_reason();
  return false;
}

}  // namespace

TEST(DecodeAttentionOp, ModelCostAndWorkCountTheCacheOnce) {
  const OpDef* op = Registry::global().op("decode_attention");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->model_cost);
  auto kase = parse_case(decode_case("opmeter", "bf16", 2, 3, 37, 16));
  auto cost = op->model_cost(kase);
  EXPECT_DOUBLE_EQ(cost.params, 0);
  EXPECT_DOUBLE_EQ(cost.macs, 2.0 * 6 * 37 * 16);  // q K^T and P V
  auto w = op->work(kase);
  EXPECT_DOUBLE_EQ(w.flops, 4.0 * 6 * 37 * 16);
  EXPECT_DOUBLE_EQ(w.bytes_read, (2.0 * 37 * 16 + 16) * 6 * 2);  // K, V and q in bf16
  EXPECT_DOUBLE_EQ(w.bytes_written, 6.0 * 16 * 2);
  ASSERT_TRUE(op->spec);
}

TEST(DecodeAttentionOp, BadParametersSayWhich) {
  EXPECT_EQ(case_problem(decode_case("opmeter", "fp32", 1, 2, 0, 16)), "decode_attention kv=0 out of range: expected 1..16777216");
  EXPECT_EQ(case_problem(decode_case("opmeter", "fp32", 1, 2, 8, 0)),
            "decode_attention head_dim=0 out of range: expected 1..1024");
  auto out = cli("run --case " + decode_case("opmeter", "fp32", 1, 2, 0, 16));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("kv=0 out of range"), std::string::npos) << out.text;
}

// Two equal keys: equal weights, out is the mean of the two values; one key: out is its value.
TEST(DecodeAttentionOp, EqualKeysAverageTheValues) {
  for (int kv : {1, 2}) {
    DecodeAttentionOp spec;
    spec.bind(parse_case(decode_case("opmeter", "fp32", 1, 1, kv, 4)));
    auto in = spec.make_inputs(3);
    if (kv == 2)
      for (std::size_t c = 0; c < 4; ++c) store(Elem::f32, in[1].data(), 4 + c, in[1][c]);  // key 1 = key 0
    auto expected = [&](std::size_t c) { return kv == 1 ? in[2][c] : (in[2][c] + in[2][4 + c]) / 2; };
    spec.reference_rows(in, {0}, [&](std::size_t, const double* ref, const double*) {
      for (std::size_t c = 0; c < 4; ++c) EXPECT_NEAR(ref[c], expected(c), 1e-12) << "kv=" << kv;
    });
    HostTensor out(spec.output());
    CpuWorkspace ws;
    CpuArgs args{.q = in[0].data(), .k = in[1].data(), .v = in[2].data(), .out = out.data(), .heads = 1,
                 .kv = std::size_t(kv), .d = 4, .scale = 0.5f};
    ws.size_for(args, 2);
    run_cpu(args, ws);
    for (std::size_t c = 0; c < 4; ++c) EXPECT_NEAR(out[c], expected(c), 1e-6) << "kv=" << kv;
  }
}

// Scores 0 and ln 3 (q = (ln 3 / scale, 0), keys e0 and 0): weights 1/4 and 3/4.
TEST(DecodeAttentionOp, KernelWeighsValuesBySoftmaxOfScores) {
  const float scale = 1 / std::sqrt(2.0f);
  const float q[2] = {std::log(3.0f) / scale, 0}, k[4] = {0, 0, 1, 0}, v[4] = {8, -4, 4, 0};
  float out[2];
  CpuWorkspace ws;
  CpuArgs args{.q = q, .k = k, .v = v, .out = out, .heads = 1, .kv = 2, .d = 2, .scale = scale};
  ws.size_for(args, 1);
  run_cpu(args, ws);
  EXPECT_NEAR(out[0], 0.25 * 8 + 0.75 * 4, 1e-5);
  EXPECT_NEAR(out[1], 0.25 * -4, 1e-5);
}

TEST(DecodeAttentionOp, FewHeadsAreSplitIntoChunksOfAtLeastMinChunkKeys) {
  EXPECT_EQ(chunks_for(72, 2048, 2), 1u);   // heads alone: 36 tasks per thread
  EXPECT_EQ(chunks_for(1, 4096, 2), 8u);    // 4 tasks per thread
  EXPECT_EQ(chunks_for(1, 600, 2), 2u);     // no chunk under kMinChunk keys
  EXPECT_EQ(chunks_for(1, 100, 16), 1u);
  EXPECT_EQ(chunks_for(3, 100000, 4), 6u);  // ceil(16 / 3)
}

TEST(DecodeAttentionOp, CpuImplsMatchTheReferenceOnOddShapes) {
  struct Shape {
    int batch, heads, kv, head_dim;
  };
  // kv 1 and 37 (blocks of 64 keys, a partial block), head_dim 16 and odd; 1 head x 1000 keys
  // splits into 3 chunks (the last one shorter), 5 heads x 700 keys into 2 each.
  for (auto s : {Shape{2, 3, 37, 16}, Shape{1, 2, 1, 16}, Shape{1, 1, 1000, 24}, Shape{1, 5, 700, 13},
                 Shape{2, 2, 130, 64}, Shape{1, 1, 67, 128}})
    for (const char* impl : {"reference", "opmeter"})
      for (const char* dtype : {"fp32", "bf16"})
        for (const char* threads : {"threads=1", "threads=2"}) {
          auto kase = decode_case(impl, dtype, s.batch, s.heads, s.kv, s.head_dim, threads);
          auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
}

TEST(DecodeAttentionOp, TorchFormMatchesTheReference) {
  const std::string python = OPMETER_TEST_PYTHON;
  if (std::system((python + " -c 'import torch' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << python << " has no PyTorch";
  setenv("OPMETER_PYTHON", python.c_str(), 1);
  worker::stop_shared_worker();
  for (const char* dtype : {"fp32", "bf16"}) {
    auto kase = decode_case("torch", dtype, 2, 3, 37, 16, "threads=1");
    auto r = run_case(parse_case(kase), quick_options());
    EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(r.max_error, r.tolerance) << kase;
  }
  worker::stop_shared_worker();
  unsetenv("OPMETER_PYTHON");
}

TEST(DecodeAttentionCuda, IsRegisteredForCudaAndSaysItsLimits) {
  const ImplDef* impl = Registry::global().impl("decode_attention", "cuda");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->runs_on("cuda"));
  EXPECT_FALSE(impl->runs_on("cpu"));
  EXPECT_EQ(impl->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16}));
  auto wide = impl->supports(parse_case(decode_case("cuda", "bf16", 1, 2, 64, 512, "device=cuda:0")));
  EXPECT_FALSE(wide.ok);
  EXPECT_EQ(wide.reason, "the CUDA kernel takes head_dim up to 256 (fast for 64 and 128), not 512");
  EXPECT_TRUE(impl->supports(parse_case(decode_case("cuda", "bf16", 1, 72, 2048, 128, "device=cuda:0"))).ok);
}

TEST(DecodeAttentionCuda, CasesAreSkippedWithAReasonWithoutAGpu) {
  std::string why;
  if (gpu_here(why)) GTEST_SKIP() << "a GPU is here: the GPU test covers these cases";
  auto r = run_case(parse_case(decode_case("cuda", "bf16", 1, 2, 37, 128, "device=cuda:0")), quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_FALSE(r.reason.empty());
}

TEST(DecodeAttentionCuda, IsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  // head_dim 64/128: the fast path; 16, 80, 200: the generic one. kv 1 (one split), 37, 1000 and
  // 5000 (several splits, a shorter last one); heads from 1 (most splits) to 96 (fewest). At kv
  // 5000, 8 heads, not 96: the inputs and the host's reference of 96 would be 1.5 GB a case.
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (int d : {64, 128, 16, 80, 200})
      for (int kv : {1, 37, 1000, 5000})
        for (int heads : {1, kv < 5000 ? 96 : 8}) {
          auto kase = decode_case("cuda", dtype, 2, heads, kv, d, "device=cuda:0");
          auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
}
