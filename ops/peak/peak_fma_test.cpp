// The CPU peak kernels' operations per loop iteration, counted from the instruction each chain
// issues, and the peak op's work per call on this CPU.
#include <gtest/gtest.h>

#include "opmeter/registry.hpp"
#include "ops/peak/peak.hpp"

using namespace opmeter;

// An iteration issues one instruction on each of the 12 independent chains (peak.hpp: kChains).
// Per instruction, over its lanes:
//   vfmadd (fp32, fp64): a multiply and an add per lane: 2; 512 bits hold 16 fp32 or 8 fp64
//     lanes, 256 bits 8 or 4;
//   vdpbf16ps: each fp32 lane accumulates a pair of bf16 products: 2 multiplies + 2 adds = 4;
//   vpdpbusd (AVX-512 VNNI, AVX-VNNI): each s32 lane accumulates four u8 x s8 products:
//     4 multiplies + 4 adds = 8.
TEST(PeakCpu, OpsPerIterationFollowTheInstructions) {
  const double chains = 12;
  EXPECT_EQ(peak::avx512_kernel(DType::fp32)->ops_per_iter, chains * 16 * 2);  // 384
  EXPECT_EQ(peak::avx512_kernel(DType::fp64)->ops_per_iter, chains * 8 * 2);   // 192
  EXPECT_EQ(peak::avx512_kernel(DType::bf16)->ops_per_iter, chains * 16 * 4);  // 768
  EXPECT_EQ(peak::avx512_kernel(DType::int8)->ops_per_iter, chains * 16 * 8);  // 1536
  EXPECT_EQ(peak::avx2_kernel(DType::fp32)->ops_per_iter, chains * 8 * 2);     // 192
  EXPECT_EQ(peak::avx2_kernel(DType::fp64)->ops_per_iter, chains * 4 * 2);     // 96
  EXPECT_EQ(peak::avx2_kernel(DType::int8)->ops_per_iter, chains * 8 * 8);     // 768
  EXPECT_FALSE(peak::avx2_kernel(DType::bf16));                                // no 256-bit bf16 dot product kernel
}

// Work per call: each of the threads runs kIters = 2^16 iterations of the widest kernel the CPU
// has. Which one that is, asked of the CPU directly (not through opmeter's cpu_info).
TEST(PeakCpu, WorkPerCallIsThreadsTimesIterationsTimesTheWidestKernel) {
  __builtin_cpu_init();
  const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx512 && !avx2) GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 with FMA";
  const double per_iter = avx512 ? 12 * 16 * 2 : 12 * 8 * 2;  // fp32 FMA lanes x 2
  const OpDef* op = Registry::global().op("peak");
  ASSERT_NE(op, nullptr);
  auto w = op->work(parse_case("peak/opmeter/fp32/kernel=fma/threads=3"));
  EXPECT_EQ(w.flops, 3.0 * 65536 * per_iter);
  EXPECT_EQ(w.bytes(), 0);
  auto fp64 = op->work(parse_case("peak/opmeter/fp64/kernel=fma/threads=2"));
  EXPECT_EQ(fp64.flops, 2.0 * 65536 * per_iter / 2);  // half the lanes
}
