#include <gtest/gtest.h>

#include "opmeter/shapes.hpp"

using namespace opmeter;

TEST(Shapes, Pow2) {
  auto s = pow2_shapes(10, 12);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], (MatShape{1024, 1024, 1024, ""}));
  EXPECT_EQ(s[2], (MatShape{4096, 4096, 4096, ""}));
}

TEST(Shapes, Pow2ExtendedAddsOneAndAHalf) {
  auto s = pow2_extended_shapes(10, 11);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].m, 1024);
  EXPECT_EQ(s[1].m, 1536);
  EXPECT_EQ(s[2].m, 2048);
  EXPECT_EQ(s[3].m, 3072);
}

TEST(Shapes, SweepIsEveryCombination) {
  auto s = sweep_shapes(8, 9);
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(s.front(), (MatShape{256, 256, 256, ""}));
  EXPECT_EQ(s[1], (MatShape{256, 256, 512, ""}));  // n varies fastest
  EXPECT_EQ(s.back(), (MatShape{512, 512, 512, ""}));
}

TEST(Shapes, LlamaSeventyB) {
  auto s = llama_shapes(16384);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], (MatShape{16384, 8192, 1280, "attn.wqkv"}));
  EXPECT_EQ(s[1], (MatShape{16384, 1024, 8192, "attn.wo"}));
  EXPECT_EQ(s[2], (MatShape{16384, 8192, 7168, "ffn.w13"}));
  EXPECT_EQ(s[3], (MatShape{16384, 3584, 8192, "ffn.w2"}));
}
