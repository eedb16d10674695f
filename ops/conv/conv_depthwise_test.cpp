// conv2d in the shapes model pipelines use (issue 16): depthwise 3x3 / 5x5 (MobileNetV3,
// EfficientNet), RepLKNet's large depthwise kernels, ViT's patch embedding, ResNet's stem and 1x1
// convs, on every CPU impl against the fp64 reference; opmeter's depthwise impl on odd shapes;
// the check's cost on the largest shapes; the depthwise impls' refusals; the GPU impl on a GPU.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/conv/conv.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

struct ConvShape {
  const char* family;
  std::size_t batch, channels, out_channels, image, kernel, stride, padding, groups;
  int bn;
  const char* act;
};

std::string params(const ConvShape& s) {
  return fmt::format("batch={},channels={},out_channels={},image={},kernel={},stride={},padding={},groups={},bn={},act={}",
                     s.batch, s.channels, s.out_channels, s.image, s.kernel, s.stride, s.padding, s.groups, s.bn, s.act);
}

// The model shapes at small batch; channels cut where the fp64 reference would take long.
const std::vector<ConvShape>& model_shapes() {
  static const std::vector<ConvShape> shapes = {
      {"mobilenet_v3 dw3x3 s1", 2, 16, 16, 56, 3, 1, 1, 16, 1, "relu"},
      {"mobilenet_v3 dw5x5 s2", 1, 72, 72, 28, 5, 2, 2, 72, 1, "hardswish"},
      {"efficientnet dw3x3 s2", 2, 32, 32, 112, 3, 2, 1, 32, 1, "silu"},
      {"efficientnet dw5x5 s1", 1, 40, 40, 28, 5, 1, 2, 40, 1, "silu"},
      {"replknet dw31x31 @56", 1, 8, 8, 56, 31, 1, 15, 8, 0, "none"},
      {"replknet dw29x29 @28", 1, 16, 16, 28, 29, 1, 14, 16, 1, "none"},
      {"replknet dw27x27 @14", 2, 32, 32, 14, 27, 1, 13, 32, 0, "none"},
      {"replknet dw13x13 @7", 2, 64, 64, 7, 13, 1, 6, 64, 1, "relu"},
      {"vit patch embedding", 1, 3, 768, 224, 16, 16, 0, 1, 0, "none"},
      {"resnet stem 7x7 s2", 1, 3, 64, 224, 7, 2, 3, 1, 1, "relu"},
      {"resnet 1x1", 2, 64, 128, 28, 1, 1, 0, 1, 1, "none"},
  };
  return shapes;
}

bool depthwise(const ConvShape& s) { return s.groups == s.channels && s.out_channels == s.channels; }

Result run(const std::string& impl, const char* dtype, const std::string& p, const char* where = "threads=2") {
  return run_case(parse_case(fmt::format("conv2d/{}/{}/{}/{}", impl, dtype, p, where)), quick_options(2));
}

}  // namespace

TEST(ConvModelShapes, EveryCpuImplIsCorrectOnEveryFamily) {
  for (const ConvShape& s : model_shapes())
    for (const char* dtype : {"fp32", "bf16"})
      for (const char* impl : {"onednn", "opmeter"}) {  // each checked against the fp64 reference
        Result r = run(impl, dtype, params(s));
        const std::string what = fmt::format("{} on {} {}", impl, s.family, dtype);
        if (std::string(impl) == "opmeter" && !depthwise(s)) {
          EXPECT_EQ(r.status, Status::skipped) << what;
          continue;
        }
        if (opmeter::testing::skipped_for_want_of_onednn_bf16(r, std::string(impl) == "onednn", std::string(dtype) == "bf16"))
          continue;
        ASSERT_EQ(r.status, Status::ok) << what << ": " << r.reason;
        ASSERT_TRUE(r.max_error.has_value()) << what;
        EXPECT_LE(*r.max_error, *r.tolerance) << what;
      }
}

TEST(ConvDepthwiseOpmeter, MatchesTheReferenceOnOddShapes) {
  // Every stride and padding, kernels wider than the image (31 at 7), images narrower and wider
  // than a vector block, 1x1 depthwise, BN and activations, both dtypes.
  const std::vector<ConvShape> odd = {
      {"k31 over a 7x7 image", 2, 3, 3, 7, 31, 1, 15, 3, 1, "gelu"},
      {"k3 s3 no padding", 1, 5, 5, 23, 3, 3, 0, 5, 0, "relu6"},
      {"k4 s2 pad 3", 3, 2, 2, 17, 4, 2, 3, 2, 1, "leaky_relu"},
      {"k1", 1, 7, 7, 9, 1, 1, 0, 7, 0, "sigmoid"},
      {"k5 s1 wide row", 1, 2, 2, 150, 5, 1, 2, 2, 1, "silu"},
      {"k7 s2 pad 0", 2, 3, 3, 131, 7, 2, 0, 3, 0, "hardswish"},
      {"k2 s5 pad 4", 1, 4, 4, 13, 2, 5, 4, 4, 0, "gelu_tanh"},
      {"1x1 image, k3 pad 1", 2, 3, 3, 1, 3, 1, 1, 3, 1, "none"},
  };
  for (const ConvShape& s : odd)
    for (const char* dtype : {"fp32", "bf16"}) {
      for (const char* threads : {"threads=1", "threads=2"}) {
        Result r = run("opmeter", dtype, params(s), threads);
        ASSERT_EQ(r.status, Status::ok) << s.family << " " << dtype << ": " << r.reason;
        EXPECT_LE(*r.max_error, *r.tolerance) << s.family << " " << dtype;
      }
    }
}

TEST(ConvDepthwiseOpmeter, RefusesConvolutionsThatAreNotDepthwise) {
  const char* refused[] = {
      "batch=1,channels=8,out_channels=8,image=9,kernel=3,stride=1,padding=1,groups=1,bn=0,act=none",
      "batch=1,channels=8,out_channels=16,image=9,kernel=3,stride=1,padding=1,groups=8,bn=0,act=none",  // multiplier 2
      "batch=1,channels=8,out_channels=8,image=9,kernel=3,stride=1,padding=1,groups=4,bn=0,act=none",
  };
  for (const char* p : refused) {
    Result r = run("opmeter", "fp32", p);
    EXPECT_EQ(r.status, Status::skipped) << p;
    EXPECT_NE(r.reason.find("depthwise only (groups = channels = out_channels)"), std::string::npos) << r.reason;
  }
  Result r = run("opmeter", "fp32", refused[1]);
  EXPECT_NE(r.reason.find("groups=8, channels=8, out_channels=16"), std::string::npos) << r.reason;
}

TEST(ConvModelShapes, TheCheckStaysWithinItsBudgetOnTheLargestShapes) {
  // Full-size layers at batch 64: the check recomputes a sample of rows, never the whole output.
  constexpr double kCheckBudget = double(1u << 27);
  const std::vector<ConvShape> big = {
      {"replknet dw31x31 @56", 64, 128, 128, 56, 31, 1, 15, 128, 1, "none"},
      {"replknet dw13x13 @7", 64, 1024, 1024, 7, 13, 1, 6, 1024, 1, "none"},
      {"vit patch embedding", 64, 3, 768, 224, 16, 16, 0, 1, 0, "none"},
      {"resnet 1x1 2048", 64, 512, 2048, 7, 1, 1, 0, 1, 1, "none"},
      {"resnet stem 7x7 s2", 64, 3, 64, 224, 7, 2, 3, 1, 1, "relu"},
  };
  for (const ConvShape& s : big) {
    conv::ConvOp op;
    op.bind(parse_case(fmt::format("conv2d/onednn/fp32/{}/threads=2", params(s))));
    const auto rows = op.check_rows(1);
    EXPECT_LT(rows.size(), op.out_rows()) << s.family;
    EXPECT_LE(double(rows.size()) * op.reference_row_cost(), kCheckBudget + op.reference_row_cost()) << s.family;
    EXPECT_GE(rows.size(), 2u) << s.family;
  }
}

TEST(ConvDepthwiseCuda, ListedWithoutThePluginWithItsDtypes) {
  const ImplDef* impl = Registry::global().impl("conv2d", "cuda");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->runs_on("cuda"));
  EXPECT_FALSE(impl->runs_on("cpu"));
  EXPECT_EQ(impl->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16}));
}

TEST(ConvDepthwiseCuda, CorrectOnAGpuOnEveryDepthwiseFamilyAndRefusesOthers) {
  auto* p = cuda::plugin();
  if (!p || !p->device(0).ok) GTEST_SKIP() << "no CUDA device: " << (p ? p->device(0).reason : cuda::load_reason());
  std::vector<ConvShape> shapes;
  for (const ConvShape& s : model_shapes())
    if (depthwise(s)) shapes.push_back(s);
  // Full channel counts (the GPU is fast; the check samples rows), the 8x8 tile (images <= 16),
  // a kernel beyond 31, and one whose tile does not fit in shared memory (the direct path).
  shapes.push_back({"replknet dw31x31 @56 full", 4, 128, 128, 56, 31, 1, 15, 128, 1, "none"});
  shapes.push_back({"replknet dw13x13 @7 full", 8, 1024, 1024, 7, 13, 1, 6, 1024, 1, "relu"});
  shapes.push_back({"k31 over 7x7", 2, 3, 3, 7, 31, 1, 15, 3, 1, "gelu"});
  shapes.push_back({"k64 s1", 1, 4, 4, 80, 64, 1, 32, 4, 0, "none"});
  shapes.push_back({"k64 s8: direct path", 1, 4, 4, 70, 64, 8, 0, 4, 0, "silu"});
  shapes.push_back({"k3 s3 odd", 3, 5, 5, 37, 3, 3, 0, 5, 0, "relu6"});
  for (const ConvShape& s : shapes)
    for (const char* dtype : {"fp32", "fp16", "bf16"}) {
      Result r = run("cuda", dtype, params(s), "device=cuda:0");
      ASSERT_EQ(r.status, Status::ok) << s.family << " " << dtype << ": " << r.reason;
      EXPECT_LE(*r.max_error, *r.tolerance) << s.family << " " << dtype;
    }
  Result dense = run("cuda", "fp32", params(model_shapes().back()), "device=cuda:0");
  EXPECT_EQ(dense.status, Status::skipped);
  EXPECT_NE(dense.reason.find("depthwise only"), std::string::npos) << dense.reason;
}
