// opmeter_gemv's bf16 GEMV kernel (gemv_bf16.hpp) against fp64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "opmeter/dtype.hpp"
#include "opmeter/case.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/gemv_bf16.hpp"

using namespace opmeter;
using namespace opmeter::linear;

// The bf16 GEMV (impl opmeter_gemv's kernel) against fp64 sums of the same bf16 values: rows 1 .. 6
// (passes of 4 and their remainders), hidden with and without a tail of the 32- and 16-wide loads,
// channel ranges of four and of one (a remainder), starting past 0; each kernel this CPU has.
TEST(GemvBf16, AgreesWithFp64OnEveryPassAndTail) {
  using Kernel = void (*)(const std::uint16_t*, const float*, std::size_t, const std::uint16_t*, std::size_t,
                          std::size_t, std::size_t, float*, std::size_t);
  std::vector<std::pair<const char*, Kernel>> kernels;
  if (gemv_bf16_avx512_usable())
    kernels.emplace_back("avx512_bf16",
                         [](const std::uint16_t* x, const float*, std::size_t rows, const std::uint16_t* w,
                            std::size_t hidden, std::size_t j0, std::size_t j1, float* c,
                            std::size_t ldc) { gemv_bf16_avx512(x, rows, w, hidden, j0, j1, c, ldc); });
  if (gemv_bf16_avx2_usable()) kernels.emplace_back("avx2", gemv_bf16_avx2);
  if (kernels.empty()) GTEST_SKIP() << "neither AVX512_BF16 nor AVX2 here";
  for (const auto& [isa, gemv] : kernels) {
    SCOPED_TRACE(isa);
    std::mt19937 rng(31);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (std::size_t hidden : {64, 77, 1031})
      for (std::size_t rows : {1, 2, 3, 4, 5, 6}) {
        const std::size_t out = 11;
        std::vector<std::uint16_t> x(rows * hidden), w(out * hidden);
        for (auto& v : x) v = to_bf16(normal(rng));
        for (auto& v : w) v = to_bf16(normal(rng));
        std::vector<float> c(rows * out, NAN), xp(rows * hidden);
        gemv_bf16_x_for_avx2(x.data(), rows, hidden, xp.data());
        gemv(x.data(), xp.data(), rows, w.data(), hidden, 2, out, c.data(), out);
        gemv(x.data(), xp.data(), rows, w.data(), hidden, 0, 2, c.data(), out);
        for (std::size_t m = 0; m < rows; ++m)
          for (std::size_t j = 0; j < out; ++j) {
            double exact = 0, mag = 0;
            for (std::size_t k = 0; k < hidden; ++k) {
              const double p = double(from_bf16(x[m * hidden + k])) * from_bf16(w[j * hidden + k]);
              exact += p;
              mag += std::fabs(p);
            }
            ASSERT_LE(std::fabs(c[m * out + j] - exact), 1e-6 * mag)
                << "hidden " << hidden << ", rows " << rows << ", " << m << ", " << j;
          }
      }
  }
}

// The impl takes decode's rows only, and says why it skips more (and where neither AVX2 nor AVX512_BF16 is).
TEST(GemvBf16, TheImplSkipsMoreThan16RowsSayingWhy) {
  auto* impl = Registry::global().impl("linear", "opmeter_gemv");
  ASSERT_NE(impl, nullptr);
  auto support = [&](const char* rows) {
    return impl->supports(parse_case(std::string("linear/opmeter_gemv/bf16/batch=1,seq=") + rows +
                                     ",hidden=64,out=32,act=none/threads=1"));
  };
  if (!gemv_bf16_usable()) {
    EXPECT_EQ(support("1").reason, "opmeter_gemv needs AVX2 and FMA, or AVX512_BF16");
    return;
  }
  EXPECT_TRUE(support("16").ok);
  const auto seventeen = support("17");
  EXPECT_FALSE(seventeen.ok);
  EXPECT_EQ(seventeen.reason, "opmeter_gemv is a GEMV for decode: up to 16 rows (batch x seq); onednn runs more");
}
