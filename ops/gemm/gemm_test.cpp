// The GEMM work model's bytes for each element type, on the CPU and on CUDA, from the types each
// library reads and writes (gemm.hpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "tests/work_of.hpp"

using namespace opmeter;

namespace {

Work work_of(const std::string& impl, const char* dtype, const std::string& settings) {
  return opmeter::testing::work_of_case(fmt::format("gemm/{}/{}/M=64,N=48,K=32/{}", impl, dtype, settings));
}
Work cpu(const char* dtype) { return work_of("onednn", dtype, "threads=1"); }
Work cuda(const char* dtype) { return work_of("cublaslt", dtype, "device=cuda:0"); }

}  // namespace

// C (64 x 48) = A (64 x 32) B^T (B stored 48 x 32): 64 x 48 dot products of length 32, a multiply
// and an add each: 2 x 64 x 48 x 32 = 196608 flops in every type. Bytes: A and B read once in
// their stored type, C written once in its type:
//   A + B = 64 x 32 + 48 x 32 = 3584 elements; C = 64 x 48 = 3072 elements.
TEST(GemmOp, WorkReadsAAndBAndWritesCInTheirStoredTypes) {
  const double ab = 64 * 32 + 48 * 32, c = 64 * 48;
  for (const char* dtype : {"fp32", "bf16", "int8", "fp64"}) EXPECT_DOUBLE_EQ(cpu(dtype).flops, 196608) << dtype;
  // CPU (oneDNN): fp32 in and out; bf16 in, fp32 out; u8 x s8 in, s32 out; fp64 in and out.
  EXPECT_DOUBLE_EQ(cpu("fp32").bytes_read, ab * 4);    // 14336
  EXPECT_DOUBLE_EQ(cpu("fp32").bytes_written, c * 4);  // 12288
  EXPECT_DOUBLE_EQ(cpu("bf16").bytes_read, ab * 2);    // 7168
  EXPECT_DOUBLE_EQ(cpu("bf16").bytes_written, c * 4);  // fp32 C: 12288
  EXPECT_DOUBLE_EQ(cpu("int8").bytes_read, ab * 1);    // 3584
  EXPECT_DOUBLE_EQ(cpu("int8").bytes_written, c * 4);  // s32 C: 12288
  EXPECT_DOUBLE_EQ(cpu("fp64").bytes_read, ab * 8);
  EXPECT_DOUBLE_EQ(cpu("fp64").bytes_written, c * 8);
  // CUDA (cuBLASLt): 16-bit types write C in the input type (as torch.matmul); fp8 e4m3 writes
  // bf16; s8 x s8 accumulates and writes s32; tf32 reads and writes fp32 storage.
  EXPECT_DOUBLE_EQ(cuda("bf16").bytes_read, ab * 2);
  EXPECT_DOUBLE_EQ(cuda("bf16").bytes_written, c * 2);  // 6144
  EXPECT_DOUBLE_EQ(cuda("fp16").bytes_written, c * 2);
  EXPECT_DOUBLE_EQ(cuda("fp8").bytes_read, ab * 1);
  EXPECT_DOUBLE_EQ(cuda("fp8").bytes_written, c * 2);
  EXPECT_DOUBLE_EQ(cuda("int8").bytes_read, ab * 1);
  EXPECT_DOUBLE_EQ(cuda("int8").bytes_written, c * 4);
  EXPECT_DOUBLE_EQ(cuda("tf32").bytes_read, ab * 4);
  EXPECT_DOUBLE_EQ(cuda("tf32").bytes_written, c * 4);
}
