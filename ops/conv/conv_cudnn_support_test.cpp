// conv2d/cudnn (NCHW) in fp16/bf16: refused before any GPU work where cuDNN proposed no fused engine
// (the H200 triage's check: every such case but the one-channel 1x1 one), naming the impls that run.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/registry.hpp"

using namespace opmeter;

namespace {
Support nchw(const char* dtype, const char* shape) {
  const ImplDef* def = Registry::global().impl("conv2d", "cudnn");
  EXPECT_NE(def, nullptr);
  return def ? def->supports(parse_case(fmt::format("conv2d/cudnn/{}/{}/device=cuda:0", dtype, shape))) : Support::yes();
}
}  // namespace

TEST(ConvCudnnNchw, SixteenBitFusedIsRefusedNamingNhwcAndUnfused) {
  // The triage's shapes that cuDNN 9.14 refused on the H200, in both 16-bit types.
  for (const char* dtype : {"fp16", "bf16"})
    for (const char* shape : {"batch=1,channels=3,out_channels=5,image=11,kernel=1,stride=1,padding=0,groups=1,bn=0,act=gelu",
                              "batch=2,channels=4,out_channels=4,image=7,kernel=3,stride=1,padding=1,groups=4,bn=1,act=none",
                              "batch=2,channels=6,out_channels=4,image=9,kernel=3,stride=2,padding=1,groups=2,bn=1,act=relu"}) {
      Support s = nchw(dtype, shape);
      EXPECT_FALSE(s.ok) << dtype << " " << shape;
      EXPECT_NE(s.reason.find(fmt::format("cuDNN has no fused {} NCHW engine for conv+bias", dtype)), std::string::npos)
          << s.reason;
      EXPECT_NE(s.reason.find("run cudnn_nhwc (the same fusion in NHWC) or cudnn_unfused"), std::string::npos) << s.reason;
    }
  EXPECT_NE(nchw("bf16", "batch=1,channels=3,out_channels=5,image=11,kernel=1,stride=1,padding=0,groups=1,bn=0,act=gelu")
                .reason.find("conv+bias+gelu:"),
            std::string::npos);
  // What ran there stays: the one-channel 1x1 case (NCHW is NHWC too), and fp32 in NCHW.
  EXPECT_TRUE(nchw("fp16", "batch=1,channels=1,out_channels=1,image=1,kernel=1,stride=1,padding=0,groups=1,bn=0,act=none").ok);
  EXPECT_TRUE(nchw("bf16", "batch=1,channels=1,out_channels=1,image=1,kernel=1,stride=1,padding=0,groups=1,bn=0,act=none").ok);
  EXPECT_TRUE(nchw("fp32", "batch=2,channels=6,out_channels=4,image=9,kernel=3,stride=2,padding=1,groups=2,bn=1,act=relu").ok);
  // The NHWC and unfused impls are not concerned.
  for (const char* impl : {"cudnn_nhwc", "cudnn_unfused"}) {
    const ImplDef* def = Registry::global().impl("conv2d", impl);
    ASSERT_NE(def, nullptr) << impl;
    EXPECT_TRUE(def->supports(parse_case(fmt::format(
                                  "conv2d/{}/fp16/batch=2,channels=6,out_channels=4,image=9,kernel=3,stride=2,padding=1,"
                                  "groups=2,bn=1,act=relu/device=cuda:0",
                                  impl)))
                    .ok)
        << impl;
  }
}
