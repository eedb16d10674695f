// PeakDatasheet: moved from tests/peak_test.cpp with the file they test.
#include <gtest/gtest.h>

#include "cuda/datasheet.hpp"
#include "opmeter/case.hpp"
#include "opmeter/dtype.hpp"
#include "opmeter/result.hpp"

using namespace opmeter;

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
