// squeeze_excite: model cost and work, parameter checks, the spec's reference on a hand-computed
// case and against wrong outputs, every CPU impl against the reference on odd shapes, the torch
// form where Debian's PyTorch is, and the CUDA impl (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/squeeze_excite/squeeze_excite.hpp"
#include "ops/squeeze_excite/squeeze_excite_cpu.hpp"
#include "tests/case_problem.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"
#include "worker/shared_worker.hpp"

using namespace opmeter;
using opmeter::testing::case_problem;
using namespace opmeter::squeeze_excite;
using opmeter::testing::quick_options;

namespace {

std::string se_case(const char* impl, const char* dtype, int batch, int channels, int image, int reduced, const char* act,
                    const char* gate, const char* where = "threads=2") {
  return fmt::format("squeeze_excite/{}/{}/batch={},channels={},image={},reduced={},act={},gate={}/{}", impl, dtype, batch,
                     channels, image, reduced, act, gate, where);
}

HostTensor copy_of(const HostTensor& t) {
  HostTensor c(t.desc());
  std::memcpy(c.data(), t.data(), t.bytes());
  return c;
}

bool gpu_here(std::string& why) {
  auto* p = cuda::plugin();
  if (p && p->device(0).ok) return true;
  why = p ? p->device(0).reason : cuda::load_reason();
  return false;
}

}  // namespace

TEST(SqueezeExciteOp, ModelCostAndWorkCountWeightsAndMacs) {
  const OpDef* op = Registry::global().op("squeeze_excite");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->model_cost);
  auto kase = parse_case(se_case("opmeter", "fp32", 2, 96, 14, 24, "relu", "hardsigmoid"));
  auto cost = op->model_cost(kase);
  EXPECT_DOUBLE_EQ(cost.params, 2 * 96 * 24 + 24 + 96);  // W1, W2, b1, b2
  EXPECT_DOUBLE_EQ(cost.macs, 2 * 2 * 96 * 24);
  auto w = op->work(kase);
  const double elems = 2.0 * 96 * 14 * 14;
  EXPECT_DOUBLE_EQ(w.bytes_written, elems * 4);
  EXPECT_DOUBLE_EQ(w.bytes_read, elems * 4 + cost.params * 4);
  // Flops, as the op's work model defines them (squeeze_excite_op.cpp: the per-element passes and
  // the two FCs; the O(batch x channels) bias adds, activations, gates and the mean's divide are
  // not counted): per element an add for the channel mean and a multiply by the gate, 2 x 37632;
  // per sample two FCs of 96 x 24 multiply-adds each, 2 samples x 2 FCs x 2 x 96 x 24 = 18432.
  EXPECT_DOUBLE_EQ(w.flops, 2 * 37632.0 + 18432);
  ASSERT_TRUE(op->spec);  // the worker's torch impl is checked by this spec
}

TEST(SqueezeExciteOp, BadParametersSayWhich) {
  EXPECT_EQ(case_problem(se_case("opmeter", "fp32", 1, 8, 4, 2, "tanh", "sigmoid")),
            "squeeze_excite act='tanh' unknown: expected relu or silu");
  EXPECT_EQ(case_problem(se_case("opmeter", "fp32", 1, 8, 4, 2, "relu", "step")),
            "squeeze_excite gate='step' unknown: expected sigmoid or hardsigmoid");
  EXPECT_EQ(case_problem(se_case("opmeter", "fp32", 1, 8, 4, 0, "relu", "sigmoid")),
            "squeeze_excite reduced=0 out of range: expected 1..65536");
  auto out = cli("run --case " + se_case("opmeter", "fp32", 1, 8, 4, 2, "tanh", "sigmoid"));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("act='tanh' unknown"), std::string::npos) << out.text;
}

TEST(SqueezeExciteOp, GatesArePyTorchs) {
  EXPECT_DOUBLE_EQ(gate_ref(Gate::hardsigmoid, 0), 0.5);
  EXPECT_DOUBLE_EQ(gate_ref(Gate::hardsigmoid, -3.5), 0);
  EXPECT_DOUBLE_EQ(gate_ref(Gate::hardsigmoid, 4), 1);
  EXPECT_DOUBLE_EQ(gate_ref(Gate::hardsigmoid, 1.5), 0.75);
  EXPECT_DOUBLE_EQ(gate_ref(Gate::sigmoid, 0), 0.5);
  EXPECT_DOUBLE_EQ(act_ref(Act::relu, -2), 0);
  EXPECT_NEAR(act_ref(Act::silu, 1), 1 / (1 + std::exp(-1.0)), 1e-15);
}

// With W1 = W2 = 0 the gate is gate(b2[c]) whatever x is: y = x * gate(b2[c]), by hand.
TEST(SqueezeExciteOp, ZeroWeightsGiveTheGateOfTheBias) {
  for (const char* gate : {"sigmoid", "hardsigmoid"}) {
    SqueezeExciteOp spec;
    spec.bind(parse_case(se_case("opmeter", "fp32", 2, 5, 3, 2, "silu", gate)));
    auto in = spec.make_inputs(11);
    for (auto i : {SqueezeExciteOp::kW1, SqueezeExciteOp::kW2})
      for (std::size_t j = 0; j < in[i].desc().count; ++j) store(Elem::f32, in[i].data(), j, 0.0);
    const float* b2 = in[SqueezeExciteOp::kB2].as<float>();
    auto expected = [&](std::size_t plane, std::size_t i) {
      const double z = b2[plane % 5];
      const double g = std::string(gate) == "sigmoid" ? 1 / (1 + std::exp(-z)) : std::clamp(z + 3, 0.0, 6.0) / 6;
      return in[0][plane * 9 + i] * g;
    };
    // The reference...
    std::vector<std::size_t> rows = {0, 4, 7, 9};
    spec.reference_rows(in, rows, [&](std::size_t p, const double* ref, const double*) {
      for (std::size_t i = 0; i < 9; ++i) EXPECT_NEAR(ref[i], expected(rows[p], i), 1e-12) << gate;
    });
    // ...and opmeter's kernel.
    HostTensor out(spec.output());
    std::vector<float> scratch(cpu_scratch_floats(shape_of(spec.kase())));
    run_cpu({.x = in[0].data(), .y = out.data(), .w1 = in[1].as<float>(), .b1 = in[2].as<float>(), .w2 = in[3].as<float>(),
             .b2 = b2, .shape = shape_of(spec.kase())},
            scratch.data());
    for (std::size_t plane = 0; plane < 10; ++plane)
      for (std::size_t i = 0; i < 9; ++i) EXPECT_NEAR(out[plane * 9 + i], expected(plane, i), 1e-6) << gate;
    EXPECT_TRUE(spec.check(in, out, 3).ok);
  }
}

TEST(SqueezeExciteOp, SpecCatchesAWrongOrMissingElement) {
  SqueezeExciteOp spec;
  spec.bind(parse_case(se_case("opmeter", "fp32", 2, 6, 5, 3, "relu", "sigmoid")));
  auto in = spec.make_inputs(5);
  HostTensor out(spec.output());
  std::vector<std::size_t> all(spec.out_rows());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = r;
  spec.reference_rows(in, all, [&](std::size_t p, const double* ref, const double*) {
    for (std::size_t i = 0; i < 25; ++i) store(Elem::f32, out.data(), all[p] * 25 + i, ref[i]);
  });
  auto ok = spec.check(in, out, 1);
  EXPECT_TRUE(ok.ok) << ok.detail;
  // A gate off by 1% on one plane (as a mean over the wrong plane would make it): wrong.
  HostTensor wrong = copy_of(out);
  for (std::size_t i = 0; i < 25; ++i) store(Elem::f32, wrong.data(), 7 * 25 + i, out[7 * 25 + i] * 1.01);
  EXPECT_FALSE(spec.check(in, wrong, 1).ok);
  HostTensor missing = copy_of(out);
  store(Elem::f32, missing.data(), 31, NAN);
  auto m = spec.check(in, missing, 1);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.detail.find("not written"), std::string::npos) << m.detail;
}

// fp16 holds values below 2^-14 as subnormals, 2^-24 apart: x = k 2^-24 times a gate rounds to
// that spacing, far more than 2^-11 of its value. The check takes the output rounded once to fp16
// (what a correct kernel writes; the H200 wrote -9 2^-24 for -8.55 2^-24).
TEST(SqueezeExciteOp, SpecAcceptsFp16SubnormalOutputsRoundedOnce) {
  SqueezeExciteOp spec;
  spec.bind(parse_case(se_case("opmeter", "fp16", 1, 4, 4, 2, "relu", "hardsigmoid")));
  auto in = spec.make_inputs(5);
  for (std::size_t i = 0; i < 16; ++i) store(Elem::f16, in[0].data(), i, double(i + 1) * 0x1p-24);  // plane 0
  HostTensor out(spec.output());
  std::vector<std::size_t> all(spec.out_rows());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = r;
  double worst_rounding = 0;  // |stored - ref| / mag, the scale the check used before the floor
  spec.reference_rows(in, all, [&](std::size_t p, const double* ref, const double* mag) {
    for (std::size_t i = 0; i < 16; ++i) {
      store(Elem::f16, out.data(), all[p] * 16 + i, ref[i]);
      worst_rounding = std::max(worst_rounding, std::fabs(out[all[p] * 16 + i] - ref[i]) / mag[i]);
    }
  });
  EXPECT_GT(worst_rounding, spec.tolerance()) << "no output was rounded coarser than the relative tolerance";
  auto ok = spec.check(in, out, 1);
  EXPECT_TRUE(ok.ok) << ok.detail;
  HostTensor wrong = copy_of(out);  // a gate off by 1% on plane 2 (normal values): still caught
  for (std::size_t i = 0; i < 16; ++i) store(Elem::f16, wrong.data(), 2 * 16 + i, out[2 * 16 + i] * 1.01);
  EXPECT_FALSE(spec.check(in, wrong, 1).ok);
}

TEST(SqueezeExciteOp, CpuImplsMatchTheReferenceOnOddShapes) {
  struct Shape {
    int batch, channels, image, reduced;
    const char *act, *gate;
  };
  for (auto s : {Shape{2, 6, 5, 3, "silu", "sigmoid"}, Shape{1, 37, 7, 5, "relu", "hardsigmoid"},
                 Shape{3, 16, 8, 4, "silu", "hardsigmoid"}, Shape{2, 9, 1, 1, "relu", "sigmoid"},
                 Shape{1, 24, 13, 8, "relu", "hardsigmoid"}})
    for (const char* impl : {"reference", "opmeter"})
      for (const char* dtype : {"fp32", "bf16"})
        for (const char* threads : {"threads=1", "threads=2"}) {
          auto kase = se_case(impl, dtype, s.batch, s.channels, s.image, s.reduced, s.act, s.gate, threads);
          auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        }
}

TEST(SqueezeExciteOp, TorchFormMatchesTheReference) {
  const std::string python = OPMETER_TEST_PYTHON;
  if (std::system((python + " -c 'import torch' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << python << " has no PyTorch";
  setenv("OPMETER_PYTHON", python.c_str(), 1);
  worker::stop_shared_worker();
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* gate : {"sigmoid", "hardsigmoid"}) {
      auto kase = se_case("torch", dtype, 2, 12, 7, 4, "silu", gate, "threads=1");
      auto r = run_case(parse_case(kase), quick_options());
      EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
      EXPECT_LE(r.max_error, r.tolerance) << kase;
    }
  worker::stop_shared_worker();
  unsetenv("OPMETER_PYTHON");
}

TEST(SqueezeExciteCuda, IsRegisteredForCudaAndSaysItsLimits) {
  const ImplDef* impl = Registry::global().impl("squeeze_excite", "cuda");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->runs_on("cuda"));
  EXPECT_FALSE(impl->runs_on("cpu"));
  EXPECT_EQ(impl->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16}));
  auto big = impl->supports(parse_case(se_case("cuda", "bf16", 1, 12000, 7, 400, "relu", "sigmoid", "device=cuda:0")));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("shared memory"), std::string::npos) << big.reason;
  EXPECT_TRUE(impl->supports(parse_case(se_case("cuda", "bf16", 64, 960, 7, 240, "relu", "sigmoid", "device=cuda:0"))).ok);
}

TEST(SqueezeExciteCuda, CasesAreSkippedWithAReasonWithoutAGpu) {
  std::string why;
  if (gpu_here(why)) GTEST_SKIP() << "a GPU is here: the GPU test covers these cases";
  auto r = run_case(parse_case(se_case("cuda", "fp16", 1, 16, 7, 4, "relu", "sigmoid", "device=cuda:0")), quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_FALSE(r.reason.empty());
}

TEST(SqueezeExciteCuda, IsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  struct Shape {
    int batch, channels, image, reduced;
  };
  // image 8 / 56: planes of whole 16-byte vectors (vector path); 7 / 1 / 13: the scalar path.
  for (auto s : {Shape{2, 16, 8, 4}, Shape{3, 37, 7, 5}, Shape{2, 9, 1, 1}, Shape{1, 24, 13, 8}, Shape{4, 64, 56, 16},
                 Shape{2, 960, 7, 240}})
    for (const char* dtype : {"fp32", "fp16", "bf16"})
      for (auto [act, gate] : {std::pair{"relu", "hardsigmoid"}, std::pair{"silu", "sigmoid"}}) {
        auto kase = se_case("cuda", dtype, s.batch, s.channels, s.image, s.reduced, act, gate, "device=cuda:0");
        auto r = run_case(parse_case(kase), quick_options());
        ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        EXPECT_LE(*r.max_error, *r.tolerance) << kase;
      }
}
