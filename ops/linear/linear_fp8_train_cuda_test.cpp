// cublaslt_fp8_train, the CUDA float8 training step of linear and ln_linear_<act>: declared for
// CUDA training cases of the float8dq recipes in bf16; skipped with the plugin's reason without a
// GPU; on a GPU of compute capability 8.9 or newer, every recipe, phase and knob passes the step's
// fp64 check with its SQNR reported; rowwise below 9.0 is skipped with the reason, never run as
// tensorwise.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <fmt/format.h>

#include "config/config.hpp"
#include "engine/runner.hpp"
#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "tests/quick_options.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {
int gpu_cc() {  // major * 10 + minor; 0 without a GPU
  auto* p = cuda::plugin();
  if (!p || !p->device(0).ok) return 0;
  const std::string cc = p->device_context(0).value("compute_capability", "0.0");  // "9.0"
  return std::stoi(cc.substr(0, cc.find('.'))) * 10 + std::stoi(cc.substr(cc.find('.') + 1));
}
std::string fp8_case(const std::string& op, const std::string& shape, const std::string& quant,
                     const std::string& extra = "", const std::string& dtype = "bf16") {
  return fmt::format("{}/cublaslt_fp8_train/{}/{},quant={},mode=train{}/device=cuda:0", op, dtype, shape, quant, extra);
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(LinearFp8TrainCuda, DeclaredForFloat8TrainingCasesInBf16) {
  for (const char* op : {"linear", "ln_linear_gelu"}) {
    auto* def = Registry::global().impl(op, "cublaslt_fp8_train");
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->runs_on("cuda"));
    EXPECT_FALSE(def->runs_on("cpu"));
  }
  auto* def = Registry::global().impl("linear", "cublaslt_fp8_train");
  const std::string shape = "batch=2,seq=32,hidden=64,out=48,act=none";
  EXPECT_TRUE(def->supports(parse_case(fp8_case("linear", shape, "float8dq-tensor"))).ok);
  EXPECT_TRUE(
      def->supports(parse_case(fp8_case("linear", shape, "float8dq-row", ",scaling_grad=disabled,fast_accum=0"))).ok);
  EXPECT_TRUE(
      takes_optional_params(*def, parse_case(fp8_case("linear", shape, "float8dq-row", ",granularity=tensorwise"))).ok);
  auto r = def->supports(parse_case(fp8_case("linear", "batch=1,seq=8,hidden=64,out=48,act=none", "float8dq-tensor")));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "multiple of 16")) << r.reason;
  EXPECT_FALSE(def->supports(parse_case(fp8_case("linear", shape, "int8dq"))).ok);
  // The bf16 training impl leaves float8 to this one.
  EXPECT_FALSE(Registry::global()
                   .impl("linear", "cublaslt_train")
                   ->supports(parse_case(fp8_case("linear", shape, "float8dq-tensor")))
                   .ok);
}

TEST(LinearFp8TrainCuda, SkippedWithTheReasonWithoutAGpu) {
  if (gpu_cc() > 0) GTEST_SKIP() << "a GPU is here: the GPU tests below cover it";
  auto r = run_case(parse_case(fp8_case("linear", "batch=2,seq=32,hidden=64,out=48,act=none", "float8dq-tensor")),
                    quick_options());
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_FALSE(r.reason.empty());
}

TEST(LinearFp8TrainCuda, EveryRecipePhaseAndKnobPassesTheCheckOnAGpu) {
  const int cc = gpu_cc();
  if (cc == 0) GTEST_SKIP() << "no CUDA device";
  if (cc < 89) GTEST_SKIP() << "compute capability " << cc << ": LinearFp8TrainCuda.RefusedBelowAda covers it";
  auto expect_ok = [](const std::string& kase) {
    auto r = run_case(parse_case(kase), quick_options());
    EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    if (r.status != Status::ok) return;
    for (const char* m : {"sqnr_db", "sqnr_dx_db", "sqnr_dw_db"}) {
      ASSERT_TRUE(r.metrics.count(m)) << kase << ": " << m;
      EXPECT_GT(r.metrics.at(m).value, 15) << kase << ": " << m;  // fp8's tens of dB, not a wrong operand's ~0
    }
  };
  std::vector<std::string> quants = {"float8dq-tensor"};
  if (cc >= 90) quants.push_back("float8dq-row");
  for (const auto& q : quants) {
    for (const char* shape : {"batch=2,seq=32,hidden=64,out=48,act=none", "batch=1,seq=48,hidden=272,out=144,act=gelu"})
      for (const char* phase : {"", ",phase=forward", ",phase=backward"})
        expect_ok(fp8_case("linear", shape, q, phase));
    for (const char* knobs : {",fast_accum=0", ",scaling_input=disabled,scaling_weight=disabled,scaling_grad=disabled"})
      expect_ok(fp8_case("linear", "batch=2,seq=32,hidden=64,out=48,act=relu", q, knobs));
    expect_ok(fp8_case("ln_linear_gelu", "batch=2,seq=16,hidden=64,out=48", q));
  }
  if (cc >= 90)
    expect_ok(
        fp8_case("linear", "batch=2,seq=32,hidden=64,out=48,act=none", "float8dq-tensor", ",granularity=rowwise"));
}

TEST(LinearFp8TrainCuda, RowwiseBeforeHopperAndAnythingBeforeAdaIsSkippedWithTheReason) {
  const int cc = gpu_cc();
  if (cc == 0 || cc >= 90) GTEST_SKIP() << "needs a GPU below compute capability 9.0";
  auto r = run_case(parse_case(fp8_case("linear", "batch=2,seq=32,hidden=64,out=48,act=none", "float8dq-row")),
                    quick_options());
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_TRUE(has(r.reason, cc < 89 ? "8.9" : "OUTER_VEC_32F")) << r.reason;
}

// The benchmark (bench/train/gpu-fp8-4096x8192.yaml): the bf16 step and both float8
// recipes at 4096x8192x8192, each phase, ours and PyTorch autograd's (torch), nothing else.
TEST(LinearFp8TrainCuda, BenchConfigPutsBothRecipesBesideTheBf16Step) {
  auto plan = load_config_file(std::string(opmeter_source_dir()) + "/bench/train/gpu-fp8-4096x8192.yaml", 2);
  std::set<std::string> linear;
  for (auto& c : plan.cases)
    if (c.op == "linear") linear.insert(c.to_string());
  const std::string shape = "batch=1,seq=4096,hidden=8192,out=8192,act=none";
  std::set<std::string> expected;
  for (const char* phase : {",phase=forward", ",phase=backward", ""}) {
    expected.insert(fmt::format("linear/cublaslt_train/bf16/{},mode=train{}/device=cuda:0", shape, phase));
    expected.insert(fmt::format("linear/torch/bf16/{},mode=train{}/device=cuda:0", shape, phase));
    for (const char* q : {"float8dq-tensor", "float8dq-row"})
      for (const char* impl : {"cublaslt_fp8_train", "torch"})
        expected.insert(
            fmt::format("linear/{}/bf16/{},quant={},mode=train{}/device=cuda:0", impl, shape, q, phase));
  }
  EXPECT_EQ(linear, expected);
}
