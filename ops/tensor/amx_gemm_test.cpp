// The AMX bf16 GEMM against an fp64 product of the same bf16 inputs, on shapes that reach every
// edge of its blocking: more than one chunk of k (256), more than one task's rows (512) and
// columns (256), a last chunk or task of 32, and row strides wider than the rows (sub-matrices),
// on 1, 2 and 5 threads (the tasks shrink until each thread has one). Bound per element: bf16
// rounding of the result (2^-8 relative) plus fp32 accumulation (k 2^-24 of sum |a b|); a
// misplaced element of a packed panel or tile is off by O(1). C is written both ways (cached and
// streaming stores; streaming falls back where rows are not aligned), B stored both ways (k x n,
// and n x k: the 16 x 16 transposes of its packing), through the epilogue act(C + bias), with a
// residual added (act(C + bias) + R), and with B's panels packed once for every block of 512 rows.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/runner.hpp"
#include "opmeter/buffer.hpp"
#include "opmeter/dtype.hpp"
#include "opmeter/registry.hpp"
#include "ops/activation/activation.hpp"
#include "ops/tensor/amx.hpp"
#include "ops/tensor/amx_gemm.hpp"

using namespace opmeter;

namespace {

struct Shape {
  std::size_t m, k, n, pad;  // pad: extra elements per row of A, B and C
  tensor::Store store = tensor::Store::cached;
  tensor::BLayout b = tensor::BLayout::k_by_n;
  tensor::Act act = tensor::Act::none;
  bool bias = false;
  bool b_once = false;  // B's panels packed once into a workspace (used past 512 rows)
  bool residual = false;  // + a bf16 residual (m x n, its own row stride) before rounding
  bool fp32_out = false;  // C in fp32 (AmxGemmOptions::c_fp32): no rounding, no epilogue
};

void expect_agrees(const Shape& c) {
  const bool bt = c.b == tensor::BLayout::n_by_k;  // B stored n x k
  const std::size_t lda = c.k + c.pad, ldb = (bt ? c.k : c.n) + c.pad, ldc = c.n + c.pad;
  std::vector<std::uint16_t> a(c.m * lda), b((bt ? c.n : c.k) * ldb);
  std::vector<float> bias(c.n);
  const std::size_t ldr = c.n + 2 * c.pad + 32;  // a stride of its own, so a mix-up of strides shows
  std::vector<std::uint16_t> residual(c.m * ldr);
  Buffer out_buffer(c.m * ldc * 2);  // aligned: streaming stores write C's rows when they start on a line
  std::uint16_t* out = out_buffer.as<std::uint16_t>();
  std::fill(out, out + c.m * ldc, std::uint16_t{0xffff});
  Buffer a_tiles(c.m * c.k * 2), b_tiles(c.k * c.n * 2);
  Buffer out32_buffer(c.m * ldc * 4);
  float* out32 = out32_buffer.as<float>();
  std::fill(out32, out32 + c.m * ldc, -1.5e38f);
  Rng rng(c.m * 31 + c.k * 7 + c.n);
  for (auto& v : a) v = to_bf16(static_cast<float>(rng.uniform(-2, 2)));
  for (auto& v : b) v = to_bf16(static_cast<float>(rng.uniform(-2, 2)));
  for (auto& v : bias) v = static_cast<float>(rng.uniform(-8, 8));
  for (auto& v : residual) v = to_bf16(static_cast<float>(rng.uniform(-8, 8)));
  auto b_at = [&](std::size_t p, std::size_t j) { return from_bf16(bt ? b[j * ldb + p] : b[p * ldb + j]); };
  tensor::amx_gemm_bf16(a.data(), lda, b.data(), ldb, c.fp32_out ? nullptr : out, ldc, c.m, c.k, c.n, a_tiles.as<std::uint16_t>(),
                        {.b = c.b, .store = c.store, .act = c.act, .bias = c.bias ? bias.data() : nullptr,
                         .residual = c.residual ? residual.data() : nullptr, .ldr = ldr,
                         .b_tiles = c.b_once ? b_tiles.as<std::uint16_t>() : nullptr,
                         .c_fp32 = c.fp32_out ? out32 : nullptr});
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.m; ++i)
    for (std::size_t j = 0; j < c.n; ++j) {
      double ref = 0, mag = 0;
      for (std::size_t p = 0; p < c.k; ++p) {
        const double x = double(from_bf16(a[i * lda + p])) * b_at(p, j);
        ref += x, mag += std::fabs(x);
      }
      // The epilogue: act(sum + bias) in fp32 (its own error a few fp32 ulps, under the
      // accumulation term), the sums' error carried by act's slope (at most 1.1 for these).
      const double z = ref + (c.bias ? bias[j] : 0.0), slope = c.act == tensor::Act::none ? 1.0 : 1.1;
      ref = activation::reference(c.act, z);
      // The residual is added in fp32 to the epilogue's fp32 result: one more fp32 rounding.
      const double r = c.residual ? double(from_bf16(residual[i * ldr + j])) : 0.0;
      ref += r;
      const double got = c.fp32_out ? double(out32[i * ldc + j]) : double(from_bf16(out[i * ldc + j]));
      const double bound = (c.fp32_out ? 0.0 : std::ldexp(std::fabs(ref), -8)) + slope * double(c.k) * std::ldexp(mag + std::fabs(z), -24) +
                           std::ldexp(std::fabs(r), -23);
      if (std::fabs(got - ref) > bound && ++bad <= 5)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", fp64 " << ref << ", bound " << bound;
    }
  EXPECT_EQ(bad, 0u) << c.m << " x " << c.k << " x " << c.n;
  for (std::size_t i = 0; i < c.m; ++i)  // the padding past each row of C is not written, nor the other C
    for (std::size_t j = 0; j < ldc; ++j) {
      if (j >= c.n || !c.fp32_out) {
        ASSERT_EQ(out32[i * ldc + j], -1.5e38f);
      }
      if (j >= c.n || c.fp32_out) {
        ASSERT_EQ(out[i * ldc + j], 0xffff);
      }
    }
}

}  // namespace

TEST(AmxGemm, AgreesWithFp64AtEveryEdgeOfItsBlocking) {
  if (!amx::bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here";
  using tensor::Store;
  // 1, 2 and 5 threads: the tasks' columns shrink (256 to 32) until every thread has one.
  const int threads = omp_get_max_threads();
  for (int t : {1, 2, 5}) {
    omp_set_num_threads(t);
    using tensor::Act;
    using tensor::BLayout;
    for (const Shape& c : {Shape{32, 32, 32, 0}, Shape{64, 544, 288, 16}, Shape{544, 64, 96, 0}, Shape{96, 288, 544, 32},
                          Shape{544, 288, 288, 32, Store::streaming}, Shape{64, 64, 96, 16, Store::streaming},
                          Shape{64, 544, 288, 16, Store::cached, BLayout::n_by_k},
                          Shape{544, 64, 96, 0, Store::cached, BLayout::n_by_k, Act::gelu, true},
                          Shape{96, 288, 64, 32, Store::cached, BLayout::k_by_n, Act::relu, true},
                          Shape{1056, 288, 288, 16, Store::streaming, BLayout::k_by_n, Act::none, false, true},
                          Shape{544, 544, 96, 0, Store::cached, BLayout::n_by_k, Act::silu, true, true},
                          // The residual: with bias (the block's output projections), past one
                          // task's rows and columns (streaming asked, but rows 304 wide are not
                          // whole lines: cached); with act.
                          Shape{1056, 288, 288, 16, Store::streaming, BLayout::n_by_k, Act::none, true, true, true},
                          Shape{96, 64, 544, 0, Store::cached, BLayout::n_by_k, Act::gelu, true, false, true},
                          Shape{64, 96, 64, 0, Store::cached, BLayout::k_by_n, Act::none, false, false, true},
                          // Streaming stores after an activation (in place in fp32 first), and
                          // after bias and residual (aligned rows: they stream).
                          Shape{64, 96, 64, 0, Store::streaming, BLayout::k_by_n, Act::gelu, true},
                          Shape{544, 64, 96, 0, Store::streaming, BLayout::n_by_k, Act::none, true, false, true},
                          // A copied into tile order: past one task of rows (544), or 288 rows 4 KiB
                          // apart; read in place: 64 rows 4 KiB apart (as most shapes of at most
                          // 512 rows whose rows are whole lines).
                          Shape{544, 2048, 64, 0}, Shape{288, 2048, 64, 0, Store::cached, BLayout::n_by_k},
                          Shape{64, 2048, 64, 0, Store::cached, BLayout::n_by_k},
                          // Streaming after act and residual; act and residual past 512 rows.
                          Shape{64, 96, 64, 0, Store::streaming, BLayout::n_by_k, Act::silu, true, false, true},
                          Shape{544, 96, 64, 0, Store::cached, BLayout::n_by_k, Act::gelu, true, true, true},
                          // fp32 C: past one task of rows with B's panels packed once (the gemm op's
                          // shape), and with padded rows.
                          Shape{544, 288, 288, 0, Store::cached, BLayout::n_by_k, Act::none, false, true, false, true},
                          Shape{64, 96, 96, 16, Store::cached, BLayout::n_by_k, Act::none, false, false, false, true}})
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

// linear's `opmeter` impl runs bf16 on this GEMM: sizes off multiples of 32 (or a CPU without
// AMX-BF16) are skipped with the reason; fp32 keeps every size.
TEST(AmxGemm, OpmeterLinearInBf16SkipsOtherSizesSayingWhy) {
  auto* impl = Registry::global().impl("linear", "opmeter");
  ASSERT_NE(impl, nullptr);
  auto support = [&](const char* dtype, const char* seq) {
    return impl->supports(parse_case(std::string("linear/opmeter/") + dtype + "/batch=1,seq=" + seq +
                                     ",hidden=64,out=96,act=none/threads=1"));
  };
  EXPECT_TRUE(support("fp32", "17").ok);
  const auto odd = support("bf16", "17");
  EXPECT_FALSE(odd.ok);
  EXPECT_TRUE(odd.reason.starts_with("opmeter's bf16 linear runs on AMX-BF16 with rows, hidden and out multiples of 32 "
                                     "(here 17, 64, 96"))
      << odd.reason;
  EXPECT_EQ(support("bf16", "32").ok, amx::bf16_usable());
}

// linear's `opmeter` impl in bf16 against its fp64 check, as `opmeter check` runs it: the GEMM on W
// as stored, bias and activation per block, ln_linear's LayerNorm first.
TEST(AmxGemm, OpmeterLinearInBf16PassesItsCheck) {
  if (!amx::bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here";
  for (const char* c : {"linear/opmeter/bf16/batch=2,seq=16,hidden=544,out=288,act=gelu/threads=2",
                        "ln_linear_silu/opmeter/bf16/batch=1,seq=32,hidden=544,out=288/threads=2"}) {
    auto r = check_case(parse_case(c), RunOptions{});
    EXPECT_EQ(r.status, Status::ok) << c << ": " << r.reason;
  }
}
