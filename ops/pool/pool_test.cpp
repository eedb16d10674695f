// pool2d: work model, parameter checks, the reference on hand-computed cases, the spec's check
// (right, wrong and missing outputs), every CPU impl against the reference on odd shapes (max,
// average with padding, global average), the torch form, and on a GPU the CUDA impl.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/pool/pool.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"
#include "tests/torch_worker.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

// The spec bound to `kase` with input x = offset + 0, 1, 2, ... (row-major NCHW), and its reference output.
struct Hand {
  pool::PoolOp spec;
  HostTensors in;
  std::vector<double> out;
};
Hand hand(const std::string& kase, double offset = 0) {
  Hand h;
  h.spec.bind(parse_case(kase));
  h.in = h.spec.make_inputs(1);
  for (std::size_t i = 0; i < h.in[0].desc().count; ++i) store(h.in[0].desc().elem, h.in[0].data(), i, offset + double(i));
  std::vector<double> ref(h.spec.out_cols()), mag(h.spec.out_cols());
  for (std::size_t r = 0; r < h.spec.out_rows(); ++r) {
    h.spec.reference_row(h.in, r, ref.data(), mag.data());
    h.out.insert(h.out.end(), ref.begin(), ref.end());
  }
  return h;
}

void expect_case_error(const std::string& kase, const std::string& message) {
  try {
    validate_case(parse_case(kase));
    ADD_FAILURE() << kase << " accepted";
  } catch (const CaseError& e) {
    EXPECT_EQ(std::string(e.what()), message) << kase;
  }
}

// Odd shapes that take every path: max with padding, average with padding counted, a stride
// larger than the kernel, a large kernel, global average (one output per plane).
const char* const kShapes[] = {
    "batch=2,channels=3,image=9,kernel=3,stride=2,padding=1,kind=max",
    "batch=1,channels=5,image=8,kernel=3,stride=2,padding=1,kind=avg",
    "batch=1,channels=3,image=11,kernel=2,stride=3,padding=1,kind=max",
    "batch=2,channels=2,image=13,kernel=5,stride=1,padding=2,kind=avg",
    "batch=3,channels=7,image=7,kernel=7,stride=1,padding=0,kind=avg",
    "batch=1,channels=4,image=1,kernel=1,stride=1,padding=0,kind=max",
};

}  // namespace

TEST(PoolOp, WorkIsAWindowPerOutputAndOnePassOverMemory) {
  const OpDef* op = Registry::global().op("pool2d");
  ASSERT_NE(op, nullptr);
  // 2 planes of 4x4, 2x2 windows at stride 2: 2 x 2 x 2 outputs of 4 elements each.
  auto w = op->work(parse_case("pool2d/opmeter/fp32/batch=1,channels=2,image=4,kernel=2,stride=2,padding=0,kind=max/threads=1"));
  EXPECT_DOUBLE_EQ(w.flops, 8 * 4);
  EXPECT_DOUBLE_EQ(w.bytes_read, 32 * 4);
  EXPECT_DOUBLE_EQ(w.bytes_written, 8 * 4);
  auto g = op->work(parse_case("pool2d/opmeter/bf16/batch=2,channels=3,image=7,kernel=7,stride=1,padding=0,kind=avg/threads=1"));
  EXPECT_DOUBLE_EQ(g.flops, 6 * 49);
  EXPECT_DOUBLE_EQ(g.bytes(), (6 * 49 + 6) * 2);
  EXPECT_FALSE(op->model_cost) << "pooling holds no parameters and does no MACs";
}

TEST(PoolOp, BadParametersSayWhich) {
  const std::string base = "pool2d/opmeter/fp32/batch=1,channels=2,";
  expect_case_error(base + "image=4,kernel=7,stride=1,padding=1,kind=max/threads=1",
                    "pool2d kernel=7 larger than the padded image (6)");
  expect_case_error(base + "image=8,kernel=3,stride=1,padding=2,kind=max/threads=1", "pool2d padding=2 above half the kernel (3)");
  expect_case_error(base + "image=8,kernel=3,stride=1,padding=1,kind=min/threads=1",
                    "pool2d kind='min' unknown: expected max or avg");
  expect_case_error(base + "image=8,kernel=3,stride=0,padding=1,kind=max/threads=1",
                    "pool2d stride=0 out of range: expected 1..16384");
  auto out = cli("run --case pool2d/opmeter/fp32/batch=1,channels=2,image=4,kernel=7,stride=1,padding=1,kind=max/threads=1");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("pool2d kernel=7 larger than the padded image"), std::string::npos) << out.text;
}

TEST(PoolOp, ReferenceMatchesHandComputedPools) {
  // x = 0..15 as a 4x4 image: 2x2 max windows at stride 2 take each quadrant's bottom-right.
  auto max = hand("pool2d/reference/fp32/batch=1,channels=1,image=4,kernel=2,stride=2,padding=0,kind=max/threads=1");
  EXPECT_EQ(max.out, (std::vector<double>{5, 7, 13, 15}));
  // 3x3 average, padding 1, stride 2 on 0..15: the corner window holds 0 1 4 5 and five zeros of
  // padding, divided by 9 (count_include_pad).
  auto avg = hand("pool2d/reference/fp32/batch=1,channels=1,image=4,kernel=3,stride=2,padding=1,kind=avg/threads=1");
  ASSERT_EQ(avg.out.size(), 4u);
  EXPECT_DOUBLE_EQ(avg.out[0], (0 + 1 + 4 + 5) / 9.0);
  EXPECT_DOUBLE_EQ(avg.out[1], (1 + 2 + 3 + 5 + 6 + 7) / 9.0);
  EXPECT_DOUBLE_EQ(avg.out[3], (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0);
  // Global average of two 3x3 planes: 4 and 13.
  auto global = hand("pool2d/reference/fp32/batch=1,channels=2,image=3,kernel=3,stride=1,padding=0,kind=avg/threads=1");
  EXPECT_EQ(global.out, (std::vector<double>{4, 13}));
  // Max never picks the padding: on x - 100 (all negative) padded windows still give an input.
  auto neg = hand("pool2d/reference/fp32/batch=1,channels=1,image=4,kernel=3,stride=2,padding=1,kind=max/threads=1", -100);
  EXPECT_EQ(neg.out, (std::vector<double>{-95, -93, -87, -85}));
}

TEST(PoolOp, SpecCatchesAWrongOrMissingOutput) {
  for (const char* kind : {"max", "avg"}) {
    auto h = hand(fmt::format("pool2d/reference/fp32/batch=1,channels=2,image=6,kernel=3,stride=1,padding=1,kind={}/threads=1", kind));
    HostTensor out(h.spec.output());
    for (std::size_t i = 0; i < h.out.size(); ++i) store(Elem::f32, out.data(), i, h.out[i]);
    auto ok = h.spec.check(h.in, out, 3);
    EXPECT_TRUE(ok.ok) << ok.detail;
    store(Elem::f32, out.data(), 7, h.out[7] * 1.01 + 0.01);
    auto bad = h.spec.check(h.in, out, 3);
    EXPECT_FALSE(bad.ok) << kind;
    EXPECT_NE(bad.detail.find("at [1,1]"), std::string::npos) << bad.detail;
    out.poison();
    EXPECT_NE(h.spec.check(h.in, out, 3).detail.find("not written"), std::string::npos);
  }
}

TEST(PoolOp, CpuImplsMatchTheReferenceOnOddShapes) {
  for (const char* impl : {"reference", "opmeter", "onednn"})
    for (const char* dtype : {"fp32", "bf16"})
      for (const char* shape : kShapes) {
        auto kase = fmt::format("pool2d/{}/{}/{}/threads=2", impl, dtype, shape);
        auto r = run_case(parse_case(kase), quick_options(2));
        if (opmeter::testing::skipped_for_want_of_onednn_bf16(r, std::string(impl) == "onednn", std::string(dtype) == "bf16"))
          continue;
        ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        EXPECT_LE(*r.max_error, *r.tolerance) << kase;
      }
}

TEST(PoolOp, GlobalAverageTakesTheFastPath) {
  auto r = run_case(parse_case("pool2d/opmeter/fp32/batch=2,channels=64,image=7,kernel=7,stride=1,padding=0,kind=avg/threads=2"),
                    quick_options(2));
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_NE(r.details.at("kernel").find("global average"), std::string::npos);
  auto w = run_case(parse_case("pool2d/opmeter/fp32/batch=1,channels=8,image=56,kernel=3,stride=2,padding=1,kind=max/threads=2"),
                    quick_options(2));
  ASSERT_EQ(w.status, Status::ok) << w.reason;
  EXPECT_NE(w.details.at("kernel").find("window"), std::string::npos);
}

TEST(PoolOp, TorchFormMatchesTheReference) {
  REQUIRE_PYTHON_TORCH();
  opmeter::testing::TorchWorker env;
  for (const char* shape : {kShapes[0], kShapes[1], kShapes[4]}) {
    auto kase = fmt::format("pool2d/torch/fp32/{}/threads=1", shape);
    auto r = run_case(parse_case(kase), quick_options(2));
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
  }
}

TEST(PoolOp, CudaImplIsKnownWithoutAGpu) {
  const ImplDef* def = Registry::global().impl("pool2d", "cuda");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->runs_on("cuda"));
  EXPECT_FALSE(def->runs_on("cpu"));
  EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16}));
}

TEST(PoolOp, CudaImplIsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  std::vector<std::string> shapes(std::begin(kShapes), std::end(kShapes));
  // More outputs than the grid's threads, and many planes of a ResNet head's global average.
  shapes.push_back("batch=64,channels=64,image=112,kernel=3,stride=2,padding=1,kind=max");
  shapes.push_back("batch=64,channels=2048,image=7,kernel=7,stride=1,padding=0,kind=avg");
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (const auto& shape : shapes) {
      auto kase = fmt::format("pool2d/cuda/{}/{}/device=cuda:0", dtype, shape);
      auto r = run_case(parse_case(kase), quick_options(2));
      ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
      EXPECT_LE(*r.max_error, *r.tolerance) << kase;
    }
}
