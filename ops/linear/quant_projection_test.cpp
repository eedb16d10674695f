// A quantized projection (transformer_block's opmeter_quant) picks int4's kernel and layout for the
// rows it is prepared for, and stays correct when called with other row counts: prepared for one
// row (the limbs kernels where the CPU has them) and run on 1, 3 and 5 rows, or prepared for 5,
// its outputs match the recipe's x W^T + b in fp64 within bf16's rounding of y, for int4 and int8,
// whichever of its input sets' weight copies the call reads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "opmeter/dtype.hpp"
#include "ops/linear/quant_projection.hpp"

using namespace opmeter;
using namespace opmeter::linear;

TEST(QuantProjection, RunsEveryRowCountOnTheLayoutItPreparedFor) {
  const std::size_t out = 37, hidden = 256;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> w(out * hidden), bias(out);
  for (auto& v : w) v = normal(rng);
  for (auto& v : bias) v = normal(rng);
  for (const char* recipe : {"int4wo-64", "int8wo"})
  for (std::size_t prepared_rows : {1, 5}) {
    const auto q = quant::quantize_weights(*quant::parse_recipe(recipe), w.data(), out, hidden, Elem::bf16);
    QuantProjection p;
    p.prepare(q, true, prepared_rows, 3);  // three input sets, each with its own packed weights
    ASSERT_EQ(p.copies(), 3u);
    for (std::size_t rows : {1, 3, 5}) {
      std::vector<std::uint16_t> x(rows * hidden), y(rows * out);
      for (auto& v : x) v = to_bf16(normal(rng));
      p.run(rows % 3, x.data(), rows, bias.data(), tensor::Act::none, nullptr, y.data());  // copies 1, 0, 2
      for (std::size_t m = 0; m < rows; ++m)
        for (std::size_t j = 0; j < out; ++j) {
          double exact = bias[j], mag = std::fabs(bias[j]);
          for (std::size_t k = 0; k < hidden; ++k) {
            exact += double(from_bf16(x[m * hidden + k])) * q.weight(j, k);
            mag += std::fabs(double(from_bf16(x[m * hidden + k])) * q.weight(j, k));
          }
          ASSERT_NEAR(from_bf16(y[m * out + j]), exact, std::fabs(exact) / 128 + 1e-4 * mag)
              << recipe << " prepared for " << prepared_rows << " rows, run on " << rows << " (" << p.kernel(rows)
              << ", weight copy " << rows % 3 << "), row " << m << ", channel " << j;
        }
    }
  }
}
