// Quantized linear layers on the CPU (issue 17): every CPU recipe through opmeter_quant on odd
// shapes passes the recipe's fp64 gate in fp32 and bf16; the gate rejects wrong outputs (and the
// unquantized answer); SQNR orders the recipes as their precision says; weight bytes; the CLI.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/linear/quant_linear.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

const std::vector<std::string> kCpuRecipes = {"int8wo", "int8dq", "float8wo", "int4wo-32", "int4wo-64", "int4wo-128", "hqq-int4-64"};

std::string case_string(const std::string& op, const std::string& dtype, std::size_t rows, std::size_t hidden,
                        std::size_t out, const std::string& recipe) {
  std::string act = op == "linear" ? ",act=gelu" : "";
  return fmt::format("{}/opmeter_quant/{}/batch=1,seq={},hidden={},out={}{},quant={}/threads=2", op, dtype, rows, hidden, out,
                     act, recipe);
}

Result run(const std::string& s) { return run_case(parse_case(s), quick_options(2)); }

double metric(const Result& r, const std::string& name) {
  auto it = r.metrics.find(name);
  return it == r.metrics.end() ? std::nan("") : it->second.value;
}

// The spec alone, bound to a case, with its inputs for seed 7.
struct Bound {
  linear::QuantLinearOp op;
  HostTensors in;
  explicit Bound(const std::string& s) {
    op.bind(parse_case(s));
    in = op.make_inputs(7);
  }
  // The output made of `row_fn`'s rows.
  template <class RowFn>
  HostTensor output(RowFn row_fn) const {
    HostTensor out(op.output());
    std::vector<double> ref(op.out_cols()), mag(op.out_cols());
    for (std::size_t r = 0; r < op.out_rows(); ++r) {
      row_fn(r, ref.data(), mag.data());
      for (std::size_t c = 0; c < op.out_cols(); ++c) store(out.desc().elem, out.data(), r * op.out_cols() + c, ref[c]);
    }
    return out;
  }
};

}  // namespace

TEST(QuantLinear, EveryCpuRecipePassesItsGateOnOddShapes) {
  struct Shape {
    const char* op;
    std::size_t rows, hidden;
  };
  const Shape shapes[] = {{"linear", 1, 128}, {"ln_linear_silu", 3, 192}, {"linear", 17, 128}};
  for (const char* dtype : {"fp32", "bf16"})
    for (auto& recipe : kCpuRecipes)
      for (auto& sh : shapes) {
        if (recipe == "int4wo-128" && sh.hidden % 128 != 0) continue;
        auto s = case_string(sh.op, dtype, sh.rows, sh.hidden, 33, recipe);
        auto r = run(s);
        EXPECT_EQ(r.status, Status::ok) << s << ": " << r.reason;
        EXPECT_TRUE(r.metrics.count("sqnr_db")) << s;
        EXPECT_TRUE(r.metrics.count("max_abs_error")) << s;
        EXPECT_GT(metric(r, "weight_bytes"), 0) << s;
        EXPECT_GT(metric(r, "sqnr_db"), 10) << s;  // a recipe's output resembles the layer's
      }
}

TEST(QuantLinear, GateFailsAWrongOutputAndTheUnquantizedOne) {
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* recipe : {"int4wo-64", "int8dq"}) {
      Bound b(case_string("ln_linear_gelu", dtype, 3, 128, 33, recipe));
      auto right = b.output([&](std::size_t r, double* ref, double* mag) { b.op.reference_row(b.in, r, ref, mag); });
      auto ok = b.op.check(b.in, right, 1);
      EXPECT_TRUE(ok.ok) << ok.detail;
      EXPECT_TRUE(ok.metrics.count("sqnr_db"));

      // One element off by a tenth of its scale (a dropped group, a wrong zero point).
      auto wrong = b.output([&](std::size_t r, double* ref, double* mag) {
        b.op.reference_row(b.in, r, ref, mag);
        if (r == 1) ref[20] += 0.1 * mag[20];
      });
      auto bad = b.op.check(b.in, wrong, 1);
      EXPECT_FALSE(bad.ok) << bad.detail;
      EXPECT_NE(bad.detail.find("[1,20]"), std::string::npos) << bad.detail;

      // The unquantized layer's exact output is not what int4 computes: the gate is the recipe's.
      if (std::string(recipe) == "int4wo-64") {
        auto exact = b.output([&](std::size_t r, double* ref, double* mag) { b.op.LinearOp::reference_row(b.in, r, ref, mag); });
        auto c = b.op.check(b.in, exact, 1);
        EXPECT_FALSE(c.ok) << c.detail;
        // The SQNR is the recipe's (its product against the exact one), whatever a kernel wrote.
        EXPECT_EQ(c.metrics.at("sqnr_db").value, ok.metrics.at("sqnr_db").value) << c.detail;
      }
    }
}

TEST(QuantLinear, SqnrOrdersTheRecipes) {
  auto sqnr = [](const std::string& recipe) {
    auto r = run(case_string("linear", "fp32", 8, 512, 64, recipe));
    EXPECT_EQ(r.status, Status::ok) << r.reason;
    return metric(r, "sqnr_db");
  };
  const double int8 = sqnr("int8wo"), int4 = sqnr("int4wo-64"), hqq = sqnr("hqq-int4-64"), int4_32 = sqnr("int4wo-32");
  EXPECT_GT(int8, int4);
  EXPECT_GT(int4, 0);
  EXPECT_GE(hqq, int4);
  EXPECT_GT(int4_32, int4);  // smaller groups, closer scales
  EXPECT_GT(int8, 30);       // ~6 dB per bit: int8 per channel near 40 dB on Gaussians
}

TEST(QuantLinear, WeightBytesAreTheStoredCodesAndScales) {
  const std::size_t hidden = 256, out = 48;
  auto r = run(case_string("linear", "bf16", 2, hidden, out, "int4wo-64"));
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  // Codes: half a byte each; a bf16 scale and zero per group of 64.
  EXPECT_DOUBLE_EQ(metric(r, "weight_bytes"), double(hidden * out / 2 + 2 * 2 * hidden * out / 64));
  EXPECT_EQ(r.metrics.at("weight_bytes").unit, "B");
  auto r8 = run(case_string("linear", "fp32", 2, hidden, out, "int8wo"));
  ASSERT_EQ(r8.status, Status::ok) << r8.reason;
  EXPECT_DOUBLE_EQ(metric(r8, "weight_bytes"), double(hidden * out + 4 * out));
  EXPECT_FALSE(r.details.at("isa").empty());
  // 33 channels: the layout as kept, counted by hand. fp32 layers keep one run of codes a channel,
  // fp32 scales (int4: a scale and a zero per group); int8dq's kernel for VNNI keeps channels in
  // blocks of 16 (48 here, the last 15 zero), else the same run a channel.
  const std::size_t odd = 33;
  for (auto [recipe, expected] : {std::pair{"int8wo", odd * hidden + 4 * odd},
                                  {"float8wo", odd * hidden + 4 * odd},
                                  {"int4wo-64", odd * hidden / 2 + odd * (hidden / 64) * (4 + 4)}}) {
    auto q = run(case_string("linear", "fp32", 1, hidden, odd, recipe));
    ASSERT_EQ(q.status, Status::ok) << q.reason;
    EXPECT_DOUBLE_EQ(metric(q, "weight_bytes"), double(expected)) << recipe;
  }
  auto dq = run(case_string("linear", "fp32", 1, hidden, odd, "int8dq"));
  ASSERT_EQ(dq.status, Status::ok) << dq.reason;
  const double blocks = 48 * hidden + 4 * 48, plain = odd * hidden + 4 * odd;
  EXPECT_TRUE(metric(dq, "weight_bytes") == blocks || metric(dq, "weight_bytes") == plain)
      << metric(dq, "weight_bytes");
}

TEST(QuantLinear, Fp8DynamicIsSkippedOnTheCpu) {
  auto r = run(case_string("linear", "bf16", 2, 128, 16, "float8dq-row"));
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("no fp8 GEMM on CPUs"), std::string::npos) << r.reason;
}

TEST(QuantLinearCli, ConfigWithRecipesReportsSqnr) {
  // The bf16 baseline: oneDNN's, or the GEMV where oneDNN has no bf16 (AVX2 CPUs).
  const std::string baseline_impl = opmeter::testing::onednn_has_bf16() ? "onednn" : "opmeter_gemv";
  auto dir = temp_dir("quant");
  auto cfg = write(dir, "q.yaml",
                   "ops: [linear]\nimpls: [" + baseline_impl + ", opmeter_quant]\ndtypes: [bf16]\nthreads: 1\n"
                   "stopping: {samples: 3, warmup: 1}\nbatch: [1]\nseq: [2]\nhidden: [128]\nout: [32]\n"
                   "quantization: [baseline, int8wo, int4wo-32]\n");
  auto out = cli("run " + cfg.string() + " --out " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = read_jsonl((dir / "res" / "results.jsonl").string());
  int quantized = 0, baseline = 0;
  for (auto& r : results) {
    if (r.kase.op != "linear") continue;
    EXPECT_EQ(r.status, Status::ok) << r.case_string << ": " << r.reason;
    if (r.kase.has("quant")) {
      ++quantized;
      EXPECT_EQ(r.kase.impl, "opmeter_quant");
      EXPECT_TRUE(r.metrics.count("sqnr_db")) << r.case_string;
    } else {
      ++baseline;
      EXPECT_EQ(r.kase.impl, baseline_impl);
    }
  }
  EXPECT_EQ(quantized, 2);
  EXPECT_EQ(baseline, 1);
  auto j = nlohmann::json::parse(std::ifstream(dir / "res" / "results.json"));
  EXPECT_NE(j.dump().find("sqnr_db"), std::string::npos);
}

TEST(QuantLinearCli, BadRecipesExitTwoNamingTheKey) {
  auto dir = temp_dir("quant_bad");
  auto unknown = write(dir, "u.yaml", "ops: [linear]\ndtypes: [bf16]\nbatch: [1]\nseq: [2]\nhidden: [128]\nout: [32]\n"
                                      "quantization: [int3wo]\n");
  auto out = cli("run " + unknown.string());
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("quantization"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("int3wo"), std::string::npos) << out.text;

  auto group = write(dir, "g.yaml", "ops: [linear]\ndtypes: [bf16]\nbatch: [1]\nseq: [2]\nhidden: [96]\nout: [32]\n"
                                    "quantization: [int4wo-64]\n");
  out = cli("run " + group.string());
  EXPECT_EQ(out.code, 2) << out.text;
  // Points at the `quantization:` line (7) and names the recipe and the hidden size.
  EXPECT_NE(out.text.find("g.yaml:7:"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("int4wo-64"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("hidden=96"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("terminate"), std::string::npos) << out.text;

  auto res = dir / "res";
  out = cli("run --case linear/onednn/bf16/batch=1,seq=2,hidden=128,out=32,act=none,quant=int8wo/threads=1 --samples 3 --out " +
            res.string());
  EXPECT_EQ(out.code, 0) << out.text;
  auto results = read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::skipped);
  EXPECT_NE(results[0].reason.find("opmeter_quant"), std::string::npos) << results[0].reason;
}

// W is the same in every input set of a quantized case (quantized once, as a deployment would),
// while x and the bias differ; an unquantized linear draws W afresh for each set.
TEST(QuantLinear, WeightsAreTheSameInEveryInputSetAndTheActivationsAreNot) {
  auto same = [](const HostTensor& a, const HostTensor& b) {
    return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
  };
  constexpr std::size_t kX = 0, kW = 1, kBias = 2;  // LinearOp's inputs
  Bound q(case_string("linear", "bf16", 3, 128, 33, "int4wo-64"));
  const HostTensors other = q.op.make_inputs(8);
  EXPECT_TRUE(same(q.in[kW], other[kW]));
  EXPECT_FALSE(same(q.in[kX], other[kX]));
  EXPECT_FALSE(same(q.in[kBias], other[kBias]));
  // One quantization serves both sets: the same object comes back.
  EXPECT_EQ(&q.op.quantized_weights(q.in), &q.op.quantized_weights(other));

  linear::LinearOp plain;
  plain.bind(parse_case("linear/onednn/bf16/batch=1,seq=3,hidden=128,out=33,act=gelu/threads=2"));
  EXPECT_FALSE(same(plain.make_inputs(7)[kW], plain.make_inputs(8)[kW]));
}

// A cold case rotates input sets, and each set has its own packed weights: the calls read their
// codes from memory as the unquantized impls read their W, not one packed copy kept in cache.
TEST(QuantLinear, ColdCasesReadADifferentPackedWeightCopyEachInputSet) {
  for (const char* kase :
       {"linear/opmeter_quant/fp32/batch=1,seq=1,hidden=256,out=64,act=none,quant=int4wo-64/threads=2",
        "transformer_block/opmeter_quant/fp32/batch=1,seq=1,hidden=64,heads=2,mlp=128,act=gelu,"
        "causal=1,quant=int8wo/threads=2"}) {
    const Result cold = run(kase);
    ASSERT_EQ(cold.status, Status::ok) << kase << ": " << cold.reason;
    ASSERT_GT(cold.copies, 1u) << kase;  // a few KB a set against MBs of last-level cache
    EXPECT_EQ(cold.details.at("weight_copies").rfind(fmt::format("{}: ", cold.copies), 0), 0u)
        << kase << ": " << cold.details.at("weight_copies");
    const Result hot = run(std::string(kase) + ",hot");
    ASSERT_EQ(hot.status, Status::ok) << kase << ": " << hot.reason;
    EXPECT_EQ(hot.copies, 1u);
    EXPECT_EQ(hot.details.count("weight_copies"), 0u) << kase;
  }
}

// A quantized layer's peak memory is what its calls hold: x, b, y and the packed codes and
// scales of each input set, not the unquantized W (kept once, to check results). Counted here by
// hand from the shapes and the recipes' storage; the bf16 layer holds its W in every set.
TEST(QuantLinear, PeakMemoryCountsThePackedWeightsNotTheUnquantizedOnes) {
  const std::size_t rows = 4, hidden = 256, out = 128;
  const std::size_t activations = rows * hidden * 2 + out * 4 + rows * out * 2;  // x, b (fp32), y in bf16
  const std::size_t int8 = out * hidden + out * 4;                               // codes, a float scale per channel
  const std::size_t int4 = out * hidden / 2 + out * (hidden / 64) * 2 * 2;  // nibbles, bf16 scale and zero per group
  const std::string shape = "batch=1,seq=4,hidden=256,out=128,act=none";
  const Result bf16 = run("linear/onednn/bf16/" + shape + "/threads=1,hot");
  const Result w8 = run("linear/opmeter_quant/bf16/" + shape + ",quant=int8wo/threads=1,hot");
  const Result w4 = run("linear/opmeter_quant/bf16/" + shape + ",quant=int4wo-64/threads=1,hot");
  for (const Result* r : {&bf16, &w8, &w4}) {
    ASSERT_EQ(r->status, Status::ok) << r->case_string << ": " << r->reason;
    ASSERT_TRUE(r->peak_memory_bytes.has_value()) << r->case_string;
  }
  EXPECT_EQ(*bf16.peak_memory_bytes, activations + out * hidden * 2);
  EXPECT_EQ(*w8.peak_memory_bytes, activations + int8);
  EXPECT_EQ(*w4.peak_memory_bytes, activations + int4);
  // Cold: every input set has its x, b, y and its packed copy.
  const Result cold = run("linear/opmeter_quant/bf16/" + shape + ",quant=int8wo/threads=1");
  ASSERT_EQ(cold.status, Status::ok) << cold.reason;
  ASSERT_GT(cold.copies, 1u);
  EXPECT_EQ(*cold.peak_memory_bytes, cold.copies * (activations + int8));
}

TEST(HeldBytes, CountWithTheBuffersWhileHeld) {
  const std::size_t live = Buffer::live_bytes();
  {
    HeldBytes a(1000);
    EXPECT_EQ(Buffer::live_bytes(), live + 1000);
    HeldBytes b = std::move(a);
    EXPECT_EQ(Buffer::live_bytes(), live + 1000);
    b = HeldBytes(300);
    EXPECT_EQ(Buffer::live_bytes(), live + 300);
    Buffer::reset_peak();
    b = HeldBytes();
    EXPECT_EQ(Buffer::live_bytes(), live);
    EXPECT_EQ(Buffer::peak_bytes(), live + 300);
  }
  EXPECT_EQ(Buffer::live_bytes(), live);
}
