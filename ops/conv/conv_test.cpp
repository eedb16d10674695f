// conv2d's work model, fused and as separate passes, counted by hand from what it computes
// (conv.hpp: y = act(BN(conv(x, w) + b)), NCHW, BN folded into w and b).
#include <gtest/gtest.h>

#include "opmeter/registry.hpp"

using namespace opmeter;

namespace {

Case conv(const char* dtype, int bn, const char* act) {
  return parse_case(std::string("conv2d/opmeter/") + dtype +
                    "/batch=1,channels=4,out_channels=8,image=5,kernel=3,stride=1,padding=1,groups=2,bn=" +
                    std::to_string(bn) + ",act=" + act + "/threads=1");
}

}  // namespace

// batch 1, 4 input channels, 8 output channels, 5 x 5 image, 3 x 3 kernel, stride 1, padding 1,
// 2 groups. Output side (5 + 2 - 3) / 1 + 1 = 5: 8 x 25 = 200 outputs. Each output channel sees
// its group's 4 / 2 = 2 input channels: a sum of 2 x 9 = 18 products, a multiply and an add each.
// Then per output the bias add (BatchNorm folded into w and b adds nothing per element) and the
// activation (relu: 1).
//   flops  = 200 x 18 x 2 + 200 x (1 + 1) = 7200 + 400 = 7600
//   read   = x 1 x 4 x 5 x 5 x 4 B = 400, w 8 x 2 x 9 x 4 B = 576, fp32 bias 8 x 4 B = 32: 1008 B
//   write  = y 200 x 4 B = 800 B
TEST(ConvOp, FusedWorkIsCountedByHand) {
  const OpDef* op = Registry::global().op("conv2d");
  ASSERT_NE(op, nullptr);
  auto w = op->work(conv("fp32", 1, "relu"));
  EXPECT_DOUBLE_EQ(w.flops, 7600);
  EXPECT_DOUBLE_EQ(w.bytes_read, 1008);
  EXPECT_DOUBLE_EQ(w.bytes_written, 800);
  // Without an activation: the bias add alone after the products.
  auto plain = op->work(conv("fp32", 0, "none"));
  EXPECT_DOUBLE_EQ(plain.flops, 7200 + 200);
  EXPECT_DOUBLE_EQ(plain.bytes_read, 1008);
  // gelu counts 5 per element (activation.hpp's convention; see ActivationOps).
  EXPECT_DOUBLE_EQ(op->work(conv("fp32", 0, "gelu")).flops, 7200 + 200 * (1 + 5));
  // bf16: x, w and y in 2 bytes, the bias fp32.
  auto half = op->work(conv("bf16", 1, "relu"));
  EXPECT_DOUBLE_EQ(half.flops, 7600);
  EXPECT_DOUBLE_EQ(half.bytes_read, 200 + 288 + 32);
  EXPECT_DOUBLE_EQ(half.bytes_written, 400);
}

// As separate ops the convolution writes its 200 outputs; a BatchNorm pass reads them with its 4
// fp32 vectors (mean, var, gamma, beta: 4 x 8 x 4 B = 128 B) and rewrites them; an activation pass
// reads and rewrites them again. Each pass: 200 x 4 B = 800 B each way.
TEST(ConvOp, UnfusedWorkAddsAPassPerBatchNormAndActivation) {
  const OpDef* op = Registry::global().op("conv2d");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->unfused_work);
  auto both = op->unfused_work(conv("fp32", 1, "relu"));
  EXPECT_DOUBLE_EQ(both.flops, 7600);
  EXPECT_DOUBLE_EQ(both.bytes_read, 1008 + 2 * 800 + 128);
  EXPECT_DOUBLE_EQ(both.bytes_written, 800 + 2 * 800);
  auto bn_only = op->unfused_work(conv("fp32", 1, "none"));
  EXPECT_DOUBLE_EQ(bn_only.bytes_read, 1008 + 800 + 128);
  EXPECT_DOUBLE_EQ(bn_only.bytes_written, 800 + 800);
  auto act_only = op->unfused_work(conv("fp32", 0, "relu"));
  EXPECT_DOUBLE_EQ(act_only.bytes_read, 1008 + 800);
  EXPECT_DOUBLE_EQ(act_only.bytes_written, 800 + 800);
  auto neither = op->unfused_work(conv("fp32", 0, "none"));
  EXPECT_DOUBLE_EQ(neither.bytes(), 1008 + 800);
  auto half = op->unfused_work(conv("bf16", 1, "relu"));
  EXPECT_DOUBLE_EQ(half.bytes_read, 520 + 2 * 400 + 128);  // the BN vectors stay fp32
  EXPECT_DOUBLE_EQ(half.bytes_written, 400 + 2 * 400);
}
