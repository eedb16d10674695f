// transformer_block with weight-only recipes (issue 29 item 6): opmeter_quant passes the recipe's
// fp64 gate for every CPU weight-only recipe in fp32 and bf16; the gate rejects the unquantized
// block's answer; SQNR (of the block's update y - x) equals an independent computation: the plain
// block's reference run on weights replaced by the recipe's stored values; bad recipes exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/transformer/transformer_quant.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

std::string block_case(const std::string& dtype, const std::string& recipe, const std::string& impl = "opmeter_quant") {
  return fmt::format("transformer_block/{}/{}/batch=2,seq=9,hidden=64,heads=2,mlp=128,act=gelu,causal=1,quant={}/threads=2",
                     impl, dtype, recipe);
}

double metric(const Result& r, const std::string& name) {
  auto it = r.metrics.find(name);
  return it == r.metrics.end() ? std::nan("") : it->second.value;
}

// The spec's protected parts, for the test.
struct Spec : transformer::QuantTransformerBlockOp {
  using TransformerBlockOp::kX;
  using TransformerBlockOp::reference_rows_of;
};

// Every row of the block's output from the reference, with the recipe's weights or the inputs' own.
HostTensor block_output(const Spec& op, const HostTensors& in, bool stored_weights) {
  HostTensor out(op.output());
  std::vector<std::size_t> rows(op.out_rows());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  op.reference_rows_of(in, rows, [&](std::size_t i, const double* ref, const double*) {
    for (std::size_t c = 0; c < op.out_cols(); ++c) store(out.desc().elem, out.data(), i * op.out_cols() + c, ref[c]);
  }, stored_weights);
  return out;
}

}  // namespace

TEST(QuantTransformerBlock, EveryWeightOnlyRecipePassesItsGate) {
  double int8 = 0, int4 = 0;
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* recipe : {"int8wo", "float8wo", "int4wo-32", "int4wo-64", "hqq-int4-64"}) {
      if (std::string(dtype) == "fp32" && std::string(recipe) != "int8wo" && std::string(recipe) != "int4wo-32") continue;
      const auto s = block_case(dtype, recipe);
      Result r = run_case(parse_case(s), quick_options(2));
      ASSERT_EQ(r.status, Status::ok) << s << ": " << r.reason;
      EXPECT_LE(r.max_error, r.tolerance) << s;
      EXPECT_GT(metric(r, "sqnr_db"), 10) << s;  // the quantized block resembles the block
      EXPECT_GT(metric(r, "weight_bytes"), 0) << s;
      if (std::string(dtype) == "bf16" && std::string(recipe) == "int8wo") int8 = metric(r, "sqnr_db");
      if (std::string(dtype) == "bf16" && std::string(recipe) == "int4wo-64") int4 = metric(r, "sqnr_db");
    }
  EXPECT_GT(int8, int4 + 10) << "8 bits per weight against 4";
}

TEST(QuantTransformerBlock, GateRejectsTheUnquantizedBlockAndSqnrIsTheUpdatesAgainstAnIndependentOne) {
  Spec op;
  op.bind(parse_case(block_case("fp32", "int4wo-64")));
  HostTensors in = op.make_inputs(5);
  const HostTensor recipe_out = block_output(op, in, true);
  const HostTensor plain_out = block_output(op, in, false);
  const Check pass = op.check(in, recipe_out, 5);
  EXPECT_TRUE(pass.ok) << pass.max_error;
  EXPECT_FALSE(op.check(in, plain_out, 5).ok);  // the unquantized answer is not the recipe's
  // Independent: the plain block (no quant code) on inputs whose weights are the recipe's stored
  // values, exact in fp32; SQNR of y - x over the rows the check samples.
  HostTensors dq = op.make_inputs(5);
  for (std::size_t which : Spec::kWeights) {
    const auto& q = op.quantized_weights(in, which);
    for (std::size_t j = 0; j < q.out; ++j)
      for (std::size_t k = 0; k < q.hidden; ++k) store(Elem::f32, dq[which].data(), j * q.hidden + k, q.weight(j, k));
  }
  transformer::TransformerBlockOp plain;
  plain.bind(parse_case("transformer_block/reference/fp32/batch=2,seq=9,hidden=64,heads=2,mlp=128,act=gelu,causal=1/threads=1"));
  double signal = 0, noise = 0;
  const std::size_t h = 64;
  std::vector<double> a(h), am(h), b(h), bm(h);
  for (std::size_t row : op.check_rows(5)) {
    plain.reference_row(dq, row, a.data(), am.data());
    plain.reference_row(in, row, b.data(), bm.data());
    for (std::size_t c = 0; c < h; ++c) {
      const double x = in[Spec::kX][row * h + c], got = double(static_cast<float>(a[c])) - x, ref = b[c] - x;
      signal += ref * ref;
      noise += (got - ref) * (got - ref);
    }
  }
  const double independent = 10 * std::log10(signal / noise);
  ASSERT_TRUE(pass.metrics.count("sqnr_db"));
  EXPECT_NEAR(pass.metrics.at("sqnr_db").value, independent, 0.01);
  EXPECT_GT(independent, 15);
  EXPECT_LT(independent, 40);
}

TEST(QuantTransformerBlock, DynamicRecipesAndGroupsThatDoNotDivideAreCaseErrors) {
  EXPECT_THROW(validate_case(parse_case(block_case("bf16", "int8dq"))), CaseError);
  // mlp=128 is, hidden=64 is not, a multiple of 128.
  EXPECT_THROW(validate_case(parse_case(block_case("bf16", "int4wo-128"))), CaseError);
  EXPECT_NO_THROW(validate_case(parse_case(block_case("bf16", "int4wo-64"))));
  // The message names the size the group does not divide: W2's inputs are mlp, not hidden.
  const std::string mlp48 = "transformer_block/opmeter_quant/bf16/batch=1,seq=1,hidden=64,heads=1,mlp=48,act=gelu,"
                            "causal=0,quant=int4wo-32/threads=1";
  try {
    validate_case(parse_case(mlp48));
    ADD_FAILURE() << "a group of 32 over mlp=48 was accepted";
  } catch (const CaseError& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide mlp=48"), std::string::npos) << e.what();
  }
  // Without quant the case is not opmeter_quant's.
  Result plain = run_case(parse_case("transformer_block/opmeter_quant/fp32/batch=1,seq=4,hidden=64,heads=2,mlp=64,act=gelu,"
                                     "causal=0/threads=1"),
                          quick_options(1));
  EXPECT_EQ(plain.status, Status::skipped);
}
