// Our packing of bf16 weights into oneDNN's AMX layout: oneDNN itself reads the packed matrix
// back to row-major (its reorder interprets the layout independently of our index formula), and
// the layout test accepts only what the packing writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ops/tensor/onednn_pack.hpp"
#include "ops/tensor/onednn_util.hpp"

using namespace opmeter;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

TEST(OnednnPack, OnednnReadsThePackedMatrixBack) {
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
