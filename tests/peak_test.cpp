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
#include "src/cuda/kernel_gate.hpp"

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
  EXPECT_DOUBLE_EQ(*h100->tflops(DType::fp64), 67);  // FP64 Tensor Core, at the fp32 clock
  EXPECT_EQ(h100->clock_mhz(DType::fp64), 1980);
  EXPECT_EQ(h100->sms, 132);
  EXPECT_FALSE(h100->source.empty());

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

  // The names NVML reports for the rest of the GPUs.
  auto t4 = peak::datasheet("Tesla T4");
  ASSERT_TRUE(t4);
  EXPECT_DOUBLE_EQ(*t4->tflops(DType::fp16), 65);
  EXPECT_FALSE(t4->tflops(DType::bf16));  // Turing: no bf16, tf32 or fp8 tensor path
  EXPECT_FALSE(t4->tflops(DType::tf32));
  EXPECT_FALSE(t4->tflops(DType::fp8_e4m3));
  EXPECT_EQ(peak::datasheet("NVIDIA B200")->bf16, 2250);
  EXPECT_EQ(peak::datasheet("NVIDIA GeForce RTX 5090")->bandwidth_gbs, 1792);
  EXPECT_EQ(peak::datasheet("NVIDIA A10")->sms, 72);
  EXPECT_FALSE(peak::datasheet("NVIDIA A10G"));  // another GPU, not in the table
}

TEST(PeakDatasheet, EveryEntryIsItsSmsRateAtItsClock) {
  // Independent of the datasheets: SMs x flop per clock per SM (CUDA programming guide's
  // arithmetic throughput table; tensor cores from the architecture whitepapers) x clock.
  struct PerSm {
    const char* name;
    double fp32_flop_per_clk, fp16_tensor_flop_per_clk;  // fp16 with fp32 accumulation
  };
  for (const PerSm& g : {PerSm{"Tesla T4", 128, 1024}, PerSm{"NVIDIA A10", 256, 1024},
                         PerSm{"NVIDIA A100-SXM4-40GB", 128, 2048}, PerSm{"NVIDIA A100-SXM4-80GB", 128, 2048},
                         PerSm{"NVIDIA A100-PCIE-40GB", 128, 2048}, PerSm{"NVIDIA A100 80GB PCIe", 128, 2048},
                         PerSm{"NVIDIA L4", 256, 1024}, PerSm{"NVIDIA L40S", 256, 1024},
                         PerSm{"NVIDIA H100 80GB HBM3", 256, 4096}, PerSm{"NVIDIA H100 PCIe", 256, 4096},
                         PerSm{"NVIDIA H200", 256, 4096}, PerSm{"NVIDIA B200", 256, 8192},
                         PerSm{"NVIDIA GeForce RTX 4090", 256, 512}, PerSm{"NVIDIA GeForce RTX 5090", 256, 512}}) {
    auto s = peak::datasheet(g.name);
    ASSERT_TRUE(s) << g.name;
    EXPECT_EQ(s->name, g.name);
    EXPECT_FALSE(s->source.empty()) << g.name;
    EXPECT_NEAR(s->sms * g.fp32_flop_per_clk * s->fp32_boost_mhz * 1e-6, s->fp32, s->fp32 * 0.015) << g.name;
    // (L40S: its sheet's 362.05 is 1.2% under 142 SMs x 1024 x 2520 MHz.)
    EXPECT_NEAR(s->sms * g.fp16_tensor_flop_per_clk * s->boost_mhz * 1e-6, s->fp16, s->fp16 * 0.015) << g.name;
    EXPECT_GT(s->fp64, 0) << g.name;
    EXPECT_GE(s->int8, s->fp16) << g.name;
    EXPECT_GT(s->bandwidth_gbs, 100) << g.name;
    if (s->bf16 > 0) {  // every GPU after Turing
      EXPECT_EQ(s->fp16, s->bf16) << g.name;
      // tf32 is half the 16-bit rate (3% for sheets that round: L40S 183, B200 2.2 PF sparse)
      EXPECT_NEAR(s->tf32 * 2, s->bf16, s->bf16 * 0.03) << g.name;
    }
  }
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

TEST(PeakDatasheet, TheDatasheetRateAtAResultsClock) {
  Result r;
  r.kase = parse_case("gemm/cublaslt/bf16/M=8,N=8,K=8/device=cuda:0");
  EXPECT_FALSE(peak::datasheet_gflops_at_clock(r, DType::bf16, "NVIDIA B200"));  // no clock read: no rate
  r.details["sm_clock_median_mhz"] = "1700";
  EXPECT_NEAR(*peak::datasheet_gflops_at_clock(r, DType::bf16, "NVIDIA B200"), 2250e3 * 1700 / 1856, 1e-6);
  EXPECT_NEAR(*peak::datasheet_gflops_at_clock(r, DType::fp32, "NVIDIA B200"), 75e3 * 1700 / 1980, 1e-6);
  EXPECT_FALSE(peak::datasheet_gflops_at_clock(r, DType::bf16, "Tesla T4"));  // no such rate
  EXPECT_FALSE(peak::datasheet_gflops_at_clock(r, DType::bf16, "Some Future GPU"));
}

TEST(PeakDatasheet, GemmPeakIsTheDatasheetWhereOwnKernelsFallShort) {
  // Hopper: wgmma reaches 96% of the datasheet at the clock: the measured peak stays the ceiling.
  auto hopper = peak::choose_gpu_ceiling(950e3, 989.4e3);
  ASSERT_TRUE(hopper);
  EXPECT_EQ(hopper->gflops, 950e3);
  EXPECT_FALSE(hopper->from_datasheet);
  // Blackwell: mma.sync reaches a fraction of tcgen05's rate, which cuBLAS uses: the datasheet's.
  auto blackwell = peak::choose_gpu_ceiling(700e3, 2100e3);
  ASSERT_TRUE(blackwell);
  EXPECT_EQ(blackwell->gflops, 2100e3);
  EXPECT_TRUE(blackwell->from_datasheet);
  EXPECT_EQ(blackwell->note, "datasheet rate at the measured SM clock, 2100.0 TFLOP/s (opmeter's own peak kernels reach "
                             "only 33% of it)");
  // A T4: no own kernel ran fp16 (mma.sync m16n8k16 needs 8.0).
  auto t4 = peak::choose_gpu_ceiling(std::nullopt, 61e3);
  ASSERT_TRUE(t4);
  EXPECT_TRUE(t4->from_datasheet);
  EXPECT_EQ(t4->note, "datasheet rate at the measured SM clock, 61.0 TFLOP/s (no own peak kernel ran this dtype here)");
  // An unknown GPU keeps its measured peak; nothing known: no ceiling.
  EXPECT_EQ(peak::choose_gpu_ceiling(700e3, std::nullopt)->gflops, 700e3);
  EXPECT_FALSE(peak::choose_gpu_ceiling(std::nullopt, std::nullopt));
  EXPECT_FALSE(peak::choose_gpu_ceiling(0.0, 0.0));
  // At exactly the shortfall the own peak still counts.
  EXPECT_FALSE(peak::choose_gpu_ceiling(800.0, 1000.0)->from_datasheet);
}
