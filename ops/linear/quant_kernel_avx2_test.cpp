// The AVX2 kernels (quant_kernel_avx2.cpp) against the recipes in fp64, on every CPU with AVX2
// (AVX-512 machines too, where they are not the best kernels but must stay right): int4 in blocks
// of 32 and 64, groups of 1, 2 and several blocks, zero points at both ends; int8 and e4m3 with a
// hidden size that leaves a tail; int8 dynamic with codes at both ends; row counts below, at and
// past a pass of kRowsPerPass, and channel ranges that do not start at 0.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "opmeter/dtype.hpp"
#include "ops/linear/quant_kernel.hpp"
#include "ops/linear/quant_kernel_test_util.hpp"

using namespace opmeter;
using namespace opmeter::linear;

namespace {

constexpr std::size_t kRows[] = {1, 2, 5, 8, 11};

struct Layer {
  std::size_t out, hidden;
  quant::QuantizedWeights q;
  PackedWeights packed;
  std::vector<float> x, xsum;  // x: rows x hidden; xsum: its group sums (int4)

  Layer(const std::string& recipe, std::size_t rows, std::size_t out_, std::size_t hidden_, std::uint32_t seed)
      : out(out_), hidden(hidden_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> w(out * hidden);
    for (auto& v : w) v = normal(rng);
    for (std::size_t k = 0; k < hidden; ++k) {
      w[k] = k % 2 ? 3.f : -3.f;  // channel 0: the codes at both ends
      // Channels 1 and 2 from 0 up and from 0 down (a 0 in every group): int4's zero points 0 and 15.
      w[hidden + k] = k % 32 == 0 ? 0.f : std::fabs(w[hidden + k]);
      w[2 * hidden + k] = k % 32 == 0 ? 0.f : -std::fabs(w[2 * hidden + k]);
    }
    const auto r = quant::parse_recipe(recipe);
    q = quant::quantize_weights(*r, w.data(), out, hidden, Elem::bf16);
    packed = pack_weights(q, r->dynamic());
    x.resize(rows * hidden);
    for (auto& v : x) v = normal(rng) + 0.5f;  // a mean, as LayerNorm's beta gives: sum(x) is not small
    if (r->weights == quant::WeightFormat::int4) {
      const std::size_t groups = hidden / r->group;
      xsum.assign(rows * groups, 0.f);
      for (std::size_t m = 0; m < rows; ++m)
        for (std::size_t k = 0; k < hidden; ++k) xsum[m * groups + k / r->group] += x[m * hidden + k];
    }
  }

  // Largest |c - x W^T| / sum_k |x_k w_jk|, W the recipe's weights in fp64.
  double error(const std::vector<float>& c, std::size_t rows) const {
    return kernel_tests::relative_error(q, x, c, rows);
  }
};

// Channels 3 .. out, then 0 .. 2, as two threads' ranges would be.
template <class Call>
std::vector<float> in_two_ranges(std::size_t rows, std::size_t out, Call call) {
  std::vector<float> c(rows * out, NAN);
  call(std::size_t{3}, out, c.data());
  call(std::size_t{0}, std::size_t{3}, c.data());
  return c;
}

}  // namespace

TEST(QuantKernelAvx2, WeightOnlyAgreesWithTheRecipes) {
  if (!avx2_quant_usable()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  const QuantKernels k = avx2_quant_kernels();
  EXPECT_STREQ(k.isa, "avx2");
  // (recipe, hidden): int4 blocks of 32 (group 32) and 64 (groups of one and two blocks), int8
  // and e4m3 with a tail past the last 32.
  const std::pair<const char*, std::size_t> layers[] = {
      {"int4wo-32", 384}, {"int4wo-64", 320}, {"int4wo-128", 384}, {"int8wo", 200}, {"float8wo", 200}};
  for (const auto& [recipe, hidden] : layers)
    for (std::size_t rows : kRows) {
      Layer l(recipe, rows, 19, hidden, 31 + static_cast<std::uint32_t>(rows));
      ASSERT_FALSE(l.packed.tiles);
      const auto c = in_two_ranges(rows, l.out, [&](std::size_t j0, std::size_t j1, float* out) {
        k.weight_only(l.packed, l.x.data(), l.xsum.data(), rows, j0, j1, out, l.out);
      });
      // fp32 sums of fp32 products: a few ulps of the magnitude.
      EXPECT_LT(l.error(c, rows), 1e-6) << recipe << ", rows " << rows;
    }
}

TEST(QuantKernelAvx2, Int8DynamicIsExactOnTheCodes) {
  if (!avx2_quant_usable()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  const QuantKernels k = avx2_quant_kernels();
  const std::size_t out = 21, hidden = 200;  // 12 vectors of 16 and a tail of 8
  for (std::size_t rows : kRows) {
    Layer l("int8dq", rows, out, hidden, 41 + static_cast<std::uint32_t>(rows));
    std::mt19937 rng(static_cast<std::uint32_t>(rows));
    std::vector<std::uint8_t> xu(rows * hidden);  // activation code + 128
    for (std::size_t i = 0; i < xu.size(); ++i)
      xu[i] = static_cast<std::uint8_t>(i % 7 == 0 ? (i % 2 ? 255 : 1) : 1 + rng() % 255);  // codes -127 .. 127
    std::vector<float> xscale(rows);
    for (std::size_t m = 0; m < rows; ++m) xscale[m] = 0.01f * float(m + 1);
    const auto c = in_two_ranges(rows, out, [&](std::size_t j0, std::size_t j1, float* o) {
      k.int8_dynamic(l.packed, xu.data(), xscale.data(), rows, j0, j1, o, out);
    });
    for (std::size_t m = 0; m < rows; ++m)
      for (std::size_t j = 0; j < out; ++j) {
        double exact = 0, mag = 0;
        for (std::size_t kk = 0; kk < hidden; ++kk) {
          const double t = double(xscale[m]) * (int(xu[m * hidden + kk]) - 128) * l.q.weight(j, kk);
          exact += t;
          mag += std::fabs(t);
        }
        // The integer sum is exact; two fp32 scalings round it.
        ASSERT_LE(std::fabs(c[m * out + j] - exact), 1e-6 * mag)
            << "rows " << rows << ", row " << m << ", channel " << j;
      }
  }
}

// The best kernels of a CPU with AVX2 and without AVX-512 VNNI are the AVX2 ones.
TEST(QuantKernelAvx2, AreTheBestWhereThereIsNoAvx512Vnni) {
  __builtin_cpu_init();
  if (!avx2_quant_usable()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  if (__builtin_cpu_supports("avx512vnni")) GTEST_SKIP() << "AVX-512 VNNI here: its kernels are the best";
  EXPECT_STREQ(quant_kernels().isa, "avx2");
}

// Where the AVX2 kernels are the best: an int4 layer with bf16 activations takes the limbs kernel
// at every row count, on weights in blocks (of 64; of 32 for groups of 32), not tiles; fp32
// activations take the fp32 kernel; each says so in details.kernel.
TEST(QuantKernelAvx2, Int4LayersTakeTheLimbsKernelOnBlocks) {
  if (std::string(quant_kernels().isa) != "avx2") GTEST_SKIP() << "the AVX2 kernels are not this CPU's best";
  std::vector<float> w(16 * 256, 0.5f);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i % 13) - 6;
  for (std::size_t rows : {1, 4, 64}) {
    const auto q = quant::quantize_weights(*quant::parse_recipe("int4wo-64"), w.data(), 16, 256, Elem::bf16);
    const auto bf16 = quant_layer_kernels(q, true, rows);
    EXPECT_EQ(bf16.int4, Int4Path::limbs) << rows;
    EXPECT_FALSE(bf16.packed.tiles);
    EXPECT_EQ(bf16.packed.block, 64u);
    EXPECT_NE(weight_only_kernel_name(bf16.packed, bf16.int4).find("16-bit words"), std::string::npos);
    EXPECT_EQ(quant_layer_kernels(q, false, rows).int4, Int4Path::fp32) << rows;
    const auto q32 = quant::quantize_weights(*quant::parse_recipe("int4wo-32"), w.data(), 16, 256, Elem::bf16);
    const auto k32 = quant_layer_kernels(q32, true, rows);
    EXPECT_EQ(k32.int4, Int4Path::limbs) << rows;
    EXPECT_EQ(k32.packed.block, 32u);
    EXPECT_EQ(quant_layer_kernels(q32, false, rows).int4, Int4Path::fp32) << rows;
  }
  EXPECT_NE(int8_dynamic_kernel_name(quant_kernels()).find("vpmaddwd"), std::string::npos);
}
