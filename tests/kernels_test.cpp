// Every ISA variant of our own kernels, not only the one this CPU would pick.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/context.hpp"
#include "ops/bandwidth/bandwidth.hpp"
#include "ops/peak/peak.hpp"

using namespace opmeter;

namespace {
void expect_kernel_correct(const std::optional<peak::Kernel>& k, const char* what) {
  ASSERT_TRUE(k.has_value()) << what;
  double got = k->fn(peak::kCheckIters), want = k->expected(peak::kCheckIters);
  EXPECT_NEAR(got, want, 1e-3 * std::fabs(want)) << what << " " << k->isa;
  EXPECT_GT(k->ops_per_iter, 0);
}

void expect_bandwidth_kernels_correct(const bandwidth::Kernels& k) {
  const std::size_t n = 1037;  // not a multiple of any vector width
  // The kernels' contract: 64-byte aligned arrays (as Buffer gives).
  Buffer ba(n * sizeof(float)), bb(n * sizeof(float)), bc(n * sizeof(float));
  auto a = ba.span<float>(), b = bb.span<float>(), c = bc.span<float>();
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 7 + 1), b[i] = 2, c[i] = 3;
  k.copy(a.data(), b.data(), n, false);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], a[i]) << k.isa << " copy " << i;
  k.triad(a.data(), b.data(), c.data(), n, true);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i] + bandwidth::kScalar * c[i]) << k.isa << " triad_nt " << i;
  k.write(c.data(), 0.25f, n, false);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], 0.25f) << k.isa << " write " << i;
  EXPECT_DOUBLE_EQ(k.read(c.data(), n), 0.25 * n) << k.isa;
}
}  // namespace

TEST(PeakKernels, Avx2Variants) {
  const auto& cpu = cpu_info();
  if (!cpu.has("avx2") || !cpu.has("fma")) GTEST_SKIP() << "CPU lacks AVX2+FMA";
  expect_kernel_correct(peak::avx2_kernel(DType::fp32), "avx2 fp32");
  expect_kernel_correct(peak::avx2_kernel(DType::fp64), "avx2 fp64");
  if (cpu.has("avx_vnni")) expect_kernel_correct(peak::avx2_kernel(DType::int8), "avx_vnni int8");
  EXPECT_FALSE(peak::avx2_kernel(DType::bf16).has_value());
}

TEST(PeakKernels, Avx512Variants) {
  const auto& cpu = cpu_info();
  if (!cpu.has("avx512f")) GTEST_SKIP() << "CPU lacks AVX-512";
  expect_kernel_correct(peak::avx512_kernel(DType::fp32), "avx512 fp32");
  expect_kernel_correct(peak::avx512_kernel(DType::fp64), "avx512 fp64");
  if (cpu.has("avx512_bf16")) expect_kernel_correct(peak::avx512_kernel(DType::bf16), "avx512 bf16");
  if (cpu.has("avx512_vnni")) expect_kernel_correct(peak::avx512_kernel(DType::int8), "avx512 int8");
}

TEST(BandwidthKernels, BaselineAvx2AndAvx512) {
  expect_bandwidth_kernels_correct(bandwidth::base_kernels());
  if (cpu_info().has("avx2")) expect_bandwidth_kernels_correct(bandwidth::avx2_kernels());
  if (cpu_info().has("avx512f")) expect_bandwidth_kernels_correct(bandwidth::avx512_kernels());
  EXPECT_STREQ(bandwidth::select_kernels().isa, cpu_info().has("avx512f") ? "avx512"
                                                : cpu_info().has("avx2")  ? "avx2"
                                                                          : "sse2");
}

// Issue 11: at 2 GiB arrays the read kernel's float partial sums were no longer exact, so the
// kernel failed its own check. Odd values make a float sum inexact as soon as a lane passes 2^24.
TEST(BandwidthKernels, ReadSumIsExactBeyondFloatPrecision) {
  const std::size_t n = (std::size_t{96} << 20) + 13;  // 6M+ threes per lane of 16: past 2^24
  Buffer buf(n * sizeof(float));
  auto a = buf.span<float>();
  std::fill(a.begin(), a.end(), 3.0f);
  const double want = 3.0 * static_cast<double>(n);
  EXPECT_EQ(bandwidth::base_kernels().read(a.data(), n), want);
  if (cpu_info().has("avx2")) {
    EXPECT_EQ(bandwidth::avx2_kernels().read(a.data(), n), want);
  }
  if (cpu_info().has("avx512f")) {
    EXPECT_EQ(bandwidth::avx512_kernels().read(a.data(), n), want);
  }
}
