// Which of opmeter's CUDA kernels run on which GPU, from the CPU: CMake's architecture lists read
// back, binary compatibility within a major version, PTX, 'a' code, and the skip messages.
#include <gtest/gtest.h>

#include "opmeter/cuda/kernel_gate.hpp"

using namespace opmeter::cuda;

TEST(KernelGate, ReadsCmakeArchitectureLists) {
  auto b = parse_cuda_architectures("75-real;80-real;86-real;120-real;120-virtual");
  EXPECT_EQ(b.sass, (std::vector<int>{75, 80, 86, 120}));
  EXPECT_EQ(b.ptx, 120);
  EXPECT_FALSE(b.arch_specific);
  EXPECT_EQ(parse_cuda_architectures("75-real,80-real,120-virtual").sass, (std::vector<int>{75, 80}));  // as compiled in
  auto both = parse_cuda_architectures("90;80-real");  // a plain number is SASS and PTX
  EXPECT_EQ(both.sass, (std::vector<int>{80, 90}));
  EXPECT_EQ(both.ptx, 90);
  auto a = parse_cuda_architectures("90a-real");
  EXPECT_EQ(a.sass, (std::vector<int>{90}));
  EXPECT_EQ(a.ptx, 0);
  EXPECT_TRUE(a.arch_specific);
  EXPECT_TRUE(parse_cuda_architectures("").sass.empty());
  EXPECT_TRUE(parse_cuda_architectures("native;all;x").sass.empty());  // not a list of numbers: nothing built
  EXPECT_EQ(describe(b), "sm_75, sm_80, sm_86, sm_120 and PTX compute_120");
  EXPECT_EQ(describe(a), "sm_90a");
  EXPECT_EQ(describe(BuiltArchs{}), "no architecture");
}

TEST(KernelGate, MachineCodeRunsOnNewerMinorVersionsOfItsMajor) {
  auto b = parse_cuda_architectures("75-real;80-real;90-real;100-real");
  EXPECT_TRUE(has_image_for(b, 75));
  EXPECT_TRUE(has_image_for(b, 86));   // sm_80 code on an A10 / RTX 30xx
  EXPECT_TRUE(has_image_for(b, 89));   // and on Ada
  EXPECT_TRUE(has_image_for(b, 103));  // sm_100 code on a B300
  EXPECT_FALSE(has_image_for(b, 70));  // older than anything built
  EXPECT_FALSE(has_image_for(b, 120)); // sm_100 code does not run on 12.0
  auto with_ptx = parse_cuda_architectures("75-real;120-virtual");
  EXPECT_TRUE(has_image_for(with_ptx, 130));   // the driver compiles the PTX for a newer GPU
  EXPECT_FALSE(has_image_for(with_ptx, 100));  // but never for an older one
  auto a = parse_cuda_architectures("90a-real");
  EXPECT_TRUE(has_image_for(a, 90));
  EXPECT_FALSE(has_image_for(a, 100));  // 'a' code runs on its own GPU only
}

TEST(KernelGate, SkipsWithWhatIsMissing) {
  const auto mma = parse_cuda_architectures("80-real;86-real;89-real;90-real;100-real;120-real;120-virtual");
  const auto plain = parse_cuda_architectures("75-real;80-real;90-real;100-real;120-real;120-virtual");
  // A T4 runs the CUDA-core kernels, and is told why the tensor-core ones are skipped.
  EXPECT_TRUE(kernel_runs_on(needs_of(Kernels::plain), plain, 75).ok);
  auto t4 = kernel_runs_on(needs_of(Kernels::mma), mma, 75);
  EXPECT_FALSE(t4.ok);
  EXPECT_EQ(t4.reason,
            "mma.sync m16n8k16 (fp16/bf16), ldmatrix and cp.async needs compute capability 8.0 or newer; this GPU is sm_75");
  // A V100: nothing built for it.
  auto v100 = kernel_runs_on(needs_of(Kernels::plain), plain, 70);
  EXPECT_FALSE(v100.ok);
  EXPECT_EQ(v100.reason, "built for sm_75, sm_80, sm_90, sm_100, sm_120 and PTX compute_120; this GPU is sm_70");
  // A GPU the needs allow but the build left out (a plugin built for Hopper only, on an A100).
  auto hopper_only = parse_cuda_architectures("90-real");
  auto a100 = kernel_runs_on(needs_of(Kernels::mma), hopper_only, 80);
  EXPECT_FALSE(a100.ok);
  EXPECT_EQ(a100.reason, "built for sm_90; this GPU is sm_80");
  EXPECT_TRUE(kernel_runs_on(needs_of(Kernels::fp8_mma), mma, 120).ok);  // RTX 50xx
  EXPECT_FALSE(kernel_runs_on(needs_of(Kernels::mma), mma, 110).ok);  // Thor: no sm_11x code, the PTX is newer
}
