// The peak op's GPU side from the CPU: kernel validation and its messages, the work model of the
// CUDA kernels, which GPUs run which kernel, the datasheet table, and skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "opmeter/config.hpp"
#include "cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/runner.hpp"
#include "ops/peak/datasheet.hpp"
#include "ops/peak/peak.hpp"

using namespace opmeter;

namespace {

// The CaseError message of a case string, or "ok".
std::string problem(const std::string& text) {
  try {
    validate_case(parse_case(text));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "ok";
}

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
  EXPECT_TRUE(has(unknown, "peak kernel 'tcgen05' unknown: expected fma, mma or wgmma")) << unknown;
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
  auto c = [](const char* s) { return parse_case(s); };
  auto wg = c("peak/cuda/bf16/kernel=wgmma/device=cuda:0");
  EXPECT_TRUE(peak::cuda_support(wg, 90).ok);
  auto ada = peak::cuda_support(wg, 89);
  EXPECT_FALSE(ada.ok);
  EXPECT_EQ(ada.reason, "wgmma needs compute capability 9.0 (this GPU is 8.9)");
  EXPECT_FALSE(peak::cuda_support(wg, 100).ok);  // Blackwell has no wgmma
  EXPECT_FALSE(peak::cuda_support(wg, 80).ok);

  auto fp8 = c("peak/cuda/fp8/kernel=mma/device=cuda:0");
  EXPECT_TRUE(peak::cuda_support(fp8, 89).ok);
  EXPECT_TRUE(peak::cuda_support(fp8, 90).ok);
  auto a100 = peak::cuda_support(fp8, 80);
  EXPECT_FALSE(a100.ok);
  EXPECT_EQ(a100.reason, "fp8 mma.sync (m16n8k32 e4m3) needs compute capability 8.9 (this GPU is 8.0)");
  EXPECT_TRUE(peak::cuda_support(c("peak/cuda/bf16/kernel=mma/device=cuda:0"), 80).ok);
  EXPECT_TRUE(peak::cuda_support(c("peak/cuda/int8/kernel=mma/device=cuda:0"), 86).ok);
  auto turing = peak::cuda_support(c("peak/cuda/fp32/kernel=fma/device=cuda:0"), 75);
  EXPECT_FALSE(turing.ok);
  EXPECT_TRUE(has(turing.reason, "8.0 and newer (this GPU is 7.5)")) << turing.reason;
}

TEST(PeakCuda, TheConfigPlansEachDtypesKernels) {
  auto plan = load_config_text("ops: [peak]\ndevice: cuda:0\ndtypes: [fp32, bf16, fp8]\n", "t.yaml", 2);
  std::vector<std::string> got;
  for (auto& c : plan.cases) got.push_back(c.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"peak/cuda/fp32/kernel=fma/device=cuda:0", "peak/cuda/bf16/kernel=mma/device=cuda:0",
                                           "peak/cuda/bf16/kernel=wgmma/device=cuda:0",
                                           "peak/cuda/fp8/kernel=mma/device=cuda:0", "peak/cuda/fp8/kernel=wgmma/device=cuda:0"}));
  auto cpu = load_config_text("ops: [peak]\ndtypes: [bf16]\n", "t.yaml", 2);
  ASSERT_EQ(cpu.cases.size(), 1u);
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

TEST(PeakDatasheet, KnownGpusByTheirCudaName) {
  auto h100 = peak::datasheet("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(h100);
  EXPECT_DOUBLE_EQ(*h100->tflops(DType::bf16), 989.4);
  EXPECT_DOUBLE_EQ(*h100->tflops(DType::fp8_e4m3), 1978.9);
  EXPECT_DOUBLE_EQ(*h100->tflops(DType::int8), 1978.9);
  EXPECT_DOUBLE_EQ(*h100->tflops(DType::tf32), 494.7);
  EXPECT_DOUBLE_EQ(*h100->tflops(DType::fp32), 66.9);
  EXPECT_EQ(h100->boost_mhz, 1830);
  EXPECT_EQ(h100->clock_mhz(DType::fp32), 1980);
  EXPECT_EQ(h100->clock_mhz(DType::bf16), 1830);
  EXPECT_EQ(h100->bandwidth_gbs, 3352);
  EXPECT_FALSE(h100->tflops(DType::fp64));  // not in the table

  auto a100 = peak::datasheet(" NVIDIA A100-SXM4-80GB ");  // spaces around are ignored
  ASSERT_TRUE(a100);
  EXPECT_FALSE(a100->tflops(DType::fp8_e4m3));  // Ampere has no fp8 tensor cores
  EXPECT_DOUBLE_EQ(*a100->tflops(DType::fp16), 312);
  EXPECT_EQ(a100->bandwidth_gbs, 2039);
  EXPECT_EQ(peak::datasheet("NVIDIA A100-SXM4-40GB")->bandwidth_gbs, 1555);

  EXPECT_FALSE(peak::datasheet("NVIDIA H100"));  // no guessing by prefix
  EXPECT_FALSE(peak::datasheet("NVIDIA L"));
  EXPECT_TRUE(peak::datasheet("NVIDIA L4"));
  EXPECT_NE(peak::datasheet("NVIDIA L4")->fp8, peak::datasheet("NVIDIA L40S")->fp8);
  EXPECT_FALSE(peak::datasheet(""));
}

TEST(PeakDatasheet, EveryEntryIsConsistent) {
  for (const char* name : {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA A100-SXM4-40GB",
                           "NVIDIA A100-SXM4-80GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA L40S", "NVIDIA L4",
                           "NVIDIA GeForce RTX 4090"}) {
    auto s = peak::datasheet(name);
    ASSERT_TRUE(s) << name;
    EXPECT_EQ(s->name, name);
    EXPECT_EQ(s->fp16, s->bf16) << name;
    // tf32 is half the 16-bit rate everywhere (2% for the L40S sheet: 183 vs 362.05).
    EXPECT_NEAR(s->tf32 * 2, s->bf16, s->bf16 * 0.02) << name;
    EXPECT_GE(s->int8, s->bf16) << name;
    EXPECT_GT(s->fp32, 0) << name;
    EXPECT_GT(s->boost_mhz, 1000) << name;
    EXPECT_GT(s->bandwidth_gbs, 100) << name;
  }
  // The H100 SXM5's tensor figure is its SMs' rate at the clock the table gives: 132 x 4096 x 1830 MHz.
  auto h100 = *peak::datasheet("NVIDIA H100 80GB HBM3");
  EXPECT_NEAR(132.0 * 4096 * h100.boost_mhz * 1e6 / 1e12, h100.bf16, 0.1);
  EXPECT_NEAR(132.0 * 256 * h100.fp32_boost_mhz * 1e6 / 1e12, h100.fp32, 0.1);
}

TEST(PeakDatasheet, RatesScaleWithTheMeasuredClock) {
  EXPECT_DOUBLE_EQ(peak::at_clock(989.4, 1830, 1830), 989.4);
  EXPECT_NEAR(peak::at_clock(989.4, 1755, 1830), 948.85, 0.01);
  EXPECT_DOUBLE_EQ(peak::at_clock(312, 705, 1410), 156);
  EXPECT_DOUBLE_EQ(peak::at_clock(312, 1410, 0), 0);  // unknown boost: no rate rather than inf
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
