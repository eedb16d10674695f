// The AMX bf16 GEMM against an fp64 product of the same bf16 inputs, on shapes that reach every
// edge of its blocking: more than one chunk of k (256), more than one task's rows (512) and
// columns (256), a last chunk or task of 32, and row strides wider than the rows (sub-matrices),
// on 1, 2 and 5 threads (the tasks shrink until each thread has one). Bound per element: bf16
// rounding of the result (2^-8 relative) plus fp32 accumulation (k 2^-24 of sum |a b|); a
// misplaced element of a packed panel or tile is off by O(1). C is written both ways (cached and
// streaming stores; streaming falls back where rows are not aligned).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/dtype.hpp"
#include "ops/tensor/amx.hpp"
#include "ops/tensor/amx_gemm.hpp"

using namespace opmeter;

namespace {

struct Case {
  std::size_t m, k, n, pad;  // pad: extra elements per row of A, B and C
  tensor::Store store = tensor::Store::cached;
};

void expect_agrees(const Case& c) {
  const std::size_t lda = c.k + c.pad, ldb = c.n + c.pad, ldc = c.n + c.pad;
  std::vector<std::uint16_t> a(c.m * lda), b(c.k * ldb);
  Buffer out_buffer(c.m * ldc * 2);  // aligned: streaming stores write C's rows when they start on a line
  std::uint16_t* out = out_buffer.as<std::uint16_t>();
  std::fill(out, out + c.m * ldc, std::uint16_t{0xffff});
  Buffer a_tiles(c.m * c.k * 2);
  Rng rng(c.m * 31 + c.k * 7 + c.n);
  for (auto& v : a) v = to_bf16(static_cast<float>(rng.uniform(-2, 2)));
  for (auto& v : b) v = to_bf16(static_cast<float>(rng.uniform(-2, 2)));
  tensor::amx_gemm_bf16(a.data(), lda, b.data(), ldb, out, ldc, c.m, c.k, c.n, a_tiles.as<std::uint16_t>(), c.store);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.m; ++i)
    for (std::size_t j = 0; j < c.n; ++j) {
      double ref = 0, mag = 0;
      for (std::size_t p = 0; p < c.k; ++p) {
        const double x = double(from_bf16(a[i * lda + p])) * from_bf16(b[p * ldb + j]);
        ref += x, mag += std::fabs(x);
      }
      const double got = from_bf16(out[i * ldc + j]);
      const double bound = std::ldexp(std::fabs(ref), -8) + double(c.k) * std::ldexp(mag, -24);
      if (std::fabs(got - ref) > bound && ++bad <= 5)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", fp64 " << ref << ", bound " << bound;
    }
  EXPECT_EQ(bad, 0u) << c.m << " x " << c.k << " x " << c.n;
  for (std::size_t i = 0; i < c.m; ++i)  // the padding past each row of C is not written
    for (std::size_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[i * ldc + j], 0xffff);
}

}  // namespace

TEST(AmxGemm, AgreesWithFp64AtEveryEdgeOfItsBlocking) {
  if (!amx::bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here";
  using tensor::Store;
  // 1, 2 and 5 threads: the tasks' columns shrink (256 to 32) until every thread has one.
  const int threads = omp_get_max_threads();
  for (int t : {1, 2, 5}) {
    omp_set_num_threads(t);
    for (const Case& c : {Case{32, 32, 32, 0}, Case{64, 544, 288, 16}, Case{544, 64, 96, 0}, Case{96, 288, 544, 32},
                          Case{544, 288, 288, 32, Store::streaming}, Case{64, 64, 96, 16, Store::streaming}})
      expect_agrees(c);
  }
  omp_set_num_threads(threads);
}

TEST(AmxGemm, FitsOnlySizesThatAreMultiplesOf32) {
  if (!amx::bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here";
  EXPECT_TRUE(tensor::amx_gemm_fits(32, 64, 96));
  EXPECT_FALSE(tensor::amx_gemm_fits(48, 64, 96));
  EXPECT_FALSE(tensor::amx_gemm_fits(32, 80, 96));
  EXPECT_FALSE(tensor::amx_gemm_fits(32, 64, 100));
  EXPECT_FALSE(tensor::amx_gemm_fits(0, 64, 96));
}
