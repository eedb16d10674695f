// The fp8 (e4m3) weight-only kernel with bf16 activations (quant_kernel_fp8_bf16.cpp) and its
// layout: every code in its run's place, and the kernel against the recipe's weights in fp64 for
// every code byte (subnormals, both signs, the largest), every row count of a pass, channel counts
// that leave a remainder, and a hidden size with a partial last run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "opmeter/dtype.hpp"
#include "ops/linear/quant_kernel.hpp"
#include "ops/linear/quant_kernel_test_util.hpp"

using namespace opmeter;
using namespace opmeter::linear;

namespace {

// A float8wo layer whose codes run through every finite e4m3 byte (0x7f and 0xff are NaN).
quant::QuantizedWeights every_code_layer(std::size_t out, std::size_t hidden) {
  std::vector<float> w(out * hidden, 1.f);
  auto q = quant::quantize_weights(*quant::parse_recipe("float8wo"), w.data(), out, hidden, Elem::bf16);
  for (std::size_t i = 0; i < q.codes.size(); ++i) {
    std::uint8_t b = static_cast<std::uint8_t>((i * 37 + i / 256) % 256);
    if ((b & 0x7f) == 0x7f) b ^= 0x01;  // NaN -> the largest finite of that sign
    q.codes[i] = b;
  }
  for (std::size_t j = 0; j < q.scales.size(); ++j) q.scales[j] = 0.5f + float(j) / 8;  // per channel or tensor
  return q;
}

}  // namespace

TEST(QuantKernelFp8, RunsHoldEveryCodeInItsPlace) {
  std::vector<int> seen(64, 0);
  for (std::size_t kk = 0; kk < 64; ++kk) ++seen.at(fp8_run_byte(kk));
  for (int s : seen) ASSERT_EQ(s, 1);
  // Lane L's low 8 bytes are k 8L .. 8L + 7, its high 8 bytes k 32 + 8L ..: the unpacks' order.
  EXPECT_EQ(fp8_run_byte(0), 0u);
  EXPECT_EQ(fp8_run_byte(8), 16u);
  EXPECT_EQ(fp8_run_byte(32), 8u);
  EXPECT_EQ(fp8_run_byte(63), 63u);
  const std::size_t out = 3, hidden = 200;  // 3 runs and 8 codes as they are
  const auto q = every_code_layer(out, hidden);
  const PackedWeights p = pack_fp8_runs(q);
  EXPECT_TRUE(p.fp8_runs);
  ASSERT_EQ(p.codes.size(), q.codes.size());
  for (std::size_t j = 0; j < out; ++j)
    for (std::size_t k = 0; k < hidden; ++k) {
      const std::size_t at = k < 192 ? k / 64 * 64 + fp8_run_byte(k % 64) : k;
      ASSERT_EQ(p.codes[j * hidden + at], q.codes[j * hidden + k]) << j << " " << k;
    }
}

TEST(QuantKernelFp8, Bf16KernelAgreesWithTheRecipeOnEveryCode) {
  const auto& best = quant_kernels();
  if (!best.fp8_bf16) GTEST_SKIP() << "no AVX512_BF16 with VBMI here: fp8 with bf16 activations runs the fp32 kernel";
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (std::size_t hidden : {384, 200})
    for (std::size_t rows : {1, 2, 3, 5, 8, 11}) {
      const std::size_t out = 19;
      const auto q = every_code_layer(out, hidden);
      const PackedWeights p = pack_fp8_runs(q);
      std::vector<std::uint16_t> xb(rows * hidden);
      std::vector<float> x(xb.size());
      for (std::size_t i = 0; i < xb.size(); ++i) {
        xb[i] = to_bf16(normal(rng));
        x[i] = from_bf16(xb[i]);
      }
      std::vector<float> c(rows * out, NAN);
      // Channels 3 .. 18 (two passes of 8), then 0 .. 2.
      best.fp8_bf16(p, xb.data(), rows, 3, out, c.data(), out);
      best.fp8_bf16(p, xb.data(), rows, 0, 3, c.data(), out);
      // Products exact in fp32 (e4m3 and bf16 values), sums in fp32: a few ulps of the magnitudes.
      EXPECT_LT(kernel_tests::relative_error(q, x, c, rows), 1e-5) << "hidden " << hidden << ", rows " << rows;
    }
}
