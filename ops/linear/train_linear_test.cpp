// Training steps of linear layers (mode=train): the spec's check, onednn_train, cublaslt_train
// on a GPU, and the CLI's mode / quantization axes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cuda/cuda_plugin.hpp"
#include "opmeter/runner.hpp"
#include "ops/linear/train_linear.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

namespace opmeter::linear {
namespace {
using testing::quick_options;

std::string train_case(const std::string& op, const std::string& impl, const std::string& dtype, const std::string& shape,
                       const std::string& extra = "") {
  return fmt::format("{}/{}/{}/{}{},mode=train/threads=1", op, impl, dtype, shape, extra);
}

// The spec bound to a case, its inputs, and the exact fp64 training step packed as its output.
struct Exact {
  TrainLinearOp op;
  HostTensors in;
  HostTensor out;
  explicit Exact(const std::string& kase) : out(TensorDesc{}) {
    op.bind(parse_case(kase));
    in = op.make_inputs(7);
    out = HostTensor(op.output());
    reference_train_step(op, in, out);
  }
  float* values() { return static_cast<float*>(out.data()); }
};

TEST(TrainLinear, ExactStepPassesAndAPerturbedGradientFails) {
  for (const char* kase : {"linear/reference/fp32/batch=2,seq=3,hidden=37,out=29,act=gelu,mode=train/threads=1",
                           "ln_linear_silu/reference/fp32/batch=1,seq=5,hidden=33,out=19,mode=train/threads=1"}) {
    Exact e(kase);
    const auto s = shape_of(e.op.kase());
    const auto L = train_layout(s);
    auto ok = e.op.check(e.in, e.out, 1);
    EXPECT_TRUE(ok.ok) << kase << ": " << ok.detail;
    EXPECT_LT(ok.max_error, 1e-6) << ok.detail;

    // One dW element a little off: every column is checked at this size, so it shows.
    const std::size_t at = L.dw + 3 * s.hidden + 5;
    const float saved = e.values()[at];
    e.values()[at] += 1e-3f * (std::fabs(saved) + 1);
    auto bad = e.op.check(e.in, e.out, 1);
    EXPECT_FALSE(bad.ok) << kase;
    EXPECT_NE(bad.detail.find("dW[" + std::to_string(3 * s.hidden + 5) + "]"), std::string::npos) << bad.detail;
    e.values()[at] = saved;

    // Other results too: dx, db, and LayerNorm's dgamma.
    for (std::size_t i : {L.dx + 7, L.db + 2, s.layernorm ? L.dgamma + 4 : L.y + 1}) {
      const float v = e.values()[i];
      e.values()[i] = v + 0.01f * (std::fabs(v) + 1);
      EXPECT_FALSE(e.op.check(e.in, e.out, 1).ok) << kase << " element " << i;
      e.values()[i] = v;
    }
    // An unwritten element is named.
    e.values()[L.db + 1] = std::nanf("");
    auto unwritten = e.op.check(e.in, e.out, 1);
    EXPECT_FALSE(unwritten.ok);
    EXPECT_NE(unwritten.detail.find("db[1] was not written"), std::string::npos) << unwritten.detail;
  }
}

TEST(TrainLinear, LayerNormGradientsAreCheckedThroughDwAndDbWhenRowsAreSampled) {
  // 1200 rows x 256 x 256: more rows than the check recomputes, so dgamma / dbeta go through the
  // identities on dW and db.
  Exact e("ln_linear_gelu/reference/fp32/batch=2,seq=600,hidden=256,out=256,mode=train/threads=1");
  auto ok = e.op.check(e.in, e.out, 3);
  EXPECT_TRUE(ok.ok) << ok.detail;
  EXPECT_NE(ok.detail.find("via dW, db"), std::string::npos) << ok.detail;
  const auto L = train_layout(shape_of(e.op.kase()));
  e.values()[L.dbeta + 100] += 0.05f;
  auto bad = e.op.check(e.in, e.out, 3);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.detail.find("dbeta[100]"), std::string::npos) << bad.detail;
}

TEST(TrainLinear, OnednnTrainStepIsCorrect) {
  const std::pair<const char*, const char*> ops[] = {
      {"linear", ",act=none"}, {"linear", ",act=gelu"}, {"ln_linear_silu", ""}, {"linear", ",act=relu"}};
  for (auto [op, act] : ops)
    for (const char* dtype : {"fp32", "bf16"})
      for (const char* shape : {"batch=1,seq=1,hidden=1,out=1", "batch=3,seq=5,hidden=37,out=29", "batch=1,seq=67,hidden=130,out=45"}) {
        auto kase = train_case(op, "onednn_train", dtype, shape, act);
        auto r = run_case(parse_case(kase), quick_options(2));
        ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        EXPECT_GT(*r.max_error, 0.0) << kase;  // a real comparison, not an empty one
      }
}

TEST(TrainLinear, OnednnTrainIsCorrectWhereRowsAreSampled) {
  auto kase = train_case("ln_linear_gelu", "onednn_train", "bf16", "batch=2,seq=600,hidden=256,out=256");
  auto r = run_case(parse_case(kase), quick_options(2));
  ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
  EXPECT_LE(*r.max_error, *r.tolerance);
}

TEST(TrainLinear, OnednnTrainLeavesFloat8ToGpus) {
  auto r = run_case(parse_case(train_case("linear", "onednn_train", "bf16", "batch=1,seq=4,hidden=32,out=16",
                                          ",act=none,quant=float8dq-tensor")),
                    quick_options(2));
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("float8 training runs on GPUs"), std::string::npos) << r.reason;
}

TEST(TrainLinear, CublasltTrainIsCorrectOnAGpu) {
  auto* p = cuda::plugin();
  if (!p || !p->device(0).ok) GTEST_SKIP() << "no CUDA device: " << (p ? p->device(0).reason : cuda::load_reason());
  for (const char* quant : {"", ",quant=float8dq-tensor", ",quant=float8dq-row"})
    for (const char* dtype : {"bf16", "fp16"})
      for (const char* shape : {"batch=1,seq=3,hidden=40,out=24", "batch=2,seq=256,hidden=512,out=384"})
        for (const char* op : {"linear", "ln_linear_gelu"}) {
          auto kase = fmt::format("{}/cublaslt_train/{}/{}{}{},mode=train/device=cuda:0", op, dtype, shape,
                                  std::string(op) == "linear" ? ",act=silu" : "", quant);
          auto r = run_case(parse_case(kase), quick_options());
          if (r.status == Status::skipped) continue;  // float8 below sm_89
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
}

const char* kTrainConfig = R"(ops: [linear]
impls: [onednn, onednn_train]
dtypes: [fp32]
threads: 1
mode: [inference, train]
shapes:
  - name: custom
    shapes: [[5, 24, 16]]
)";

TEST(TrainLinear, ConfigRunsInferenceAndTrainCases) {
  auto dir = temp_dir("train_config");
  auto cfg = write(dir, "train.yaml", kTrainConfig);
  auto out = cli("run " + cfg.string() + " --samples 2 --warmup 1 --no-report --out " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto j = nlohmann::json::parse(std::ifstream(dir / "res" / "results.json"));
  std::set<std::string> names;
  for (auto& b : j["benchmarks"])
    if (b["run_type"] == "iteration" && b["name"].get<std::string>().rfind("linear/", 0) == 0) {
      EXPECT_EQ(b["status"], "ok") << b["name"];
      names.insert(b["name"].get<std::string>());
    }
  EXPECT_EQ(names.size(), 2u) << out.text;
  EXPECT_TRUE(names.count("linear/onednn/fp32/batch=1,seq=5,hidden=24,out=16,act=none/threads=1")) << out.text;
  EXPECT_TRUE(names.count("linear/onednn_train/fp32/batch=1,seq=5,hidden=24,out=16,act=none,mode=train/threads=1"))
      << out.text;
}

TEST(TrainLinear, BadModeAndRecipeAreConfigErrors) {
  auto dir = temp_dir("train_bad");
  auto int4 = cli("run " + write(dir, "int4.yaml", "ops: [linear]\nmode: [train]\nquantization: [int4wo-64]\n"
                                                    "shapes: [{name: custom, shapes: [[4, 64, 16]]}]\n").string() +
                  " --dry-run");
  EXPECT_EQ(int4.code, 2) << int4.text;
  EXPECT_NE(int4.text.find("quant=int4wo-64 has no training step"), std::string::npos) << int4.text;
  auto eval = cli("run " + write(dir, "eval.yaml", "ops: [linear]\nmode: [eval]\n"
                                                    "shapes: [{name: custom, shapes: [[4, 64, 16]]}]\n").string() +
                  " --dry-run");
  EXPECT_EQ(eval.code, 2) << eval.text;
  EXPECT_NE(eval.text.find("mode"), std::string::npos) << eval.text;
  EXPECT_NE(eval.text.find("eval"), std::string::npos) << eval.text;
}

}  // namespace
}  // namespace opmeter::linear
