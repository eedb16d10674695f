// Which codes the CUDA weight-only kernel decodes for each recipe, and the device bytes of a
// weight in its layout, against sizes counted by hand and against the packers' own output.
#include <gtest/gtest.h>

#include <vector>

#include "ops/linear/quant/quantize.hpp"
#include "ops/linear/quant_gpu_pack.hpp"
#include "ops/linear/quant_gpu_plan.hpp"

using namespace opmeter;
using opmeter::linear::gpu_pack::Codes;

namespace {
quant::Recipe recipe(const char* name) {
  auto r = quant::parse_recipe(name);
  EXPECT_TRUE(r.has_value()) << name;
  return *r;
}
}  // namespace

TEST(QuantGpuPlan, RecipesMapToTheKernelsCodes) {
  using linear::gpu_pack::weight_only_codes;
  EXPECT_EQ(weight_only_codes(recipe("int8wo")), Codes::int8);
  EXPECT_EQ(weight_only_codes(recipe("float8wo")), Codes::fp8);
  EXPECT_EQ(weight_only_codes(recipe("int4wo-64")), Codes::int4);
  EXPECT_EQ(weight_only_codes(recipe("hqq-int4-32")), Codes::int4);
  // Dynamic recipes quantize activations too (cuBLASLt runs them), the baseline nothing.
  for (const char* name : {"baseline", "int8dq", "float8dq-tensor", "float8dq-row"})
    EXPECT_FALSE(weight_only_codes(recipe(name)).has_value()) << name;
}

TEST(QuantGpuPlan, DeviceBytesCountPaddedTilesAndScales) {
  using linear::gpu_pack::weight_only_device_bytes;
  // out 20 -> 3 n-tiles of 8 channels (24 padded); hidden 192 -> 3 units of 64 k (8-bit) or 2 of 128 (int4).
  EXPECT_EQ(weight_only_device_bytes(recipe("int8wo"), 20, 192, 9), 3u * 3 * 512 + 24 * 4);
  EXPECT_EQ(weight_only_device_bytes(recipe("float8wo"), 20, 192, 1), 3u * 3 * 512 + 24 * 4);
  EXPECT_EQ(weight_only_device_bytes(recipe("int4wo-64"), 20, 192, 9), 3u * 2 * 512 + 24 * 3 * 4);  // 3 groups a row
  EXPECT_EQ(weight_only_device_bytes(recipe("int8dq"), 20, 192, 1), 0u);
  // At M <= 8 as the A operand: 2 tiles of 16 channels (32 padded) x 3 units of 64 k (int4) or 6
  // of 32 (int8); fp8 stays B.
  EXPECT_EQ(weight_only_device_bytes(recipe("int4wo-64"), 20, 192, 8), 2u * 3 * 512 + 32 * 3 * 4);
  EXPECT_EQ(weight_only_device_bytes(recipe("int8wo"), 20, 192, 1), 2u * 6 * 512 + 32 * 4);
  EXPECT_EQ(weight_only_device_bytes(recipe("float8wo"), 20, 192, 1), 3u * 3 * 512 + 24 * 4);
  // The same as what the packers produce for a quantized weight.
  for (const char* name : {"int8wo", "float8wo", "int4wo-32", "hqq-int4-64"})
    for (std::size_t rows : {1, 8, 9}) {
      const auto r = recipe(name);
      const std::size_t out = 20, hidden = 192;
      std::vector<float> w(out * hidden);
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = float((i * 37) % 101) / 50.f - 1.f;
      const auto q = quant::quantize_weights(r, w.data(), out, hidden, Elem::bf16);
      const auto l = linear::gpu_pack::layout_of(r.weights, out, hidden, linear::gpu_pack::weight_operand(r, rows));
      std::size_t packed = linear::gpu_pack::pack_codes(l, q.codes).size();
      packed += r.weights == quant::WeightFormat::int4
                    ? linear::gpu_pack::pack_group_params(q, l.padded_out(), Elem::bf16).size() * 4
                    : linear::gpu_pack::pack_channel_scales(q, l.padded_out()).size() * 4;
      EXPECT_EQ(weight_only_device_bytes(r, out, hidden, rows), packed) << name << " rows=" << rows;
    }
}

TEST(QuantGpuPlan, AForcedSplitOfKMustGiveEverySplitAChunk) {
  using linear::gpu_pack::split_problem;
  // hidden 8192 in chunks of 512: 16 chunks split 1, 2, 3, 4, 6, 8 or 16 ways (5: 4 x 4 leaves one empty).
  for (int ks : {1, 2, 3, 4, 6, 8, 16}) EXPECT_EQ(split_problem(ks, 8192, 512, 16, 1 << 20, 256), "") << ks;
  EXPECT_EQ(split_problem(5, 8192, 512, 16, 1 << 20, 256),
            "ksplit=5 leaves a split without K: hidden=8192 is 16 chunks of 512 for 16-row tiles, which split 1, 2, 3, "
            "4, 6, 8, 16 ways");
  // More splits than chunks; a partial last chunk counts (520 = 2 chunks); one chunk.
  EXPECT_NE(split_problem(17, 8192, 512, 16, 1 << 20, 256).find("which split 1, 2, 3, 4, 6, 8, 16 ways"),
            std::string::npos);
  EXPECT_EQ(split_problem(2, 520, 512, 16, 1 << 20, 256), "");
  EXPECT_EQ(split_problem(2, 64, 256, 64, 1 << 20, 256),
            "ksplit=2 leaves a split without K: hidden=64 is 1 chunk of 256 for 64-row tiles, which split 1 way");
  // The partials' budget.
  EXPECT_EQ(split_problem(8, 8192, 512, 16, 4, 256),
            "ksplit=8: the partials of more than 4 splits exceed the kernel's 256 MiB for them");
}

// operand=a|b names the weights' mma operand; auto is A for int4 and int8 at rows <= 8.
TEST(QuantGpuPlan, AnAskedOperandWinsWhereItFits) {
  using linear::gpu_pack::Operand;
  using linear::gpu_pack::operand_problem;
  using linear::gpu_pack::weight_operand;
  EXPECT_EQ(weight_operand(recipe("int8wo"), 1), Operand::a);
  EXPECT_EQ(weight_operand(recipe("int4wo-64"), 8), Operand::a);
  EXPECT_EQ(weight_operand(recipe("int4wo-64"), 9), Operand::b);
  EXPECT_EQ(weight_operand(recipe("float8wo"), 1), Operand::b);
  EXPECT_EQ(weight_operand(recipe("int8wo"), 1, Operand::b), Operand::b);
  EXPECT_EQ(weight_operand(recipe("int4wo-32"), 4, Operand::a), Operand::a);
  for (const char* name : {"int8wo", "int4wo-64", "float8wo", "hqq-int4-32"})
    for (std::size_t rows : {1, 8, 9, 200}) EXPECT_EQ(operand_problem(recipe(name), rows, Operand::b), "") << name;
  EXPECT_EQ(operand_problem(recipe("hqq-int4-64"), 8, Operand::a), "");
  EXPECT_EQ(operand_problem(recipe("int8wo"), 9, Operand::a),
            "operand=a: the decode kernel takes the weights as the A operand at 8 rows or fewer, not 9");
  EXPECT_EQ(operand_problem(recipe("float8wo"), 1, Operand::a),
            "operand=a: the decode kernel takes int4 and int8 weight-only recipes as the A operand, not float8wo");
  EXPECT_EQ(operand_problem(recipe("int8dq"), 1, Operand::a),
            "operand=a: the decode kernel takes int4 and int8 weight-only recipes as the A operand, not int8dq");
  // Asked for B at M = 1, the bytes are those of the B layout: 3 n-tiles of 8 channels.
  using linear::gpu_pack::weight_only_device_bytes;
  EXPECT_EQ(weight_only_device_bytes(recipe("int8wo"), 20, 192, 1, Operand::b), 3u * 3 * 512 + 24 * 4);
  EXPECT_EQ(weight_only_device_bytes(recipe("int4wo-64"), 20, 192, 1, Operand::b), 3u * 2 * 512 + 24 * 3 * 4);
}
