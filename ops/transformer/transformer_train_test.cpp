// transformer_block's training step (mode=train): the fp64 backward the check uses agrees with
// central differences of the forward reference (separate code) on sampled elements of every
// gradient; the check fails on a changed element of any gradient and names it; the oneDNN impl
// and the worker's autograd form pass it in every phase; the backward's work matches a count of
// its products; phases join into the training table; configs, dry runs and bad cases.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <omp.h>

#include <cmath>
#include <cstdlib>

#include "analysis/training.hpp"
#include "engine/runner.hpp"
#include "opmeter/registry.hpp"
#include "ops/tensor/amx.hpp"
#include "ops/transformer/transformer_train.hpp"
#include "ops/transformer/transformer_train_reference.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"
#include "tests/result_fixtures.hpp"
#include "worker/shared_worker.hpp"

using namespace opmeter;
using namespace opmeter::transformer;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kTiny = "batch=2,seq=5,hidden=16,heads=2,mlp=24";

Case train_case(const std::string& extra, const std::string& dtype = "fp32", const std::string& impl = "onednn_train") {
  return parse_case("transformer_block/" + impl + "/" + dtype + "/" + kTiny + extra + ",mode=train/threads=1");
}

std::unique_ptr<OpSpec> spec_of(const Case& c) {
  auto spec = std::make_unique<TransformerBlockOp>();  // the registry's spec picks it by recipe
  spec->bind(c);
  return spec;
}

// Every row of y from the forward reference (transformer_reference.cpp).
std::vector<double> forward_rows(const OpSpec& spec, const HostTensors& in, const Shape& s) {
  auto& op = dynamic_cast<const tensor::TensorOp&>(spec);
  std::vector<std::size_t> rows(s.rows());
  for (std::size_t r = 0; r < rows.size(); ++r) rows[r] = r;
  std::vector<double> y(s.rows() * s.hidden);
  op.reference_rows(in, rows, [&](std::size_t p, const double* ref, const double*) {
    std::copy(ref, ref + s.hidden, y.begin() + std::ptrdiff_t(rows[p] * s.hidden));
  });
  return y;
}

// The loss whose gradients the step computes: sum y . dy.
double loss(const OpSpec& spec, const HostTensors& in, const Shape& s) {
  auto y = forward_rows(spec, in, s);
  double l = 0;
  for (std::size_t i = 0; i < y.size(); ++i) l += y[i] * in[kBlockInputs][i];
  return l;
}

// The fp64 step (reference y and gradients) written into the step's output.
HostTensor reference_output(const OpSpec& spec, const HostTensors& in, const Case& c) {
  const auto s = shape_of(c);
  const auto l = train_layout(s);
  HostTensor out(spec.output());
  const TrainReference ref(s, in, Elem::f32, train_gradient_tolerance(c), 1e-5);
  auto y = forward_rows(spec, in, s);
  for (std::size_t i = 0; i < l.total; ++i) {
    double v = i < l.grad[0] ? y[i] : ref.value(i - l.grad[0]);
    store(out.desc().elem, out.data(), i, v);
  }
  return out;
}
}  // namespace

TEST(TransformerTrain, BackwardReferenceMatchesCentralDifferencesOfTheForward) {
  // A hundred tiny forwards: one thread each (a team's start-up would be most of their time).
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  for (auto [extra, samples] : {std::pair{",act=gelu,causal=1", 3}, {",act=silu,causal=0", 1}}) {
    Case c = train_case(extra, "fp32", "reference");
    auto spec = spec_of(c);
    auto in = spec->make_inputs(7);
    const auto s = shape_of(c);
    const auto l = train_layout(s);
    const TrainReference ref(s, in, Elem::f32, train_gradient_tolerance(c), 1e-5);
    const auto counts = input_counts(s);
    for (std::size_t t = 0; t < kBlockInputs; ++t)
      for (std::size_t i : samples == 1 ? std::vector<std::size_t>{counts[t] / 2}
                                        : std::vector<std::size_t>{0, counts[t] / 2, counts[t] - 1}) {
        HostTensor& x = in[t];
        const double v = x[i], eps = 1e-3 * std::max(1.0, std::fabs(v));
        store(x.desc().elem, x.data(), i, v + eps);
        const double up = x[i], l_up = loss(*spec, in, s);
        store(x.desc().elem, x.data(), i, v - eps);
        const double down = x[i], l_down = loss(*spec, in, s);
        store(x.desc().elem, x.data(), i, v);
        const double numeric = (l_up - l_down) / (up - down), analytic = ref.value(l.grad[t] - l.grad[0] + i);
        EXPECT_NEAR(analytic, numeric, 1e-4 * (1 + std::fabs(numeric)))
            << extra << " " << l.name_at(l.grad[t]) << "[" << i << "]";
      }
  }
  omp_set_num_threads(threads);
}

TEST(TransformerTrain, CheckFailsOnAChangedElementOfAnyGradientAndNamesIt) {
  Case c = train_case(",act=gelu,causal=1");
  auto spec = spec_of(c);
  auto in = spec->make_inputs(7);
  const auto l = train_layout(shape_of(c));
  HostTensor ref = reference_output(*spec, in, c);
  auto exact = spec->check(in, ref, 3);
  EXPECT_TRUE(exact.ok) << exact.detail;
  EXPECT_LT(exact.max_error, 1e-6) << exact.detail;  // the output's fp32 rounding
  EXPECT_TRUE(has(exact.detail, "every gradient of every input whole")) << exact.detail;
  for (std::size_t t = 0; t <= kBlockInputs; ++t) {
    const std::size_t start = t == 0 ? l.y : l.grad[t - 1], end = t == kBlockInputs ? l.total : l.grad[t];
    const std::size_t poke = start + (end - start) / 2;
    const std::string name = l.name_at(poke);
    // A change of 1% of the tensor's largest element: well under any wrong formula's.
    double largest = 0;
    for (std::size_t i = start; i < end; ++i) largest = std::max(largest, std::fabs(ref[i]));
    const double kept = ref[poke];
    store(ref.desc().elem, ref.data(), poke, kept + 0.01 * largest);
    auto r = spec->check(in, ref, 3);
    store(ref.desc().elem, ref.data(), poke, kept);
    EXPECT_FALSE(r.ok) << name << ": " << r.detail;
    EXPECT_TRUE(has(r.detail, " in " + name + "[" + std::to_string(l.index_in(poke)) + "]")) << name << ": " << r.detail;
  }
  store(ref.desc().elem, ref.data(), l.grad[5] + 1, std::nan(""));
  auto nan = spec->check(in, ref, 3);
  EXPECT_FALSE(nan.ok);
  EXPECT_TRUE(has(nan.detail, "training output dwo[1]")) << nan.detail;
}

// Above the whole check's budget (0 here) the weight gradients are checked on 16 sampled rows
// each, the first and last among them: a change in a sampled row fails and is named, one in
// another row is not seen; dx is still checked whole.
TEST(TransformerTrain, SampledCheckCatchesAChangedElementInASampledWeightRow) {
  Case c = train_case(",act=gelu,causal=1");
  auto spec = spec_of(c);
  auto in = spec->make_inputs(7);
  const auto l = train_layout(shape_of(c));
  const auto& op = dynamic_cast<const TransformerBlockOp&>(*spec);
  HostTensor ref = reference_output(*spec, in, c);
  auto exact = op.check_train(in, ref, 3, 0);
  EXPECT_TRUE(exact.ok) << exact.detail;
  EXPECT_LT(exact.max_error, 1e-6) << exact.detail;
  EXPECT_TRUE(has(exact.detail, "dwqkv, dwo, dw1, dw2 on 16 sampled rows each")) << exact.detail;
  auto poke = [&](std::size_t at) {
    double largest = 0;
    for (std::size_t i = l.grad[0]; i < l.total; ++i) largest = std::max(largest, std::fabs(ref[i]));
    const double kept = ref[at];
    store(ref.desc().elem, ref.data(), at, kept + 0.01 * largest);
    auto r = op.check_train(in, ref, 3, 0);
    store(ref.desc().elem, ref.data(), at, kept);
    return r;
  };
  const std::size_t h = 16, wqkv_rows = 48;
  std::vector<std::size_t> caught;
  for (std::size_t row = 0; row < wqkv_rows; ++row) {
    const std::size_t at = l.grad[3] + row * h + 5;
    auto r = poke(at);
    if (r.ok) continue;
    caught.push_back(row);
    EXPECT_TRUE(has(r.detail, " in dwqkv[" + std::to_string(row * h + 5) + "]")) << r.detail;
  }
  EXPECT_EQ(caught.size(), 16u);
  EXPECT_TRUE(!caught.empty() && caught.front() == 0 && caught.back() == wqkv_rows - 1);
  auto dx = poke(l.grad[0] + 17);
  EXPECT_FALSE(dx.ok);
  EXPECT_TRUE(has(dx.detail, " in dx[17]")) << dx.detail;
}

TEST(TransformerTrain, OnednnStepPassesInEveryPhase) {
  for (auto [dtype, extra] : {std::pair{"fp32", ",act=gelu,causal=1"}, {"bf16", ",act=silu,causal=0,phase=backward"},
                              {"bf16", ",act=gelu,causal=1"}, {"fp32", ",act=relu,causal=0,phase=forward"},
                              {"bf16", ",act=none,causal=1"}}) {
    if (std::string(dtype) == "bf16" && !opmeter::testing::onednn_has_bf16()) continue;  // fp32 still checked
    Case c = train_case(extra, dtype);
    validate_case(c);
    auto impl = Registry::global().impl("transformer_block", "onednn_train")->make();
    impl->setup(c, {.copies = 2, .seed = 5});
    auto check = impl->verify(11);
    EXPECT_TRUE(check.ok) << c.to_string() << ": " << check.detail;
    impl->run(1);  // timed calls on each input set, then the check again
    impl->run(0);
    auto after = impl->verify(12);
    EXPECT_TRUE(after.ok) << c.to_string() << ": " << after.detail;
  }
}

// Sizes all multiples of 32 (rows, hidden, 3 hidden, mlp): each projection's backward GEMMs run on
// opmeter's AMX GEMM where the CPU has AMX-BF16, and the step still passes its check, twice.
TEST(TransformerTrain, OnednnStepOnTheAmxGemmPassesAndSaysSo) {
  REQUIRE_ONEDNN_BF16();
  Case c = parse_case("transformer_block/onednn_train/bf16/batch=1,seq=32,hidden=64,heads=2,mlp=128,act=gelu,causal=1,"
                      "mode=train/threads=2");
  validate_case(c);
  auto impl = Registry::global().impl("transformer_block", "onednn_train")->make();
  impl->setup(c, {.copies = 2, .seed = 5});
  auto check = impl->verify(11);
  EXPECT_TRUE(check.ok) << check.detail;
  impl->run(1);
  auto after = impl->verify(12);
  EXPECT_TRUE(after.ok) << after.detail;
  if (!amx::bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here: the projections stay on oneDNN";
  const auto d = impl->details();
  for (const char* w : {"Wqkv", "Wo", "W1", "W2"})
    EXPECT_TRUE(has(d.at("dx_weights"), std::string(w) + ": W as stored, panels packed by opmeter's AMX GEMM")) << d.at("dx_weights");
  EXPECT_EQ(d.at("forward"), "opmeter's AMX GEMM on the weights as stored; bias and residual fused");
}

TEST(TransformerTrain, BackwardWorkIsTwiceTheForwardsProductsPlusItsElementwise) {
  const std::string base = "transformer_block/onednn_train/bf16/batch=2,seq=16,hidden=64,heads=4,mlp=96,act=gelu,causal=0";
  auto def = Registry::global().op("transformer_block");
  Work inference = def->work(parse_case(base + "/threads=1"));
  Work step = def->work(parse_case(base + ",mode=train/threads=1"));
  Work fwd = def->work(parse_case(base + ",mode=train,phase=forward/threads=1"));
  Work bwd = def->work(parse_case(base + ",mode=train,phase=backward/threads=1"));
  EXPECT_DOUBLE_EQ(fwd.flops, inference.flops);
  EXPECT_DOUBLE_EQ(fwd.flops + bwd.flops, step.flops);
  EXPECT_DOUBLE_EQ(fwd.bytes() + bwd.bytes(), step.bytes());
  // The backward's products listed one by one (M, K, N): each projection's dA = dZ W and
  // dW = dZ^T A, and per (batch, head) dP = dO v^T, dv = P^T dO, dq = dS k, dk = dS^T q.
  const double r = 32, h = 64, m = 96, n = 16, d = 16, heads = 2 * 4;
  const double gemms[][3] = {{r, 3 * h, h}, {3 * h, r, h}, {r, h, h}, {h, r, h},
                             {r, m, h},     {m, r, h},     {r, h, m}, {h, r, m}};
  double products = 0;
  for (auto& g : gemms) products += 2 * g[0] * g[1] * g[2];
  products += heads * 4 * (2 * n * n * d);
  // Twice the forward's: its four projections and attention's two products.
  const double forward_products = 2 * r * h * 3 * h + 2 * r * h * h + 2 * r * h * m + 2 * r * m * h + heads * 2 * (2 * n * n * d);
  EXPECT_DOUBLE_EQ(products, 2 * forward_products);
  // The rest: elementwise (softmax', LayerNorm', act', bias sums, residuals), a few per element.
  EXPECT_GE(bwd.flops, products);
  EXPECT_LE(bwd.flops - products, 32 * r * (h + m) + heads * 4 * n * n);
  EXPECT_GT(bwd.flops - products, 0);
  // Bytes, tensor by tensor (bf16 activations and weights, fp32 vectors).
  const double weight_elems = 3 * h * h + h * h + m * h + h * m;
  const double saved = r * h /*x*/ + r * h /*LN1(x)*/ + 3 * r * h /*qkv*/ + r * h /*o*/ + r * h /*h*/ + r * h /*LN2(h)*/ +
                       r * m /*u*/ + r * m /*act(u)*/;
  EXPECT_DOUBLE_EQ(bwd.bytes_read, (r * h /*dy*/ + weight_elems + saved) * 2 + 2 * h /*gammas*/ * 4);
  const double vector_elems = 2 * h + 3 * h + h + 2 * h + m + h;  // ln1, bqkv, bo, ln2, b1, b2
  EXPECT_DOUBLE_EQ(bwd.bytes_written, (r * h /*dx*/ + weight_elems) * 2 + vector_elems * 4);
  // The training forward writes y and what the backward reads back (every saved tensor but x);
  // it reads what the inference forward reads.
  EXPECT_DOUBLE_EQ(fwd.bytes_written, (r * h /*y*/ + saved - r * h /*x*/) * 2);
  EXPECT_DOUBLE_EQ(inference.bytes_written, r * h * 2);
  EXPECT_DOUBLE_EQ(fwd.bytes_read, inference.bytes_read);
}

TEST(TransformerTrain, ValidationNamesWhatIsWrong) {
  auto error_of = [](const std::string& extra) {
    try {
      validate_case(parse_case("transformer_block/onednn_train/bf16/" + kTiny + ",act=gelu,causal=0" + extra + "/threads=1"));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(",mode=train"), "no error");
  EXPECT_EQ(error_of(",mode=train,phase=backward"), "no error");
  EXPECT_TRUE(has(error_of(",phase=backward"), "needs mode=train")) << error_of(",phase=backward");
  EXPECT_TRUE(has(error_of(",mode=train,phase=sideways"), "phase=sideways unknown"));
  EXPECT_TRUE(has(error_of(",quant=int8wo,mode=train"), "no training step on transformer_block"));
}

// The CUDA inference impls do not declare mode/phase: the registry's shared check skips a training
// case and names the impls that run it.
TEST(TransformerTrain, CudaInferenceImplsLeaveTrainingToTheImplsThatDeclareIt) {
  for (const std::string impl : {"cuda", "cuda_quant"}) {
    const ImplDef* def = Registry::global().impl("transformer_block", impl);
    ASSERT_NE(def, nullptr) << impl;
    const std::string quant = impl == "cuda_quant" ? ",quant=int8wo" : "";
    auto c = parse_case("transformer_block/" + impl + "/bf16/batch=1,seq=8,hidden=128,heads=2,mlp=0,act=gelu,causal=0" + quant +
                        ",mode=train/device=cuda:0");
    auto s = takes_optional_params(*def, c);
    EXPECT_FALSE(s.ok) << impl;
    EXPECT_TRUE(has(s.reason, "impl '" + impl + "' does not run")) << s.reason;
    EXPECT_TRUE(has(s.reason, "mode=train")) << s.reason;
    if (impl == "cuda") {  // a recipe's training case is run by none (validate_case refuses it)
      EXPECT_TRUE(has(s.reason, "cuda_train")) << s.reason;
      EXPECT_TRUE(has(s.reason, "onednn_train")) << s.reason;
    }
  }
}

TEST(TransformerTrain, PhasesJoinIntoTheTrainingTableBesideTheBaseline) {
  const std::string shape = "batch=1,seq=512,hidden=1024,heads=16,mlp=0,act=gelu,causal=0";
  auto result = [&](const std::string& impl, const std::string& extra, double s, double pct) {
    Result r = fixtures::measured("transformer_block/" + impl + "/bf16/" + shape + ",mode=train" + extra + "/threads=2", s);
    r.pct_peak = pct;
    return r;
  };
  auto rows = training_rows({fixtures::measured("transformer_block/opmeter/bf16/" + shape + "/threads=2", 1e-2),
                             result("onednn_train", ",phase=forward", 0.02, 40), result("onednn_train", ",phase=backward", 0.05, 30),
                             result("onednn_train", "", 0.072, 33), result("torch", "", 0.09, 26)});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, "transformer_block");
  EXPECT_EQ(rows[0].shape, shape);
  EXPECT_NEAR(*rows[0].fwd_s, 0.02, 1e-4);
  EXPECT_NEAR(*rows[0].bwd_s, 0.05, 1e-4);
  EXPECT_NEAR(*rows[0].total_s, 0.072, 1e-4);
  EXPECT_EQ(rows[1].impl, "torch");
  EXPECT_EQ(rows[1].baseline_impl, "onednn_train");  // the fastest step of the shape
  EXPECT_NEAR(*rows[1].speedup, 0.072 / 0.09, 1e-3);
  auto md = training_markdown(rows);
  EXPECT_TRUE(has(md, "| transformer_block " + shape + " | bf16 | cpu x2 | baseline | onednn_train | 20.002 ms (40%) | "
                      "50.006 ms (30%) | 72.008 ms (33%) | 0.97 | onednn_train | 1.00x |")) << md;
  EXPECT_TRUE(has(md, "| torch | - | - | 90.011 ms (26%) | - | onednn_train | 0.80x | - |")) << md;
}

TEST(TransformerTrain, TinyTrainConfigRunsEndToEndAndDryRunListsIt) {
  REQUIRE_ONEDNN_BF16();
  auto dir = temp_dir("tbtrain");
  auto cfg = write(dir, "train.yaml",
                   "ops: [transformer_block]\nimpls: [onednn_train]\ndtypes: [bf16]\nthreads: 1\nbatch: [1]\nseq: [8]\n"
                   "hidden: [32]\nheads: [2]\nmlp: [48]\ncausal: [1]\nmode: [train]\nphase: [forward, backward, step]\n"
                   "stopping: {samples: 3, warmup: 1}\n");
  auto dry = cli("run " + cfg.string() + " --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.text;
  EXPECT_TRUE(has(dry.text, "transformer_block/onednn_train/bf16/batch=1,seq=8,hidden=32,heads=2,mlp=48,act=gelu,causal=1,"
                            "mode=train,phase=backward/threads=1")) << dry.text;
  auto out = cli("run " + cfg.string() + " --llc-bytes 262144 --no-report --out " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "Training steps")) << out.text;
  EXPECT_TRUE(has(out.text, "| transformer_block batch=1,seq=8,hidden=32,heads=2,mlp=48,act=gelu,causal=1 | bf16")) << out.text;
  auto bad = cli("run --case 'transformer_block/onednn_train/bf16/batch=1,seq=4,hidden=8,heads=2,mlp=0,act=gelu,causal=0,phase=forward/threads=1'");
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_TRUE(has(bad.text, "needs mode=train")) << bad.text;
}

TEST(TransformerTrain, WorkerAutogradFormPassesTheCheck) {
  const std::string python = OPMETER_TEST_PYTHON;
  if (std::system((python + " -c 'import torch' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << python << " has no PyTorch";
  setenv("OPMETER_PYTHON", python.c_str(), 1);
  worker::stop_shared_worker();
  for (auto [dtype, extra] : {std::pair{"fp32", ",act=gelu,causal=1"}, {"bf16", ",act=silu,causal=0,phase=backward"}}) {
    Case c = train_case(extra, dtype, "torch");
    Result r = run_case(c, opmeter::testing::quick_options(2));
    EXPECT_EQ(r.status, Status::ok) << c.to_string() << ": " << r.reason;
    EXPECT_LE(r.max_error, r.tolerance) << c.to_string();
    EXPECT_EQ(r.details["autograd"], "torch.autograd.grad") << c.to_string();
  }
  worker::stop_shared_worker();
  unsetenv("OPMETER_PYTHON");
}
