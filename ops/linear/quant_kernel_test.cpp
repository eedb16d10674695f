// The int4 kernels against the plain C++ kernel (quant_kernel_base.cpp) on the same packed weights:
// the block layout (64 where the group allows, else 32), the AVX-512 fp32 path and the bf16 path
// (codes as bf16 3 + q / 64, the offset and zero points taken back per group) agree for every row
// count of a pass, channel counts that leave a remainder, and codes at both ends (0 and 15). Where
// the CPU has AMX, the tile layout and its kernel (quant_kernel_amx.cpp) the same way, with zero
// points at both ends, passes of more than 16 rows and channel ranges that cut a block of 16.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "opmeter/dtype.hpp"
#include "ops/linear/quant_kernel.hpp"
#include "ops/linear/quant_kernel_test_util.hpp"

using namespace opmeter;
using namespace opmeter::linear;

namespace {

struct Int4Layer {
  std::size_t out, hidden, group;
  quant::QuantizedWeights q;
  PackedWeights packed;
  std::vector<float> x, xsum;  // x: bf16 values held in fp32, rows x hidden
  std::vector<std::uint16_t> xb;

  Int4Layer(std::size_t rows, std::size_t out_, std::size_t hidden_, std::size_t group_, std::uint32_t seed,
            bool tiles = false, Elem scales = Elem::bf16)
      : out(out_), hidden(hidden_), group(group_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> w(out * hidden);
    for (auto& v : w) v = normal(rng);
    for (std::size_t k = 0; k < hidden; ++k) w[k] = k % 2 ? 3.f : -3.f;  // channel 0: codes 0 and 15 only
    // Channels 1 and 2 from 0 up and from 0 down: zero points 0 and 15.
    for (std::size_t k = 0; k < hidden && out > 2; ++k) {
      w[hidden + k] = k % group == 0 ? 0.f : std::fabs(w[hidden + k]);
      w[2 * hidden + k] = k % group == 0 ? 0.f : -std::fabs(w[2 * hidden + k]);
    }
    q = quant::quantize_weights(*quant::parse_recipe("int4wo-" + std::to_string(group)), w.data(), out, hidden, scales);
    packed = pack_weights(q, false, tiles);
    x.resize(rows * hidden);
    xb.resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      xb[i] = to_bf16(normal(rng) + 0.5f);  // a mean, as LayerNorm's beta gives: sum(x) is not small
      x[i] = from_bf16(xb[i]);
    }
    const std::size_t groups = hidden / group;
    xsum.assign(rows * groups, 0.f);
    for (std::size_t m = 0; m < rows; ++m)
      for (std::size_t k = 0; k < hidden; ++k) xsum[m * groups + k / group] += x[m * hidden + k];
  }

  // Largest |c - exact| / sum_k |x_k w_jk| over the outputs, exact from the recipe's weights in fp64.
  double error(const std::vector<float>& c, std::size_t rows) const { return kernel_tests::relative_error(q, x, c, rows); }
};

// The limbs kernels this CPU runs: the best set's, and the AVX2 set's where that is another.
std::vector<QuantKernels> limb_kernel_sets() {
  std::vector<QuantKernels> sets;
  if (quant_kernels().int4_limbs) sets.push_back(quant_kernels());
  if (avx2_quant_usable() && std::string(quant_kernels().isa) != "avx2") sets.push_back(avx2_quant_kernels());
  return sets;
}

}  // namespace

TEST(QuantKernel, Int4LayoutIsBlocksOf64WhereTheGroupAllows) {
  for (std::size_t group : {32, 64, 128}) {
    Int4Layer l(1, 3, 256, group, 1);
    EXPECT_EQ(l.packed.block, group == 32 ? 32u : 64u);
    for (std::size_t j = 0; j < l.out; ++j)
      for (std::size_t k = 0; k < l.hidden; ++k) {
        const std::size_t i = j * l.hidden + k;
        ASSERT_EQ(l.packed.int4_code(j, k), (l.q.codes[i / 2] >> (4 * (i % 2))) & 15u) << group << " " << j << " " << k;
      }
  }
}

TEST(QuantKernel, Int4KernelsAgreeWithTheRecipeOnEveryPassShape) {
  const auto& best = quant_kernels();
  const auto base = base_quant_kernels();
  for (std::size_t group : {32, 64, 128})
    for (std::size_t rows : {1, 2, 5, 8, 11}) {
      Int4Layer l(rows, 19, 384, group, 7 + static_cast<std::uint32_t>(rows));
      std::vector<float> c(rows * l.out, NAN);
      base.weight_only(l.packed, l.x.data(), l.xsum.data(), rows, 0, l.out, c.data(), l.out);
      EXPECT_LT(l.error(c, rows), 1e-6) << "base, group " << group << ", rows " << rows;
      std::fill(c.begin(), c.end(), NAN);
      best.weight_only(l.packed, l.x.data(), l.xsum.data(), rows, 0, l.out, c.data(), l.out);
      EXPECT_LT(l.error(c, rows), 1e-6) << best.isa << " fp32, group " << group << ", rows " << rows;
      if (!best.int4_bf16) continue;  // no AVX512_BF16 + GFNI here
      std::fill(c.begin(), c.end(), NAN);
      // Channels 3 .. 18 only (a block not at 0, 16 of them: two passes of 8), then 0 .. 2.
      best.int4_bf16(l.packed, l.xb.data(), l.xsum.data(), rows, 3, l.out, c.data(), l.out);
      best.int4_bf16(l.packed, l.xb.data(), l.xsum.data(), rows, 0, 3, c.data(), l.out);
      // fp32 sums of products exact in fp32; the offset 3 x (64 s) taken back costs a few ulps more.
      EXPECT_LT(l.error(c, rows), 1e-5) << best.isa << " bf16, group " << group << ", rows " << rows;
    }
}

// The tile layout (for the AMX and limbs kernels; hidden a multiple of 64), on every CPU: every
// code, scale and zero where the accessors say, channels padded to a block of 16. Where hidden is
// not whole steps of 64 (groups of 32), the block layout instead.
TEST(QuantKernel, Int4TileLayoutHoldsEveryCodeAndGroupParameter) {
  EXPECT_FALSE(Int4Layer(1, 19, 352, 32, 3, true).packed.tiles);
  for (std::size_t group : {32, 64, 128}) {
    Int4Layer l(1, 19, 384, group, 3, true);
    ASSERT_TRUE(l.packed.tiles) << group;
    EXPECT_EQ(l.packed.block, 64u) << group;
    EXPECT_EQ(l.packed.codes.size(), 32 * l.hidden / 2);
    for (std::size_t j = 0; j < l.out; ++j) {
      for (std::size_t k = 0; k < l.hidden; ++k) {
        const std::size_t i = j * l.hidden + k;
        ASSERT_EQ(l.packed.int4_code(j, k), (l.q.codes[i / 2] >> (4 * (i % 2))) & 15u) << group << " " << j << " " << k;
      }
      for (std::size_t g = 0; g < l.hidden / group; ++g) {
        ASSERT_EQ(l.packed.group_scale(j, g), l.q.scales[j * (l.hidden / group) + g]);
        ASSERT_EQ(l.packed.group_zero(j, g), l.q.zeros[j * (l.hidden / group) + g]);
      }
    }
  }
}

TEST(QuantKernel, Int4TileKernelAgreesWithTheRecipe) {
  const auto& best = quant_kernels();
  if (!best.int4_tiles) GTEST_SKIP() << "no AMX-BF16 here: int4_bf16 runs the vector kernel (tested above)";
  // (hidden, group): an odd number of groups, and groups of two steps of 64.
  for (auto [hidden, group] : {std::pair<std::size_t, std::size_t>{320, 64}, {384, 128}})
    for (std::size_t rows : {1, 2, 5, 16, 19}) {
      Int4Layer l(rows, 19, hidden, group, 11 + static_cast<std::uint32_t>(rows), true);
      ASSERT_TRUE(l.packed.tiles);
      ASSERT_EQ(l.q.zeros[1 * (hidden / group)], 0.f);   // channel 1's first group: zero point 0
      ASSERT_EQ(l.q.zeros[2 * (hidden / group)], 15.f);  // channel 2's: 15
      std::vector<float> c(rows * l.out, NAN);
      // Channels 3 .. 18 (cutting the first block of 16 and the padded second), then 0 .. 2.
      best.int4_bf16(l.packed, l.xb.data(), l.xsum.data(), rows, 3, l.out, c.data(), l.out);
      best.int4_bf16(l.packed, l.xb.data(), l.xsum.data(), rows, 0, 3, c.data(), l.out);
      EXPECT_LT(l.error(c, rows), 1e-5) << "AMX, group " << group << ", rows " << rows;
      // fp32 activations on tiles (not a pairing opmeter makes) go through the plain C++ kernel.
      std::fill(c.begin(), c.end(), NAN);
      best.weight_only(l.packed, l.x.data(), l.xsum.data(), rows, 0, l.out, c.data(), l.out);
      EXPECT_LT(l.error(c, rows), 1e-6) << "fp32 on tiles, group " << group << ", rows " << rows;
    }
}

// x as int8 limbs (split_limbs): every element within scale / 508 of its value, the limbs in
// int8's symmetric range, scale = max|x| / 127 per group, the limbs' group sums; split as words
// (the AVX2 int4 kernel's x), the words 254 hi + lo of the same limbs, with the same scales and
// sums; a group of zeros stays zero.
TEST(QuantKernel, LimbsHoldEveryValueAndTheirSumsWithinTheirBound) {
  const auto sets = limb_kernel_sets();
  if (sets.empty()) GTEST_SKIP() << "no limbs kernel here (it needs AVX-512 VNNI, VBMI and GFNI, or AVX2)";
  for (const auto& kernels : sets) {
    SCOPED_TRACE(kernels.isa);
    const std::size_t hidden = 512, group = 64, groups = hidden / group;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<std::uint16_t> xb(2 * hidden);
    for (auto& v : xb) v = to_bf16(normal(rng));
    for (std::size_t k = 64; k < 128; ++k) xb[k] = to_bf16(0.f);                    // row 0, group 1: zeros
    xb[hidden + 200] = to_bf16(-300.f);                                             // row 1, group 3: an outlier
    for (std::size_t k = 128; k < 192; ++k) xb[k] = to_bf16(k % 2 ? 2.5f : -2.5f);  // only +-max
    XLimbs limbs, words;
    limbs.resize(2, hidden, group, XLimbs::Form::limbs);
    for (std::size_t row = 0; row < 2; ++row) kernels.split(xb.data(), row, hidden, group, limbs);
    if (kernels.int4_limbs_words) {
      words.resize(2, hidden, group, XLimbs::Form::words);
      for (std::size_t row = 0; row < 2; ++row) kernels.split(xb.data(), row, hidden, group, words);
      EXPECT_EQ(words.scale, limbs.scale);
      EXPECT_EQ(words.hi_sum, limbs.hi_sum);
      EXPECT_EQ(words.lo_sum, limbs.lo_sum);
    }
    for (std::size_t row = 0; row < 2; ++row)
      for (std::size_t g = 0; g < groups; ++g) {
        double largest = 0;
        for (std::size_t k = g * group; k < (g + 1) * group; ++k)
          largest = std::max(largest, std::fabs(double(from_bf16(xb[row * hidden + k]))));
        const double a = limbs.scale[row * groups + g];
        EXPECT_NEAR(a, largest / 127, 1e-6 * largest) << row << " " << g;
        long hi_sum = 0, lo_sum = 0;
        for (std::size_t k = g * group; k < (g + 1) * group; ++k)
          hi_sum += limbs.hi[row * hidden + k], lo_sum += limbs.lo[row * hidden + k];
        EXPECT_EQ(limbs.hi_sum[row * groups + g], hi_sum) << row << " " << g;
        EXPECT_EQ(limbs.lo_sum[row * groups + g], lo_sum) << row << " " << g;
        for (std::size_t k = g * group; k < (g + 1) * group; ++k) {
          const std::size_t i = row * hidden + k;
          ASSERT_GE(limbs.hi[i], -127);
          ASSERT_GE(limbs.lo[i], -127);
          const double back = a * (limbs.hi[i] + limbs.lo[i] / 254.0);
          ASSERT_LE(std::fabs(back - from_bf16(xb[i])), a / 508 * (1 + 1e-5) + 1e-30) << row << " " << k;
          if (kernels.int4_limbs_words) {  // its int4 kernel reads the limbs as one word
            ASSERT_EQ(words.word[i], 254 * limbs.hi[i] + limbs.lo[i]) << row << " " << k;
          }
        }
      }
    EXPECT_EQ(limbs.scale[1], 0.f);  // the zeros' group
    EXPECT_EQ(limbs.hi[64], 0);
    EXPECT_EQ(limbs.lo[64], 0);
  }
}

// x holds only the form its layer's kernel reads: the limbs (hi and lo), int8dq's codes (hi
// alone) or the AVX2 int4 kernel's words, each rows x hidden; the others take no memory. The
// AVX2 kernels read words for int4 and limbs for int8, the VNNI ones limbs for both.
TEST(QuantKernel, XHoldsOnlyTheFormItsKernelReads) {
  const std::size_t rows = 3, hidden = 128, group = 64;
  struct Want {
    XLimbs::Form form;
    std::size_t hi, lo, word;
  };
  const std::size_t n = rows * hidden;
  const Want wants[] = {
      {XLimbs::Form::limbs, n, n, 0}, {XLimbs::Form::one_limb, n, 0, 0}, {XLimbs::Form::words, 0, 0, n}};
  XLimbs x;  // one x through every form: each resize leaves the others empty
  for (const auto& w : wants) {
    x.resize(rows, hidden, group, w.form);
    EXPECT_EQ(x.hi.size(), w.hi) << int(w.form);
    EXPECT_EQ(x.lo.size(), w.lo) << int(w.form);
    EXPECT_EQ(x.word.size(), w.word) << int(w.form);
    EXPECT_EQ(x.scale.size(), rows * hidden / group) << int(w.form);
    EXPECT_EQ(x.one_limb(), w.form == XLimbs::Form::one_limb);
  }
  QuantKernels vnni{"avx512", nullptr, nullptr, nullptr, false, vnni_int4};
  EXPECT_EQ(limb_form(vnni, true), XLimbs::Form::limbs);
  EXPECT_EQ(limb_form(vnni, false), XLimbs::Form::limbs);
  if (!avx2_quant_usable()) return;  // its file is compiled for AVX2
  const QuantKernels avx2 = avx2_quant_kernels();
  EXPECT_TRUE(avx2.int4_limbs_words);
  EXPECT_EQ(limb_form(avx2, true), XLimbs::Form::words);
  EXPECT_EQ(limb_form(avx2, false), XLimbs::Form::limbs);
}

// The limbs kernels against the recipe in fp64 on their layouts (VNNI: tiles, passes of 3 rows;
// AVX2: blocks of 64, passes of 4): rows 1 .. 4, 6 and 9, groups of one and of two steps, zero
// points at both ends, channel ranges that cut a block. The kernel takes the zero point's term from the exact sum of x,
// so the limbs' error (scale / 508 per element) meets the codes q, not q - z. Two figures: against x itself, within
// that bound (sum_k s_g q_jk max_g|x| / (127 * 508)) plus the fp32 sums' few ulps; and against
// sum_g s_g (sum_k a_g (hi_k + lo_k / 254) q_jk - z_g sum_g(x)) in fp64, within those ulps (the
// integer sums are exact), which a wrong weight of either limb fails.
TEST(QuantKernel, Int4LimbsKernelAgreesWithTheRecipeWithinTheLimbsBound) {
  const auto sets = limb_kernel_sets();
  if (sets.empty()) GTEST_SKIP() << "no limbs kernel here (it needs AVX-512 VNNI, VBMI and GFNI, or AVX2)";
  // (hidden, group, scales): groups of one and two steps; 10 groups (the AVX2 kernel takes group
  // parameters 8 at a time, then the rest), with scales and zeros in bf16 and in fp32.
  struct Shape {
    std::size_t hidden, group;
    Elem scales;
  };
  const Shape shapes[] = {{320, 64, Elem::bf16},
                          {384, 128, Elem::bf16},
                          {640, 64, Elem::bf16},
                          {640, 64, Elem::f32},
                          // groups of 32 (the AVX2 kernel's blocks of 32; pairs of groups in a tile
                          // step): 10 groups, and 11 (an odd last one, blocks only)
                          {320, 32, Elem::bf16},
                          {352, 32, Elem::f32},
                          {384, 32, Elem::f32}};
  for (const auto& best : sets)
    for (const auto& [hidden, group, scales] : shapes)
      for (std::size_t rows : {1, 2, 3, 4, 6, 9}) {
        if (hidden % 64 != 0 && best.int4_limbs_in_tiles) continue;  // tiles are steps of 64
        SCOPED_TRACE(best.isa);
        // In tiles for the VNNI kernel, in blocks (of 64, or 32 for groups of 32) for the AVX2 one.
        Int4Layer l(rows, 19, hidden, group, 21 + static_cast<std::uint32_t>(rows), best.int4_limbs_in_tiles, scales);
        ASSERT_EQ(l.packed.tiles, best.int4_limbs_in_tiles);
        ASSERT_EQ(l.packed.bf16_group_params, scales == Elem::bf16);
        // x in the kernel's form; the limbs beside it for the check (the words are made from them).
        XLimbs x, limbs;
        x.resize(rows, hidden, group, limb_form(best, true));
        limbs.resize(rows, hidden, group, XLimbs::Form::limbs);
        for (std::size_t m = 0; m < rows; ++m) {
          best.split(l.xb.data(), m, hidden, group, x);
          best.split(l.xb.data(), m, hidden, group, limbs);
        }
        std::vector<float> c(rows * l.out, NAN);
        best.int4_limbs(l.packed, x, l.xsum.data(), rows, 3, l.out, c.data(), l.out);
        best.int4_limbs(l.packed, x, l.xsum.data(), rows, 0, 3, c.data(), l.out);
        for (std::size_t m = 0; m < rows; ++m)
          for (std::size_t j = 0; j < l.out; ++j) {
            double exact = 0, of_limbs = 0, mag = 0, bound = 0;
            for (std::size_t g = 0; g < hidden / group; ++g) {
              double largest = 0;
              for (std::size_t k = g * group; k < (g + 1) * group; ++k)
                largest = std::max(largest, std::fabs(double(l.x[m * hidden + k])));
              const std::size_t at = j * (hidden / group) + g;
              const double a = limbs.scale[m * (hidden / group) + g], s = l.q.scales[at], z = l.q.zeros[at];
              for (std::size_t k = g * group; k < (g + 1) * group; ++k) {
                const std::size_t i = m * hidden + k, wi = j * hidden + k;
                const double q = (l.q.codes[wi / 2] >> (4 * (wi % 2))) & 15u;
                const double w = l.q.weight(j, k), p = double(l.x[i]) * w;
                exact += p;
                of_limbs += s * (a * (limbs.hi[i] + limbs.lo[i] / 254.0) * q - z * l.x[i]);
                mag += std::fabs(p);
                bound += s * q * largest / (127 * 508);
              }
            }
            const double got = c[m * l.out + j];
            ASSERT_LE(std::fabs(got - exact), bound + 1e-5 * mag)
                << "group " << group << ", rows " << rows << ", row " << m << ", channel " << j;
            ASSERT_LE(std::fabs(got - of_limbs), 1e-5 * mag)
                << "against the limbs: group " << group << ", rows " << rows << ", row " << m << ", channel " << j;
          }
      }
}

// int8dq on the same kernels (VNNI and AVX2): per-token int8 activation codes as x's one limb
// (limbs_from_int8), every product exact in int32, against sum_k s_x x_k s_j q_jk in fp64 for 1, 2, 3 and 5 rows,
// codes at both ends (-127, 127) included.
TEST(QuantKernel, Int8KernelOnActivationCodesIsExact) {
  const auto sets = limb_kernel_sets();
  if (sets.empty()) GTEST_SKIP() << "no limbs kernel here (it needs AVX-512 VNNI, VBMI and GFNI, or AVX2)";
  for (const auto& best : sets) {
    SCOPED_TRACE(best.isa);
    const std::size_t out = 21, hidden = 192;
    std::mt19937 rng(23);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> w(out * hidden);
    for (auto& v : w) v = normal(rng);
    const auto q = quant::quantize_weights(*quant::parse_recipe("int8dq"), w.data(), out, hidden, Elem::bf16);
    const PackedWeights p = pack_int8_quads(q);
    for (std::size_t rows : {1, 2, 3, 5}) {
      std::vector<std::uint8_t> codes(rows * hidden);
      std::vector<float> xscale(rows);
      for (std::size_t i = 0; i < codes.size(); ++i)
        codes[i] = static_cast<std::uint8_t>(
            static_cast<std::int8_t>(i % 7 == 0 ? (i % 2 ? 127 : -127) : int(rng() % 255) - 127));
      XLimbs x;
      x.resize(rows, hidden, kInt8LimbGroup, XLimbs::Form::one_limb);  // the codes
      for (std::size_t m = 0; m < rows; ++m) {
        xscale[m] = 0.01f * float(m + 1);
        limbs_from_int8(codes.data() + m * hidden, xscale[m], m, hidden, x);
      }
      std::vector<float> c(rows * out, NAN);
      best.int8_limbs(p, x, rows, 0, out, c.data(), out);
      for (std::size_t m = 0; m < rows; ++m)
        for (std::size_t j = 0; j < out; ++j) {
          double exact = 0, mag = 0;
          for (std::size_t k = 0; k < hidden; ++k) {
            const double t = double(xscale[m]) * static_cast<std::int8_t>(codes[m * hidden + k]) * q.weight(j, k);
            exact += t;
            mag += std::fabs(t);
          }
          ASSERT_LE(std::fabs(c[m * out + j] - exact), 1e-6 * mag)
              << "rows " << rows << ", row " << m << ", channel " << j;
        }
    }
  }
}

// Which kernel an int4 layer runs, for each set of kernels a CPU may offer: the limbs kernel for
// bf16 activations (up to kInt4LimbRows rows where AMX takes more: groups of 64 and up), else the
// bf16 vector kernel, else fp32; tiles exactly for the limbs and AMX kernels.
TEST(QuantKernel, Int4PathFollowsTheKernelsRowsAndGroup) {
  QuantKernels none{"base", nullptr, nullptr, nullptr, false, nullptr};
  QuantKernels vector = none, limbs_only = none, limbs_vector = none, amx_limbs = none;
  vector.int4_bf16 = limbs_vector.int4_bf16 = amx_limbs.int4_bf16 = avx512bf16_int4;
  limbs_only.int4_limbs = limbs_vector.int4_limbs = amx_limbs.int4_limbs = vnni_int4;
  amx_limbs.int4_tiles = true;
  using P = Int4Path;
  const std::size_t many = kInt4LimbRows + 1;
  struct Want {
    const QuantKernels* k;
    bool bf16;
    std::size_t group, rows, hidden;
    P path;
  };
  const Want wants[] = {
      {&amx_limbs, true, 64, 1, 4096, P::limbs},
      {&amx_limbs, true, 128, kInt4LimbRows, 4096, P::limbs},
      {&amx_limbs, true, 64, many, 4096, P::amx},
      {&amx_limbs, false, 64, 1, 4096, P::fp32},
      // Groups of 32: the limbs kernel at every row count (AMX takes groups of 64 and up), on
      // tiles only where hidden is whole steps of 64.
      {&amx_limbs, true, 32, 1, 4096, P::limbs},
      {&amx_limbs, true, 32, many, 4096, P::limbs},
      {&amx_limbs, true, 32, 1, 4128, P::vector_bf16},
      {&limbs_vector, true, 64, 1, 4096, P::limbs},
      {&limbs_vector, true, 64, many, 4096, P::limbs},
      {&limbs_only, true, 64, 2, 4096, P::limbs},
      {&limbs_only, true, 64, many, 4096, P::limbs},
      {&limbs_only, true, 32, 1, 4096, P::limbs},
      {&limbs_only, true, 32, 1, 4128, P::fp32},
      {&limbs_vector, true, 32, many, 4096, P::limbs},
      {&limbs_vector, true, 32, many, 4128, P::vector_bf16},
      {&vector, true, 64, 1, 4096, P::vector_bf16},
      {&none, true, 64, 1, 4096, P::fp32},
  };
  for (const auto& w : wants) {
    const P got = int4_path(*w.k, w.bf16, w.group, w.rows, w.hidden);
    EXPECT_EQ(got, w.path) << "bf16 " << w.bf16 << ", group " << w.group << ", rows " << w.rows << ", hidden "
                           << w.hidden;
    EXPECT_EQ(in_tiles(*w.k, got), got == P::limbs || got == P::amx);
  }
  // The AVX2 limbs kernel reads blocks: the same paths, the limbs path not in tiles.
  QuantKernels limbs_blocks = limbs_only;
  limbs_blocks.int4_limbs_in_tiles = false;
  EXPECT_EQ(int4_path(limbs_blocks, true, 64, many, 4096), P::limbs);
  EXPECT_FALSE(in_tiles(limbs_blocks, P::limbs));
  EXPECT_EQ(int4_path(limbs_blocks, true, 32, 1, 4128), P::limbs);  // blocks of 32, any hidden
  EXPECT_EQ(int4_path(limbs_blocks, false, 32, 1, 4096), P::fp32);
}

// int8 weight-only in quads with x as limbs (the decode kernel for int8wo): the layout holds every
// code plus 128 where quant_kernel.hpp says, channels padded to 16 with scale 0; the kernel
// matches sum_k a_g (hi_k + lo_k / 254) w_jk in fp64 within fp32's ulps (the integer sums are
// exact), and x W^T within the limbs' bound (sum_k |w_jk| max_g|x| / (127 * 508)), for 1 .. 3
// rows and 5 (passes of 3 on VNNI, 2 on AVX2), channel ranges that cut a block; each kernel here.
TEST(QuantKernel, Int8LimbsKernelAgreesWithTheRecipeWithinTheLimbsBound) {
  const std::size_t out = 19, hidden = 320, groups = hidden / kInt8LimbGroup;
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> w(out * hidden);
  for (auto& v : w) v = normal(rng);
  for (std::size_t k = 0; k < hidden; ++k) w[k] = k % 2 ? 2.f : -2.f;  // channel 0: codes -127 and 127
  const auto q = quant::quantize_weights(*quant::parse_recipe("int8wo"), w.data(), out, hidden, Elem::bf16);
  const PackedWeights p = pack_int8_quads(q);
  ASSERT_EQ(p.codes.size(), 32 * hidden);
  for (std::size_t j = 0; j < 32; ++j)
    for (std::size_t k = 0; k < hidden; ++k)
      ASSERT_EQ(p.codes[(j / 16 * hidden / 4 + k / 4) * 64 + 4 * (j % 16) + k % 4],
                j < out ? std::uint8_t(static_cast<std::int8_t>(q.codes[j * hidden + k]) + 128) : 128)
          << j << " " << k;
  EXPECT_EQ(p.scales[out], 0.f);
  const auto sets = limb_kernel_sets();
  if (sets.empty()) GTEST_SKIP() << "no limbs kernel here (it needs AVX-512 VNNI, VBMI and GFNI, or AVX2)";
  for (const auto& best : sets)
    for (std::size_t rows : {1, 2, 3, 5}) {
      SCOPED_TRACE(best.isa);
      std::vector<std::uint16_t> xb(rows * hidden);
      for (auto& v : xb) v = to_bf16(normal(rng) + 0.5f);
      XLimbs limbs;
      limbs.resize(rows, hidden, kInt8LimbGroup, limb_form(best, false));
      for (std::size_t m = 0; m < rows; ++m) best.split(xb.data(), m, hidden, kInt8LimbGroup, limbs);
      std::vector<float> c(rows * out, NAN);
      best.int8_limbs(p, limbs, rows, 3, out, c.data(), out);
      best.int8_limbs(p, limbs, rows, 0, 3, c.data(), out);
      for (std::size_t m = 0; m < rows; ++m)
        for (std::size_t j = 0; j < out; ++j) {
          double exact = 0, of_limbs = 0, mag = 0, bound = 0;
          for (std::size_t g = 0; g < groups; ++g) {
            double largest = 0;
            for (std::size_t k = g * 64; k < g * 64 + 64; ++k)
              largest = std::max(largest, std::fabs(double(from_bf16(xb[m * hidden + k]))));
            const double a = limbs.scale[m * groups + g];
            for (std::size_t k = g * 64; k < g * 64 + 64; ++k) {
              const std::size_t i = m * hidden + k;
              const double wk = q.weight(j, k), x = from_bf16(xb[i]);
              exact += x * wk;
              of_limbs += a * (limbs.hi[i] + limbs.lo[i] / 254.0) * wk;
              mag += std::fabs(x * wk);
              bound += std::fabs(wk) * largest / (127 * 508);
            }
          }
          const double got = c[m * out + j];
          ASSERT_LE(std::fabs(got - of_limbs), 1e-5 * mag)
              << "against the limbs: rows " << rows << ", row " << m << ", channel " << j;
          ASSERT_LE(std::fabs(got - exact), bound + 1e-5 * mag)
              << "rows " << rows << ", row " << m << ", channel " << j;
        }
    }
}

// group_sums against sums in double, for groups that are whole multiples of its 16 lanes and
// groups that leave a tail, from fp32 and from bf16 bits.
TEST(QuantGroupSums, EachGroupsSumOfFp32AndBf16Values) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-4.f, 4.f);
  for (std::size_t group : {8u, 32u, 40u, 64u, 128u}) {
    const std::size_t hidden = 6 * group, groups = 6;
    std::vector<float> x(hidden);
    std::vector<std::uint16_t> xb(hidden);
    for (std::size_t k = 0; k < hidden; ++k) {
      xb[k] = to_bf16(uniform(rng));
      x[k] = from_bf16(xb[k]) + (k % 3 == 0 ? 1e-3f : 0.f);  // not bf16 values: the fp32 form sums these
    }
    std::vector<float> from_fp32(groups, -1.f), from_bf16_bits(groups, -1.f);
    group_sums(x.data(), hidden, group, from_fp32.data());
    group_sums(xb.data(), hidden, group, from_bf16_bits.data());
    for (std::size_t g = 0; g < groups; ++g) {
      double want = 0, want_bf16 = 0;
      for (std::size_t k = g * group; k < (g + 1) * group; ++k) {
        want += x[k];
        want_bf16 += from_bf16(xb[k]);
      }
      EXPECT_NEAR(from_fp32[g], want, 1e-5 * double(group)) << "group " << group << ", g " << g;
      EXPECT_NEAR(from_bf16_bits[g], want_bf16, 1e-5 * double(group)) << "group " << group << ", g " << g;
    }
  }
}
