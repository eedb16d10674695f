// Our packing of bf16 weights into oneDNN's AMX layout: oneDNN itself reads the packed matrix
// back to row-major (its reorder interprets the layout independently of our index formula), and
// the layout test accepts only what the packing writes.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "opmeter/dtype.hpp"
#include "ops/tensor/onednn_pack.hpp"
#include "ops/tensor/onednn_util.hpp"

using namespace opmeter;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

TEST(OnednnPack, OnednnReadsThePackedMatrixBack) {
  REQUIRE_ONEDNN_BF16();
  for (auto [k, n] : {std::pair<std::size_t, std::size_t>{32, 64}, {96, 192}}) {
    std::vector<std::uint16_t> src(k * n), packed(k * n), back(k * n, 0);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(i * 2654435761u >> 7);
    tensor::pack_amx_bf16(src.data(), packed.data(), k, n);
    const dnnl::memory::dims dims{dnnl::memory::dim(k), dnnl::memory::dim(n)};
    dnnl::memory::desc packed_md(dims, dt::bf16, tag::BA16a64b2a), plain_md(dims, dt::bf16, tag::ab);
    ASSERT_EQ(packed_md.get_size(), k * n * 2);
    auto from = tensor::onednn_memory(packed_md, packed.data());
    auto to = tensor::onednn_memory(plain_md, back.data());
    dnnl::reorder(from, to).execute(tensor::onednn_stream(), from, to);
    tensor::onednn_stream().wait();
    EXPECT_EQ(back, src) << k << "x" << n;
  }
}

TEST(OnednnPack, LayoutTestAcceptsOnlyWhatThePackingWrites) {
  EXPECT_TRUE(tensor::is_amx_bf16_packed(dnnl::memory::desc({64, 128}, dt::bf16, tag::BA16a64b2a)));
  EXPECT_FALSE(tensor::is_amx_bf16_packed(dnnl::memory::desc({64, 128}, dt::bf16, tag::ab)));
  EXPECT_FALSE(tensor::is_amx_bf16_packed(dnnl::memory::desc({64, 128}, dt::f32, tag::BA16a64b2a)));
  // Padded (K not a multiple of 32, N not of 64): the packing writes no padding.
  EXPECT_FALSE(tensor::is_amx_bf16_packed(dnnl::memory::desc({40, 128}, dt::bf16, tag::BA16a64b2a)));
  EXPECT_FALSE(tensor::is_amx_bf16_packed(dnnl::memory::desc({64, 96}, dt::bf16, tag::BA16a64b2a)));
}

// Several slabs (forced small), against the test's own double loops on the unpacked B.
TEST(OnednnPack, SlabMatmulAgreesWithNaiveProduct) {
  REQUIRE_ONEDNN_BF16();
  const std::size_t m = 5, k = 64, n = 256;
  tensor::PackedSlabMatmul mm(m, k, n, 2 * k * 64);
  ASSERT_EQ(mm.slab(), 64u);
  std::vector<std::uint16_t> a(m * k), b(k * n), packed(k * n), c(m * n, 0);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(float(int(i * 7 % 13) - 6) / 8);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = to_bf16(float(int(i * 5 % 11) - 5) / 4);
  tensor::pack_amx_bf16(b.data(), packed.data(), k, n);
  mm.run(a.data(), packed.data(), c.data());
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      double want = 0;
      for (std::size_t i = 0; i < k; ++i) want += double(from_bf16(a[r * k + i])) * from_bf16(b[i * n + j]);
      ASSERT_NEAR(from_bf16(c[r * n + j]), want, 0.01 * std::abs(want) + 1e-3) << "row " << r << " column " << j;
    }
}

// Two threads sharing out the slabs (each running the one-thread matmul at once): the same
// product as one thread.
TEST(OnednnPack, SlabMatmulOnTwoThreadsAgreesWithOne) {
  REQUIRE_ONEDNN_BF16();
  // k long enough that oneDNN accumulates over blocks of k in a scratchpad.
  const std::size_t m = 64, k = 2048, n = 512;
  std::vector<std::uint16_t> a(m * k), b(k * n), packed(k * n), one(m * n, 0), two(m * n, 0);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(float(int(i * 7 % 13) - 6) / 8);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = to_bf16(float(int(i * 5 % 11) - 5) / 4);
  tensor::pack_amx_bf16(b.data(), packed.data(), k, n);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  tensor::PackedSlabMatmul(m, k, n, 2 * k * 64).run(a.data(), packed.data(), one.data());
  omp_set_num_threads(2);
  tensor::PackedSlabMatmul two_threads(m, k, n, 2 * k * 64);
  for (int repeat = 0; repeat < 3; ++repeat) two_threads.run(a.data(), packed.data(), two.data());
  omp_set_num_threads(threads);
  EXPECT_EQ(two, one);
  EXPECT_NE(one, std::vector<std::uint16_t>(m * n, 0));
}
