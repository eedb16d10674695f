// The Python worker's quantized linear impls end to end (issue 29 item 5): `torch_quant` and
// `torchao` exist for every op that takes a recipe and only for its quant cases; the spec the
// worker is fed is QuantLinearOp's for a quant case (the same Gaussian W and recipe gate as
// opmeter_quant) and LinearOp's otherwise; through Debian's PyTorch a case runs and matches
// opmeter_quant's SQNR on the same inputs where the kernel exists, else is skipped naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "engine/runner.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/quant_linear.hpp"
#include "tests/quick_options.hpp"
#include "tests/torch_worker.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

Result run(const std::string& s) { return run_case(parse_case(s), quick_options(1)); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

double sqnr(const Result& r) {
  auto it = r.metrics.find("sqnr_db");
  return it == r.metrics.end() ? std::nan("") : it->second.value;
}

}  // namespace

TEST(QuantWorker, ImplsExistForOpsThatTakeARecipeAndNeedIt) {
  for (const char* op : {"linear", "ln_linear_gelu", "ln_linear_relu"})
    for (const char* impl : {"torch_quant", "torchao"}) {
      const ImplDef* d = Registry::global().impl(op, impl);
      ASSERT_NE(d, nullptr) << op << "/" << impl;
      EXPECT_TRUE(d->on_request);
      EXPECT_EQ(d->needs, std::vector<std::string>{"quant"}) << op << "/" << impl;
    }
  EXPECT_EQ(Registry::global().impl("layernorm", "torch_quant"), nullptr);  // no recipe to run
  EXPECT_NE(Registry::global().impl("layernorm", "torch_compile_aot_eager"), nullptr);
  // Without quant the case is not torch_quant's.
  Result plain = run("linear/torch_quant/bf16/batch=1,seq=2,hidden=64,out=16,act=none/threads=1");
  EXPECT_EQ(plain.status, Status::skipped);
}

TEST(QuantWorker, TheWorkersSpecIsTheRecipesForQuantCases) {
  const OpDef* op = Registry::global().op("ln_linear_relu");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->spec);
  auto quant = op->spec();
  quant->bind(parse_case("ln_linear_relu/torch_quant/bf16/batch=1,seq=2,hidden=64,out=16,quant=int4wo-32/threads=1"));
  EXPECT_TRUE(quant->inputs().at(1).normal);  // QuantLinearOp's Gaussian W
  auto plain = op->spec();
  plain->bind(parse_case("ln_linear_relu/torch/bf16/batch=1,seq=2,hidden=64,out=16/threads=1"));
  EXPECT_FALSE(plain->inputs().at(1).normal);
  // The recipe's gate: the unquantized layer's exact answer is not the recipe's output.
  auto in = quant->make_inputs(3);
  HostTensor zeros(quant->output());
  std::memset(zeros.data(), 0, zeros.bytes());
  EXPECT_FALSE(quant->check(in, zeros, 3).ok);
  // The same W at every seed, and the one opmeter's own impls draw: the SQNRs of the worker's
  // kernels and ours are of the same weights. Recorded as the codes the recipe holds.
  auto in_other = quant->make_inputs(4);
  ASSERT_EQ(in[1].bytes(), in_other[1].bytes());
  EXPECT_EQ(std::memcmp(in[1].data(), in_other[1].data(), in[1].bytes()), 0);
  EXPECT_NE(std::memcmp(in[0].data(), in_other[0].data(), in[0].bytes()), 0);
  linear::QuantLinearOp own;
  own.bind(parse_case("ln_linear_relu/opmeter_quant/bf16/batch=1,seq=2,hidden=64,out=16,quant=int4wo-32/threads=1"));
  auto own_in = own.make_inputs(9);
  EXPECT_EQ(std::memcmp(in[1].data(), own_in[1].data(), in[1].bytes()), 0);
  EXPECT_TRUE(quant->kept_for_checks(1));
  EXPECT_EQ(quant->held_as(1), "u4 codes with a scale and zero per 32 inputs");
  EXPECT_FALSE(plain->same_in_every_set(1));
}

TEST(QuantWorker, TorchKernelsRunOrAreSkippedNamingWhatIsMissing) {
  REQUIRE_PYTHON_TORCH();
  opmeter::testing::TorchWorker worker;
  const std::string shape = "batch=1,seq=2,hidden=128,out=32";
  for (const char* recipe : {"int8wo", "int8dq", "int4wo-64"}) {
    const std::string dtype = std::string(recipe) == "int8dq" ? "fp32" : "bf16";
    Result r = run("linear/torch_quant/" + dtype + "/" + shape + ",act=none,quant=" + recipe + "/threads=1");
    if (r.status == Status::skipped) {
      // This PyTorch has no such kernel on the CPU: its own message, or the missing function.
      EXPECT_TRUE(contains(r.reason, "torch")) << recipe << ": " << r.reason;
      continue;
    }
    ASSERT_EQ(r.status, Status::ok) << recipe << ": " << r.reason;
    EXPECT_LE(r.max_error, r.tolerance) << recipe;
    Result ours = run("linear/opmeter_quant/" + dtype + "/" + shape + ",act=none,quant=" + recipe + "/threads=1");
    ASSERT_EQ(ours.status, Status::ok) << ours.reason;
    EXPECT_NEAR(sqnr(r), sqnr(ours), 0.3) << recipe << ": the same recipe on the same inputs";
  }
  Result hqq = run("linear/torch_quant/bf16/" + shape + ",act=none,quant=hqq-int4-64/threads=1");
  EXPECT_EQ(hqq.status, Status::skipped);
  EXPECT_TRUE(contains(hqq.reason, "HQQ")) << hqq.reason;
  Result ao = run("linear/torchao/bf16/" + shape + ",act=none,quant=int8wo/threads=1");
  if (ao.status == Status::skipped) {
    EXPECT_TRUE(contains(ao.reason, "torchao")) << ao.reason;
  }
  Result aot = run("layernorm/torch_compile_aot_eager/fp32/batch=2,seq=8,hidden=96/threads=1");
  if (aot.status == Status::skipped) {
    EXPECT_TRUE(contains(aot.reason, "torch.compile")) << aot.reason;
  } else {
    EXPECT_EQ(aot.status, Status::ok) << aot.reason;
    EXPECT_EQ(aot.details["compile_backend"], "aot_eager");
  }
}
