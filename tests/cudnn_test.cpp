// cuDNN impls (conv2d, batchnorm, attention): listed without the plugin; their module,
// libopmeter_cudnn.so, loaded by the CUDA plugin or refused with the loader's reason (no GPU
// needed for that); on a GPU, each impl checked against the op's fp64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "analysis/fusion.hpp"
#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "tests/result_fixtures.hpp"
#include "ops/tensor/kernels.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;
using tensor::Act;

namespace {

bool gpu_here(std::string& why) {
  auto* p = cuda::plugin();
  if (!p) {
    why = cuda::load_reason();
    return false;
  }
  auto d = p->device(0);
  why = d.reason;
  return d.ok;
}

// What a test's cases came to on a GPU: a case cuDNN refuses (no engine, a NOT_SUPPORTED status)
// is `skipped` with cuDNN's reason, which is a skip, not a failure; a test none of whose cases
// ran is skipped as a whole.
struct Outcome {
  int ran = 0;
  std::vector<std::string> refused;
};

// Runs a case: ok and within tolerance, or skipped with cuDNN's reason (anything else fails).
// Returns the result.
Result expect_correct(const std::string& kase, Outcome& outcome) {
  auto r = run_case(parse_case(kase), quick_options());
  if (r.status == Status::skipped) {
    std::cout << kase << ": skipped: " << r.reason << "\n";
    EXPECT_NE(r.reason.find("cuDNN"), std::string::npos) << kase << ": " << r.reason;
    outcome.refused.push_back(kase + ": " + r.reason);
    return r;
  }
  EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
  if (r.status == Status::ok) {
    ++outcome.ran;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
  }
  return r;
}

}  // namespace

TEST(Cudnn, ImplsAreListedForCudaDevices) {
  for (auto [op, impl] : {std::pair{"conv2d", "cudnn"},
                          {"conv2d", "cudnn_nhwc"},
                          {"conv2d", "cudnn_unfused"},
                          {"batchnorm", "cudnn"},
                          {"attention", "cudnn"}}) {
    const ImplDef* d = Registry::global().impl(op, impl);
    ASSERT_NE(d, nullptr) << op << "/" << impl;
    EXPECT_TRUE(d->runs_on("cuda")) << op << "/" << impl;
    EXPECT_FALSE(d->runs_on("cpu")) << op << "/" << impl;
    EXPECT_FALSE(d->summary.empty());
  }
}

TEST(Cudnn, CaseWithoutAGpuIsSkippedWithAReason) {
  std::string why;
  if (gpu_here(why)) GTEST_SKIP() << "a GPU is here: the GPU tests below cover it";
  for (const char* kase :
       {"attention/cudnn/bf16/batch=1,heads=2,seq=64,head_dim=64,causal=1,stage=full/device=cuda:0",
        "conv2d/cudnn_nhwc/fp16/batch=1,channels=8,out_channels=8,image=8,kernel=3,stride=1,padding=1,"
        "groups=1,bn=1,act=relu/device=cuda:0",
        "conv2d/cudnn_unfused/bf16/batch=1,channels=8,out_channels=8,image=8,kernel=3,stride=1,padding=1,"
        "groups=1,bn=1,act=hardswish/device=cuda:0",
        "batchnorm/cudnn/fp32/batch=2,seq=3,hidden=64/device=cuda:0"}) {
    auto r = run_case(parse_case(kase), quick_options());
    EXPECT_EQ(r.status, Status::skipped) << kase;
    EXPECT_FALSE(r.reason.empty()) << kase;
  }
}

// cuDNN's SDPA takes head_dim a multiple of 8 up to 256: other head_dims are refused before any GPU
// work, naming the impl that runs them (the H200's check: no engine at head_dim 13).
TEST(Cudnn, AttentionRefusesHeadDimsCudnnHasNoEngineFor) {
  const ImplDef* def = Registry::global().impl("attention", "cudnn");
  ASSERT_NE(def, nullptr);
  auto supports = [&](const char* dtype, int d, const char* stage) {
    return def->supports(parse_case(fmt::format(
        "attention/cudnn/{}/batch=2,heads=1,seq=71,head_dim={},causal=1,stage={}/device=cuda:0", dtype, d, stage)));
  };
  for (const char* dtype : {"fp16", "bf16"}) {
    for (int d : {13, 4, 60, 264}) {
      const Support s = supports(dtype, d, "full");
      EXPECT_FALSE(s.ok) << dtype << " " << d;
      EXPECT_NE(s.reason.find("head_dim a multiple of 8, at most 256"), std::string::npos) << s.reason;
      EXPECT_NE(s.reason.find(fmt::format("(head_dim={})", d)), std::string::npos) << s.reason;
      EXPECT_NE(s.reason.find("attention/cuda_unfused"), std::string::npos) << s.reason;
    }
    for (int d : {8, 64, 128, 256}) EXPECT_TRUE(supports(dtype, d, "full").ok) << dtype << " " << d;
  }
  // fp32 and the scores/probs stages are refused by the impl's own reasons, not this one.
  EXPECT_TRUE(supports("fp32", 13, "full").ok);
  EXPECT_TRUE(supports("bf16", 13, "probs").ok);
}

TEST(Cudnn, UnfusedConvTakesEveryActivationAndIsListed) {
  // cuDNN's fused graph has no hardswish; the unfused impl runs it in our kernel.
  const std::string kase =
      "conv2d/{}/fp16/batch=1,channels=8,out_channels=8,image=8,kernel=3,stride=1,padding=1,"
      "groups=1,bn=1,act={}/device=cuda:0";
  for (Act a : tensor::all_acts()) {
    const auto act = std::string(tensor::to_string(a));
    EXPECT_TRUE(Registry::global()
                    .impl("conv2d", "cudnn_unfused")
                    ->supports(parse_case(fmt::format(fmt::runtime(kase), "cudnn_unfused", act)))
                    .ok)
        << act;
  }
  EXPECT_NE(Registry::global().impl("conv2d", "cudnn_unfused")->summary.find("BatchNorm not folded"),
            std::string::npos);
}

using fixtures::timed;

TEST(Cudnn, FusionTablePairsFoldedConvBnWithTheUnfusedSequenceOnTheGpu) {
  const std::string shape = "batch=32,channels=64,out_channels=64,image=56,kernel=3,stride=1,padding=1,groups=1";
  auto kase = [&](const char* impl, const char* rest) {
    return fmt::format("conv2d/{}/fp16/{},{}/device=cuda:0", impl, shape, rest);
  };
  std::vector<Result> results = {timed(kase("cudnn_unfused", "bn=1,act=relu"), 1.5e-3),
                                 timed(kase("cudnn", "bn=1,act=relu"), 1.0e-3),
                                 timed(kase("cudnn_nhwc", "bn=1,act=relu"), 0.8e-3),
                                 timed(kase("cudnn", "bn=1,act=silu"), 1.0e-3),           // no silu baseline
                                 timed(kase("cudnn_unfused", "bn=0,act=relu"), 1.2e-3)};  // no fused beside it
  auto rows = fusion_rows(results);
  ASSERT_EQ(rows.size(), 2u);
  for (auto& row : rows) {
    EXPECT_EQ(row.pattern, "conv+bn+relu");
    EXPECT_EQ(row.unfused_impl, "cudnn_unfused");
    EXPECT_DOUBLE_EQ(row.unfused_s, 1.5e-3);
    // BN and relu each read and rewrite y (32 x 64 x 56 x 56 fp16); BN reads its 4 vectors.
    const double y = 32.0 * 64 * 56 * 56 * 2;
    EXPECT_DOUBLE_EQ(row.unfused_bytes - row.fused_bytes, 2 * 2 * y + 16 * 64);
  }
  EXPECT_EQ(rows[0].fused_impl == "cudnn" ? rows[1].fused_impl : rows[0].fused_impl, "cudnn_nhwc");
}

TEST(Cudnn, GpuConvFusionConfigPutsTheUnfusedBesideBothFusedImpls) {
  auto out = cli("run " + std::string(opmeter_source_dir()) + "/bench/gpu-conv-fusion.yaml --dry-run");
  ASSERT_EQ(out.code, 0) << out.text;
  for (const char* impl : {"cudnn", "cudnn_nhwc", "cudnn_unfused"})
    EXPECT_NE(out.text.find(fmt::format("conv2d/{}/fp16/batch=32,channels=64,out_channels=64,image=56,kernel=3,stride=1,"
                                        "padding=1,groups=1,bn=1,act=relu/device=cuda:0",
                                        impl)),
              std::string::npos)
        << impl << " not in:\n"
        << out.text;
}

TEST(Cudnn, ModuleIsBuiltAndLoadsWithoutAGpu) {
  if (opmeter_cudnn_module()[0] == '\0') GTEST_SKIP() << "this build has no cuDNN module (libcudnn not found)";
  ASSERT_TRUE(std::filesystem::exists(opmeter_cudnn_module())) << opmeter_cudnn_module();
  auto* p = cuda::plugin();
  ASSERT_NE(p, nullptr) << cuda::load_reason();
  // versions() loads the module (a dlopen, no GPU work) and records cuDNN's run-time version.
  auto v = p->versions();
  ASSERT_TRUE(v.contains("cudnn")) << v.dump();
  EXPECT_TRUE(std::regex_match(v["cudnn"].get<std::string>(), std::regex(R"(9\.\d+\.\d+)"))) << v.dump();
}

// A fresh process each (gtest re-runs this binary for the statement), so that the plugin loads
// the module anew, from the path the environment gives.
void expect_module_refused(const std::string& module_path, const std::string& reason_part) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("OPMETER_CUDNN_MODULE", module_path.c_str(), 1);
        auto* p = cuda::plugin();
        if (!p) std::exit(3);
        auto v = p->versions();
        std::string reason = v.value("cudnn_unavailable", "");
        auto s = p->supports(parse_case("attention/cudnn/bf16/batch=1,heads=1,seq=8,head_dim=8,causal=0,stage=full/device=cuda:0"));
        bool ok = !v.contains("cudnn") && reason.find(reason_part) != std::string::npos && !s.ok && s.reason == reason;
        if (!ok) std::cerr << "versions: " << v.dump() << "; supports: " << s.reason;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Cudnn, MissingModuleSkipsCudnnCasesWithTheReason) {
  if (!cuda::plugin()) GTEST_SKIP() << "no CUDA plugin: " << cuda::load_reason();
  expect_module_refused("/nonexistent/libopmeter_cudnn.so", "was not found");
}

TEST(Cudnn, ModuleThatDoesNotLoadSkipsCudnnCasesWithDlerror) {
  if (!cuda::plugin()) GTEST_SKIP() << "no CUDA plugin: " << cuda::load_reason();
  // One fixed name: the re-run process writes the same file before it loads it.
  auto path = std::filesystem::temp_directory_path() / "opmeter_test_not_a_cudnn_module.so";
  std::ofstream(path) << "not an ELF file\n";
  expect_module_refused(path.string(), "does not load");
  std::filesystem::remove(path);
}

TEST(Cudnn, AttentionIsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  Outcome outcome;
  for (const char* dtype : {"fp16", "bf16"})
    for (int causal : {0, 1})
      for (const char* shape : {"batch=2,heads=3,seq=128,head_dim=64", "batch=1,heads=2,seq=512,head_dim=128"})
        expect_correct(fmt::format("attention/cudnn/{}/{},causal={},stage=full/device=cuda:0", dtype, shape, causal), outcome);
  // What cuDNN's fused attention does not do is skipped with the reason.
  for (const char* kase : {"attention/cudnn/fp32/batch=1,heads=1,seq=64,head_dim=64,causal=0,stage=full/device=cuda:0",
                           "attention/cudnn/bf16/batch=1,heads=1,seq=64,head_dim=64,causal=0,stage=probs/device=cuda:0"}) {
    auto r = run_case(parse_case(kase), quick_options());
    EXPECT_EQ(r.status, Status::skipped) << kase;
    EXPECT_NE(r.reason.find("cuDNN"), std::string::npos) << r.reason;
  }
  if (outcome.ran == 0) {
    // cuDNN 9 has fused flash attention engines for fp16 and bf16 at these head_dims on compute
    // capability 8.0 and newer (what the impl's support asks): no engine for any of these graphs is
    // our graph's fault, as on the H200 with 9.14 and 9.19 (2026-11-27: no softmax statistic).
    const std::string version = cuda::plugin()->versions().value("cudnn", "");
    const bool no_engine = std::all_of(outcome.refused.begin(), outcome.refused.end(),
                                       [](const std::string& r) { return r.find("no engine") != std::string::npos; });
    if (version.rfind("9.", 0) == 0 && no_engine)
      FAIL() << "cuDNN " << version << " proposed no engine for any fused attention graph: " << outcome.refused.front();
    GTEST_SKIP() << "cuDNN refused every fused attention graph here: " << outcome.refused.front();
  }
}

TEST(Cudnn, Conv2dIsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  const char* shapes[] = {"batch=2,channels=64,out_channels=64,image=14,kernel=3,stride=1,padding=1,groups=1,bn=1,act=relu",
                          "batch=2,channels=32,out_channels=64,image=15,kernel=1,stride=2,padding=0,groups=1,bn=0,act=none",
                          "batch=2,channels=32,out_channels=32,image=14,kernel=3,stride=1,padding=1,groups=32,bn=1,act=silu"};
  Outcome outcome;
  for (const char* dtype : {"fp16", "bf16"})
    for (const char* shape : shapes) {
      expect_correct(fmt::format("conv2d/cudnn_nhwc/{}/{}/device=cuda:0", dtype, shape), outcome);
      expect_correct(fmt::format("conv2d/cudnn/{}/{}/device=cuda:0", dtype, shape), outcome);
    }
  // fp32 is fp32: an engine on tensor cores (TF32) is never taken, so cuDNN either finds a true
  // fp32 engine or the case is skipped with cuDNN's reason.
  for (const char* impl : {"cudnn", "cudnn_nhwc"}) {
    auto r = expect_correct(fmt::format("conv2d/{}/fp32/{}/device=cuda:0", impl, shapes[0]), outcome);
    if (r.status == Status::ok) {
      EXPECT_EQ(r.details["engine"].find("tensor_core"), std::string::npos) << r.details["engine"];
    }
  }
  auto r = run_case(parse_case("conv2d/cudnn_nhwc/fp16/batch=1,channels=8,out_channels=8,image=8,kernel=3,stride=1,padding=1,"
                               "groups=1,bn=0,act=hardswish/device=cuda:0"),
                    quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("hardswish"), std::string::npos) << r.reason;
  if (outcome.ran == 0) GTEST_SKIP() << "cuDNN refused every fused convolution graph here: " << outcome.refused.front();
}

TEST(Cudnn, Conv2dUnfusedIsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  // Odd shapes: 3 input channels, 7x7 and 15x15 planes (odd sizes, a warp per plane), stride 2,
  // one image, depthwise; every activation (ours, so none is refused), with and without BN.
  const char* shapes[] = {"batch=1,channels=3,out_channels=5,image=15,kernel=3,stride=2,padding=1,groups=1",
                          "batch=2,channels=64,out_channels=64,image=14,kernel=3,stride=1,padding=1,groups=1",
                          "batch=3,channels=16,out_channels=24,image=7,kernel=1,stride=1,padding=0,groups=1",
                          "batch=2,channels=32,out_channels=32,image=14,kernel=3,stride=1,padding=1,groups=32"};
  Outcome outcome;
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (const char* shape : shapes)
      for (int bn : {0, 1})
        for (Act a : {Act::none, Act::relu, Act::relu6, Act::leaky_relu, Act::gelu, Act::gelu_tanh, Act::silu,
                      Act::sigmoid, Act::hardswish})
          expect_correct(fmt::format("conv2d/cudnn_unfused/{}/{},bn={},act={}/device=cuda:0", dtype, shape, bn,
                                     tensor::to_string(a)),
                         outcome);
  if (outcome.ran == 0) GTEST_SKIP() << "cuDNN refused every convolution here: " << outcome.refused.front();
}

TEST(Cudnn, BatchnormIsCorrectOnAGpu) {
  std::string why;
  if (!gpu_here(why)) GTEST_SKIP() << "no CUDA device: " << why;
  Outcome outcome;
  for (const char* shape : {"batch=1,seq=1,hidden=8", "batch=4,seq=33,hidden=1000", "batch=8,seq=512,hidden=4096"})
    for (const char* dtype : {"fp32", "fp16", "bf16"})
      expect_correct(fmt::format("batchnorm/cudnn/{}/{}/device=cuda:0", dtype, shape), outcome);
  // cuDNN's legacy BatchNorm takes fp32 and fp16 everywhere: those are never refused.
  for (const std::string& refusal : outcome.refused) EXPECT_NE(refusal.find("/bf16/"), std::string::npos) << refusal;
}
