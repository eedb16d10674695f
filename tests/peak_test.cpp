// The peak op's GPU side from the CPU: kernel validation and its messages, the work model of the
// CUDA kernels, which GPUs run which kernel, and skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "config/config.hpp"
#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "cuda/datasheet.hpp"
#include "ops/peak/peak.hpp"
#include "tests/case_problem.hpp"
#include "opmeter/cuda/kernel_gate.hpp"

using namespace opmeter;

namespace {

std::string problem(const std::string& text) { return opmeter::testing::case_problem(text); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

double work_flops(const std::string& text) {
  auto c = parse_case(text);
  return Registry::global().op("peak")->work(c).flops;
}

}  // namespace

TEST(PeakCuda, TensorKernelCaseStringsAreValidAndRoundTrip) {
  for (const char* dtype : {"tf32", "fp16", "bf16", "fp8", "int8"})
    for (const char* kernel : {"mma", "wgmma"}) {
      auto text = fmt::format("peak/cuda/{}/kernel={}/device=cuda:0", dtype, kernel);
      EXPECT_EQ(problem(text), "ok") << text;
      EXPECT_EQ(parse_case(text).to_string(), text);
    }
  EXPECT_EQ(problem("peak/cuda/fp32/kernel=fma/device=cuda:0"), "ok");
  EXPECT_EQ(problem("peak/opmeter/bf16/kernel=fma/threads=2"), "ok");  // the CPU's bf16 dot product peak
}

TEST(PeakCuda, BadKernelsGetAClearMessage) {
  auto unknown = problem("peak/cuda/bf16/kernel=tcgen05/device=cuda:0");
  EXPECT_TRUE(has(unknown, "peak kernel 'tcgen05' unknown: expected fma, mma, wgmma or amx")) << unknown;
  auto fma_bf16 = problem("peak/cuda/bf16/kernel=fma/device=cuda:0");
  EXPECT_TRUE(has(fma_bf16, "fma on CUDA is fp32 only; bf16 runs on tensor cores: kernel=mma or kernel=wgmma")) << fma_bf16;
  auto mma_fp32 = problem("peak/cuda/fp32/kernel=mma/device=cuda:0");
  EXPECT_TRUE(has(mma_fp32, "fp32 uses kernel=fma")) << mma_fp32;
  auto wgmma_cpu = problem("peak/opmeter/bf16/kernel=wgmma/threads=1");
  EXPECT_TRUE(has(wgmma_cpu, "peak kernel wgmma runs on CUDA devices")) << wgmma_cpu;
  auto fp64 = problem("peak/cuda/fp64/kernel=fma/device=cuda:0");
  EXPECT_TRUE(has(fp64, "peak on CUDA has no fp64 kernel")) << fp64;
  EXPECT_THROW(validate_case(parse_case("peak/cuda/int8/kernel=fma/device=cuda:0")), CaseError);
}

TEST(PeakCuda, WorkPerCallIsExactAndDeviceIndependent) {
  // fma: 32768 blocks x 256 threads x 8 chains x 256 iterations x 2.
  EXPECT_EQ(work_flops("peak/cuda/fp32/kernel=fma/device=cuda:0"), 34359738368.0);
  // mma: 2^16 warps x 8 chains x 256 instructions = 2^27 instructions of 2*16*8*K flops.
  const double mma_insts = 8192.0 * 8 * 8 * 64 * 4;
  EXPECT_EQ(work_flops("peak/cuda/tf32/kernel=mma/device=cuda:0"), mma_insts * 2 * 16 * 8 * 8);
  EXPECT_EQ(work_flops("peak/cuda/bf16/kernel=mma/device=cuda:0"), 549755813888.0);  // 2^39
  EXPECT_EQ(work_flops("peak/cuda/fp16/kernel=mma/device=cuda:3"), 549755813888.0);
  EXPECT_EQ(work_flops("peak/cuda/fp8/kernel=mma/device=cuda:0"), 1099511627776.0);  // 2^40
  EXPECT_EQ(work_flops("peak/cuda/int8/kernel=mma/device=cuda:0"), 1099511627776.0);
  // wgmma: 16896 blocks x 128 instructions of 2*64*256*K.
  EXPECT_EQ(work_flops("peak/cuda/tf32/kernel=wgmma/device=cuda:0"), 16896.0 * 128 * 262144);
  EXPECT_EQ(work_flops("peak/cuda/bf16/kernel=wgmma/device=cuda:0"), 1133871366144.0);
  EXPECT_EQ(work_flops("peak/cuda/fp16/kernel=wgmma/device=cuda:0"), 1133871366144.0);
  EXPECT_EQ(work_flops("peak/cuda/fp8/kernel=wgmma/device=cuda:0"), 2267742732288.0);
  EXPECT_EQ(work_flops("peak/cuda/int8/kernel=wgmma/device=cuda:0"), 2267742732288.0);
  auto w = Registry::global().op("peak")->work(parse_case("peak/cuda/bf16/kernel=wgmma/device=cuda:0"));
  EXPECT_EQ(w.bytes_read, 0);
  EXPECT_EQ(w.bytes_written, 0);
}

TEST(PeakCuda, WhichGpusRunWhichKernel) {
  auto group = [](const char* s) { return peak::cuda_kernels(parse_case(s)); };
  EXPECT_EQ(group("peak/cuda/fp32/kernel=fma/device=cuda:0"), cuda::Kernels::plain);
  EXPECT_EQ(group("peak/cuda/bf16/kernel=mma/device=cuda:0"), cuda::Kernels::mma);
  EXPECT_EQ(group("peak/cuda/int8/kernel=mma/device=cuda:0"), cuda::Kernels::mma);
  EXPECT_EQ(group("peak/cuda/fp8/kernel=mma/device=cuda:0"), cuda::Kernels::fp8_mma);
  EXPECT_EQ(group("peak/cuda/bf16/kernel=wgmma/device=cuda:0"), cuda::Kernels::wgmma);

  // With the plugin's architectures: a T4 runs the FMA chains, not mma.sync; an A100 no fp8;
  // only Hopper wgmma.
  const auto plain = cuda::parse_cuda_architectures("75-real;80-real;90-real;100-real;120-real;120-virtual");
  const auto mma = cuda::parse_cuda_architectures("80-real;86-real;89-real;90-real;100-real;120-real;120-virtual");
  const auto sm90a = cuda::parse_cuda_architectures("90a-real");
  auto runs = [&](cuda::Kernels k, int cc) {
    const auto& built = k == cuda::Kernels::plain ? plain : k == cuda::Kernels::wgmma ? sm90a : mma;
    return cuda::kernel_runs_on(cuda::needs_of(k), built, cc);
  };
  EXPECT_TRUE(runs(cuda::Kernels::plain, 75).ok);
  EXPECT_EQ(runs(cuda::Kernels::mma, 75).reason,
            "mma.sync m16n8k16 (fp16/bf16), ldmatrix and cp.async needs compute capability 8.0 or newer; this GPU is sm_75");
  EXPECT_TRUE(runs(cuda::Kernels::mma, 86).ok);
  EXPECT_EQ(runs(cuda::Kernels::fp8_mma, 80).reason, "fp8 (e4m3) mma.sync needs compute capability 8.9 or newer; this GPU is sm_80");
  EXPECT_TRUE(runs(cuda::Kernels::fp8_mma, 89).ok);
  EXPECT_TRUE(runs(cuda::Kernels::wgmma, 90).ok);
  EXPECT_EQ(runs(cuda::Kernels::wgmma, 89).reason, "wgmma (sm_90a code) needs compute capability 9.0 exactly; this GPU is sm_89");
  EXPECT_FALSE(runs(cuda::Kernels::wgmma, 100).ok);  // Blackwell has no wgmma
}

TEST(PeakCuda, TheConfigPlansEachDtypesKernels) {
  auto plan = load_config_text("ops: [peak]\ndevice: cuda:0\ndtypes: [fp32, bf16, fp8]\n", "t.yaml", 2);
  std::vector<std::string> got;
  for (auto& c : plan.cases) got.push_back(c.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"peak/cuda/fp32/kernel=fma/device=cuda:0", "peak/cuda/bf16/kernel=mma/device=cuda:0",
                                           "peak/cuda/bf16/kernel=wgmma/device=cuda:0",
                                           "peak/cuda/fp8/kernel=mma/device=cuda:0", "peak/cuda/fp8/kernel=wgmma/device=cuda:0"}));
  auto cpu = load_config_text("ops: [peak]\ndtypes: [bf16]\n", "t.yaml", 2);
  ASSERT_GE(cpu.cases.size(), 1u);  // and kernel=amx on an AMX CPU (PeakAmx.*)
  EXPECT_EQ(cpu.cases[0].to_string(), "peak/opmeter/bf16/kernel=fma/threads=2");
}

TEST(PeakCuda, WithoutAGpuTensorPeaksAreSkippedWithTheReason) {
  if (auto* p = cuda::plugin(); p && p->device(0).ok) GTEST_SKIP() << "a GPU is present: CudaDevice.* cover it";
  RunOptions o;
  for (const char* text : {"peak/cuda/bf16/kernel=wgmma/device=cuda:0", "peak/cuda/int8/kernel=mma/device=cuda:0"}) {
    auto r = run_case(parse_case(text), o);
    EXPECT_EQ(r.status, Status::skipped) << text << ": " << r.reason;
    EXPECT_FALSE(r.reason.empty()) << text;
    EXPECT_EQ(r.gflops, 0) << text;
  }
}

TEST(PeakCuda, PeakResultsAreComparedWithTheDatasheetAtTheirClock) {
  Result r;
  r.kase = parse_case("peak/cuda/bf16/kernel=wgmma/device=cuda:0");
  r.status = Status::ok;
  r.gflops = 985.8e3;
  r.details["sm_clock_median_mhz"] = "1890";        // NVML, preferred
  r.details["sm_clock_probe_median_mhz"] = "2010";  // an older build's on-GPU probe, read high: ignored
  compare_with_datasheet(r, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.details["datasheet_tflops"], "989.4 at 1830 MHz");
  EXPECT_EQ(r.details["datasheet_at_clock_tflops"], "1021.8 at 1890 MHz");  // 989.4 x 1890 / 1830 = 1021.84
  EXPECT_EQ(r.details["pct_of_datasheet_at_clock"], "96.5");

  Result unknown = r;
  unknown.details.clear();
  compare_with_datasheet(unknown, "Some Future GPU");
  EXPECT_EQ(unknown.details["datasheet"], "no datasheet known for 'Some Future GPU'");
  EXPECT_FALSE(unknown.details.count("pct_of_datasheet_at_clock"));
}

