// The int8 decode kernel on integer tensor cores (quant_gpu_limbs.hpp), run on the CPU: x's limbs
// and scales, their place in a staged row, and a chunk's dot product as the kernel sums it (one
// step at a time, in 32 bits) against the same product in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "opmeter/dtype.hpp"
#include "ops/linear/quant_gpu_limbs.hpp"

using namespace opmeter;
namespace gl = opmeter::linear::gpu_limbs;

namespace {

// The kernel's rounding, __float2int_rn: to nearest, ties to even.
int round_even(float v) { return static_cast<int>(std::nearbyint(v)); }

// A chunk of 16-bit values as the kernel stages it: its scale's exponent from the largest
// magnitude bits, then v = rint(x 2^(140 - e)) split into limbs.
struct Staged {
  int e = 0;
  std::vector<gl::Limbs> limbs;
};
Staged stage(const std::vector<std::uint16_t>& bits, bool fp16) {
  std::uint32_t amax = 0;
  for (auto b : bits) amax = std::max<std::uint32_t>(amax, b & 0x7FFFu);
  Staged s;
  s.e = gl::scale_exponent(amax, fp16);
  for (auto b : bits)
    s.limbs.push_back(gl::split(round_even((fp16 ? from_fp16(b) : from_bf16(b)) * gl::scale_up(s.e))));
  return s;
}

}  // namespace

TEST(QuantGpuLimbs, ScalesArePowersOfTwoThatKeepTheLargestUnder2To14) {
  EXPECT_EQ(gl::scale_up(140), 1.f);
  EXPECT_EQ(gl::scale_down(140), 1.f);
  EXPECT_EQ(gl::scale_up(127), 8192.f);  // e of 1.0: 2^13
  EXPECT_EQ(gl::scale_down(127), 1.f / 8192.f);
  for (int e = 14; e <= 254; ++e) ASSERT_EQ(gl::scale_up(e) * gl::scale_down(e), 1.f) << e;
  // bf16 1.5 (0x3FC0) and fp16 1.5 (0x3E00) take the same exponent; zeros and tiny values clamp.
  EXPECT_EQ(gl::scale_exponent(0x3FC0u, false), 127);
  EXPECT_EQ(gl::scale_exponent(0x3E00u, true), 127);
  EXPECT_EQ(gl::scale_exponent(0u, false), 14);
  EXPECT_EQ(gl::scale_exponent(0x0001u, true), 112);  // an fp16 subnormal: fp16's exponent field 0
  // Every finite bf16 and fp16 magnitude, as the largest of its chunk: scaled under 2^14.
  for (std::uint32_t b = 0; b < 0x7F80u; ++b)
    ASSERT_LE(std::fabs(from_bf16(static_cast<std::uint16_t>(b)) * gl::scale_up(gl::scale_exponent(b, false))), 16384.f)
        << b;
  for (std::uint32_t b = 0; b < 0x7C00u; ++b)
    ASSERT_LE(std::fabs(from_fp16(static_cast<std::uint16_t>(b)) * gl::scale_up(gl::scale_exponent(b, true))), 16384.f)
        << b;
}

// A chunk whose largest is inf or NaN is told apart from every finite one, in both types (its scale
// becomes NaN, its limbs 0, so that the output is not a number).
TEST(QuantGpuLimbs, InfAndNanChunksAreToldApartFromFiniteOnes) {
  for (std::uint32_t b = 0; b <= 0x7FFFu; ++b) {
    ASSERT_EQ(gl::not_finite(b, false), !std::isfinite(from_bf16(static_cast<std::uint16_t>(b)))) << b;
    ASSERT_EQ(gl::not_finite(b, true), !std::isfinite(from_fp16(static_cast<std::uint16_t>(b)))) << b;
  }
}

TEST(QuantGpuLimbs, LimbsAreInt8AndAddBackUp) {
  for (int v = -16384; v <= 16384; ++v) {
    const gl::Limbs l = gl::split(v);
    ASSERT_GE(l.hi, -64) << v;
    ASSERT_LE(l.hi, 64) << v;
    ASSERT_GE(l.lo, -128) << v;
    ASSERT_LE(l.lo, 127) << v;
    ASSERT_EQ(256 * l.hi + l.lo, v);
  }
}

// Values within 2^6 of their chunk's largest are exact in bf16 (8 significant bits), within 2^3
// in fp16 (11); smaller ones are off by at most half a unit, 2^-15 of the largest's power of two.
TEST(QuantGpuLimbs, LimbsHoldXExactlyNearTheLargestAndWithinHalfAUnitBelow) {
  for (bool fp16 : {false, true}) {
    std::vector<std::uint16_t> bits;
    const float largest = 3.f;
    bits.push_back(fp16 ? to_fp16(largest) : to_bf16(largest));
    for (float v = -largest; v <= largest; v += 0.0371f) bits.push_back(fp16 ? to_fp16(v) : to_bf16(v));
    for (float v : {1e-3f, -2e-5f, 0.f, 3e-8f}) bits.push_back(fp16 ? to_fp16(v) : to_bf16(v));
    const Staged s = stage(bits, fp16);
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const double x = fp16 ? from_fp16(bits[i]) : from_bf16(bits[i]);
      const double back = double(256 * s.limbs[i].hi + s.limbs[i].lo) * gl::scale_down(s.e);
      if (std::fabs(x) >= largest / (fp16 ? 8 : 64)) {
        ASSERT_EQ(back, x) << (fp16 ? "fp16 " : "bf16 ") << x;
      } else {
        ASSERT_LE(std::fabs(back - x), 0.5 * gl::scale_down(s.e)) << (fp16 ? "fp16 " : "bf16 ") << x;
      }
    }
  }
}

// Lane (g, t)'s 16-byte load at 16 t of a staged step is its m16n8k32 B fragments (PTX: b0 = k
// 4t .. 4t + 3, b1 = k 16 + 4t .. 16 + 4t + 3, column g) of the hi limbs, then of the lo limbs.
TEST(QuantGpuLimbs, EachLaneLoadsItsBFragmentsOfBothLimbsAtOnce) {
  std::vector<int> owner(gl::kStepBytes, -1);
  for (int k = 0; k < gl::kStepK; ++k)
    for (bool lo : {false, true}) {
      const int at = gl::staged_byte(k, lo);
      ASSERT_GE(at, 0);
      ASSERT_LT(at, gl::kStepBytes);
      ASSERT_EQ(owner[at], -1) << "k " << k;
      owner[at] = 2 * k + lo;
    }
  for (int t = 0; t < 4; ++t)
    for (int byte = 0; byte < 16; ++byte) {
      const int reg = byte / 4, i = byte % 4;  // hi b0, hi b1, lo b0, lo b1
      const int k = 4 * t + i + (reg % 2 ? 16 : 0);
      EXPECT_EQ(owner[16 * t + byte], 2 * k + (reg >= 2)) << "t " << t << " byte " << byte;
    }
  // Rows 64 bytes apart modulo 128: a quarter warp's 16-byte loads (rows g, g + 1) miss each other's banks.
  EXPECT_EQ(gl::kRowBytes % 128, 64);
  EXPECT_GE(gl::kRowBytes, 16 * gl::kStepBytes);
}

// A chunk's dot product with int8 codes the way the kernel takes it: per step of 32 k the two
// limbs' integer sums (s32, checked against 64 bits), 256 hi + lo at the chunk's end, times the
// scale; against the same x (16-bit values) times the codes in double.
TEST(QuantGpuLimbs, AChunksDotProductFits32BitsAndMatchesDouble) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (bool fp16 : {false, true})
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<std::uint16_t> bits(512);
      std::vector<int> codes(512);
      for (int k = 0; k < 512; ++k) {
        float v = normal(gen) * (trial % 4 == 0 ? 1e-3f : trial % 4 == 1 ? 300.f : 1.f);
        // Every value the largest its exponent holds (3.96875 in bf16 and fp16), each code of its
        // sign at the end of the range: the sums' bound.
        if (trial == 5) v = k % 2 ? 3.96875f : -3.96875f;
        bits[k] = fp16 ? to_fp16(v) : to_bf16(v);
        codes[k] = trial == 5 ? (k % 2 ? 127 : -128) : static_cast<int>(gen() % 256) - 128;
      }
      const Staged s = stage(bits, fp16);
      std::int64_t hi = 0, lo = 0;
      double want = 0, largest = 0;
      for (int k = 0; k < 512; ++k) {
        hi += std::int64_t{s.limbs[k].hi} * codes[k];
        lo += std::int64_t{s.limbs[k].lo} * codes[k];
        const double x = fp16 ? from_fp16(bits[k]) : from_bf16(bits[k]);
        want += x * codes[k];
        largest = std::max(largest, std::fabs(x));
      }
      const std::int64_t sum = 256 * hi + lo;
      ASSERT_LT(std::llabs(sum), std::int64_t{1} << 31) << "trial " << trial;
      const double got = double(static_cast<float>(static_cast<std::int32_t>(sum))) * gl::scale_down(s.e);
      // Rounding: half a unit of x per value (2^-15 of the largest's power of two) times |code|,
      // and the float of the sum.
      const double bound = 512 * 128 * 0.5 * gl::scale_down(s.e) + std::fabs(want) * 0x1p-23 + 1e-30;
      EXPECT_NEAR(got, want, bound) << (fp16 ? "fp16" : "bf16") << " trial " << trial << " largest " << largest;
    }
}
