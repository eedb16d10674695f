// opmeter's blocked attention: every ISA copy of the kernel against a plain fp64 attention on
// sizes that are not multiples of its blocks or vectors, row ranges that start mid-head, both
// stages, causal and not, fp32 and bf16 storage; the registered impl end to end through the
// op's own check; and a workspace that grows with seq, not seq^2.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/attention/attention_blocked.hpp"
#include "ops/tensor/amx.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using namespace opmeter::attention;

namespace {

float bf16_round(float x) {  // to bf16 and back, nearest even
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xffff0000u);
}

// Inputs of one head, stored as the kernel reads them (fp32 or bf16) and as values (exact).
struct HeadData {
  std::size_t seq, d;
  bool bf16;
  std::vector<float> q, k, v;          // values, already rounded to bf16 where stored so
  std::vector<std::uint16_t> qb, kb, vb;  // bf16 storage
  HeadData(std::size_t seq_, std::size_t d_, bool bf16_) : seq(seq_), d(d_), bf16(bf16_) {
    Rng rng(seq * 131 + d);
    for (auto* t : {&q, &k, &v}) {
      t->resize(seq * d);
      for (auto& x : *t) x = float(rng.uniform(-2, 2));
      if (bf16)
        for (auto& x : *t) x = bf16_round(x);
    }
    for (auto [src, dst] : {std::pair{&q, &qb}, {&k, &kb}, {&v, &vb}})
      for (float x : *src) dst->push_back(std::uint16_t(std::bit_cast<std::uint32_t>(x) >> 16));
  }
  const void* ptr(const std::vector<float>& f, const std::vector<std::uint16_t>& b) const {
    return bf16 ? static_cast<const void*>(b.data()) : f.data();
  }
};

// Row i of softmax(scale q k^T [+ mask]) (probs) or of that times v (full), in fp64.
std::vector<double> reference_row(const HeadData& h, std::size_t i, bool causal, bool probs) {
  const double scale = 1.0 / std::sqrt(double(h.d));
  const std::size_t keys = causal ? i + 1 : h.seq;
  std::vector<double> p(h.seq, 0.0);
  double mx = -INFINITY, sum = 0;
  for (std::size_t j = 0; j < keys; ++j) {
    double s = 0;
    for (std::size_t c = 0; c < h.d; ++c) s += double(h.q[i * h.d + c]) * h.k[j * h.d + c];
    p[j] = s * scale;
    mx = std::max(mx, p[j]);
  }
  for (std::size_t j = 0; j < keys; ++j) sum += p[j] = std::exp(p[j] - mx);
  for (auto& x : p) x /= sum;
  if (probs) return p;
  std::vector<double> o(h.d, 0.0);
  for (std::size_t j = 0; j < keys; ++j)
    for (std::size_t c = 0; c < h.d; ++c) o[c] += p[j] * h.v[j * h.d + c];
  return o;
}

std::vector<blocked::Kernel> kernels_this_cpu_runs() {
  __builtin_cpu_init();
  std::vector<blocked::Kernel> ks = {blocked::base_kernel()};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ks.push_back(blocked::avx2_kernel());
  if (__builtin_cpu_supports("avx512f")) ks.push_back(blocked::avx512_kernel());
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")) ks.push_back(blocked::avx512_bf16_kernel());
  if (amx::bf16_usable()) ks.push_back(blocked::amx_bf16_kernel());
  return ks;
}

// Runs rows [q_begin, q_end) and checks them against the reference: |got - ref| <= tol (probs,
// whose values are <= 1) or <= tol * max|v| (full). Rows outside the range must stay untouched.
void expect_rows_match(const blocked::Kernel& k, std::size_t seq, std::size_t d, bool causal, bool probs, bool bf16,
                       std::size_t q_begin, std::size_t q_end) {
  SCOPED_TRACE(fmt::format("{} seq={} d={} causal={} probs={} bf16={} rows [{}, {})", k.isa, seq, d, causal, probs,
                           bf16, q_begin, q_end));
  HeadData h(seq, d, bf16);
  const std::size_t cols = probs ? seq : d;
  const float poison = 12288.0f;  // exact in bf16 too
  std::vector<float> out32(seq * cols, poison);
  std::vector<std::uint16_t> out16(seq * cols, std::uint16_t(std::bit_cast<std::uint32_t>(poison) >> 16));
  std::vector<float> ws(k.workspace_floats(seq, d, probs) + 16);
  float* aligned = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(ws.data()) + 63) / 64 * 64);
  blocked::Head head{.bf16 = bf16,
                     .probs = probs,
                     .causal = causal,
                     .q = h.ptr(h.q, h.qb),
                     .k = h.ptr(h.k, h.kb),
                     .v = probs ? nullptr : h.ptr(h.v, h.vb),
                     .out = bf16 ? static_cast<void*>(out16.data()) : out32.data(),
                     .seq = seq,
                     .d = d,
                     .scale = float(1.0 / std::sqrt(double(d)))};
  k.rows(head, q_begin, q_end, aligned);
  auto got = [&](std::size_t i) {
    return bf16 ? std::bit_cast<float>(std::uint32_t(out16[i]) << 16) : out32[i];
  };
  // fp32 math over d-long dot products and seq-long sums; bf16 adds the output's rounding and,
  // with bf16 dot products, P's (each at most the unit roundoff, 2^-8, of values up to the bound's scale).
  const double tol = (bf16 ? 0x1p-7 : 0.0) + 1e-5;
  for (std::size_t i = 0; i < seq; ++i) {
    if (i < q_begin || i >= q_end) {
      for (std::size_t c = 0; c < cols; ++c) ASSERT_EQ(got(i * cols + c), poison) << "row " << i << " written";
      continue;
    }
    auto ref = reference_row(h, i, causal, probs);
    for (std::size_t c = 0; c < cols; ++c) {
      const double bound = tol * (probs ? 1.0 : 2.0);  // |v| <= 2
      ASSERT_NEAR(got(i * cols + c), ref[c], bound) << "row " << i << " col " << c;
      if (probs && causal && c > i) {
        ASSERT_EQ(got(i * cols + c), 0.0f) << "masked key " << c << " of row " << i;
      }
    }
  }
}

}  // namespace

TEST(BlockedAttention, EveryIsaMatchesPlainAttentionOnOddSizes) {
  for (const auto& k : kernels_this_cpu_runs())
    for (bool probs : {false, true})
      for (bool causal : {false, true})
        for (bool bf16 : {false, true}) {
          // seq 1, one short of a key block, one past it, past a query block; d 1 to 128.
          for (auto [seq, d] : {std::pair<std::size_t, std::size_t>{1, 16}, {5, 1}, {127, 64}, {129, 13},
                                {k.query_block + 3, 128}, {300, 16}})
            expect_rows_match(k, seq, d, causal, probs, bf16, 0, seq);
        }
}

TEST(BlockedAttention, RowRangesThatStartMidHeadMatch) {
  // The impl splits a head into chunks of query rows: each chunk alone gives its rows.
  for (const auto& k : kernels_this_cpu_runs())
    for (bool probs : {false, true})
      for (bool causal : {false, true}) {
        expect_rows_match(k, 400, 64, causal, probs, false, 96, 192);
        expect_rows_match(k, 400, 64, causal, probs, true, 288, 400);
        expect_rows_match(k, 400, 32, causal, probs, false, 7, 8);
        // bf16 on the AMX tiles where the CPU has them: head_dim 32 (one step of the sum), a range
        // of one row (31 zero rows to 32), and head_dim 96 past a key block.
        expect_rows_match(k, 400, 32, causal, probs, true, 7, 8);
        expect_rows_match(k, 130, 96, causal, probs, true, 33, 130);
      }
}

TEST(BlockedAttention, WorkspaceGrowsWithSeqNotSeqSquared) {
  const auto& k = blocked::kernel();
  for (bool probs : {false, true}) {
    const std::size_t small = k.workspace_floats(4096, 64, probs), big = k.workspace_floats(65536, 64, probs);
    EXPECT_LE(big, 17 * small) << "probs=" << probs;  // 16x the keys: about 16x, not 256x
    EXPECT_LT(big, std::size_t(65536) * 65536 / 64) << "probs=" << probs;
  }
}

TEST(BlockedAttention, ImplPassesTheOpCheckWithManyChunksPerHead) {
  // One head, 2 threads: the impl cuts the head into chunks of query rows, heaviest first.
  int d_index = 0;
  for (const char* dtype : {"fp32", "bf16"})
    for (const char* stage : {"probs", "full"})
      for (int causal : {0, 1}) {
        const int d = std::array{16, 64, 128}[d_index++ % 3];
        auto c = parse_case(fmt::format(
            "attention/opmeter/{}/batch=1,heads=1,seq=777,head_dim={},causal={},stage={}/threads=2", dtype, d, causal,
            stage));
        Result r = run_case(c, opmeter::testing::quick_options(1));
        ASSERT_EQ(r.status, Status::ok) << c.to_string() << ": " << r.reason;
        ASSERT_TRUE(r.max_error.has_value());
        EXPECT_LE(*r.max_error, *r.tolerance) << c.to_string();
      }
}

TEST(BlockedAttention, ImplSaysWhatComputesTheProducts) {
  auto c = parse_case("attention/opmeter/fp32/batch=1,heads=2,seq=37,head_dim=16,causal=1,stage=full/threads=1");
  Result r = run_case(c, opmeter::testing::quick_options(1));
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.details.at("isa"), blocked::kernel().isa);
  EXPECT_NE(r.details.at("blocks").find("queries"), std::string::npos);
  EXPECT_EQ(r.details.at("products"), "own register-blocked micro-kernels, fp32 FMAs");
  // bf16: on the tiles where the CPU has AMX and head_dim is a multiple of 32, else vdpbf16ps
  // where it has AVX512_BF16; the probs stage never on the tiles.
  __builtin_cpu_init();
  const bool dot = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  for (const char* shape : {"head_dim=64,causal=1,stage=full", "head_dim=48,causal=0,stage=full", "head_dim=64,causal=0,stage=probs"}) {
    auto b = parse_case(std::string("attention/opmeter/bf16/batch=1,heads=2,seq=37,") + shape + "/threads=1");
    Result rb = run_case(b, opmeter::testing::quick_options(1));
    ASSERT_EQ(rb.status, Status::ok) << rb.reason;
    const bool tiles = amx::bf16_usable() && std::string(shape) == "head_dim=64,causal=1,stage=full";
    const std::string want = tiles ? "AMX tiles, tdpbf16ps on 32x32 blocks (P rounded to bf16)"
                             : dot ? "own register-blocked micro-kernels, vdpbf16ps (P rounded to bf16)"
                                   : "own register-blocked micro-kernels, fp32 FMAs";
    EXPECT_EQ(rb.details.at("products"), want) << shape;
  }
}
