#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::peak {
// gpu::kBlocks x gpu::kThreads threads, each running gpu::kChains independent fp32 FMA chains
// for gpu::kIters iterations. With `all` every thread writes its chain sum to out[thread];
// otherwise only a value no chain reaches would be written (it keeps the work alive).
void launch_fma_peak(float* out, bool all, cudaStream_t s);

// The tensor-core kernels write each thread's accumulator sum as 32 bits (fp32, or s32 for
// int8) to out[thread] under the same rule. One value fills every element of A and B, so any
// fragment or shared-memory layout gives the same exact result.
struct MmaOperands {
  std::uint32_t a;     // +1 in the dtype, packed to 32 bits
  std::uint32_t last;  // the 4th instruction's A: -1 (floats: sums stay small), +1 for int8
  std::uint32_t b;     // +1
};
inline MmaOperands mma_operands(DType d) {
  switch (d) {
    case DType::tf32: return {0x3f800000u, 0xbf800000u, 0x3f800000u};
    case DType::fp16: return {0x3c003c00u, 0xbc00bc00u, 0x3c003c00u};
    case DType::bf16: return {0x3f803f80u, 0xbf80bf80u, 0x3f803f80u};
    case DType::fp8_e4m3: return {0x38383838u, 0xb8b8b8b8u, 0x38383838u};
    default: return {0x01010101u, 0x01010101u, 0x01010101u};  // int8
  }
}

// kernel=mma: gpu::kMmaThreads threads (ops/peak/cuda/peak_mma_sm80.cu).
cudaError_t launch_mma_peak(DType d, std::uint32_t* out, bool all, cudaStream_t s);

// kernel=wgmma: gpu::kWgThreadsTotal threads; sm_90a code only (peak_wgmma_sm90a.cu).
cudaError_t launch_wgmma_peak(DType d, std::uint32_t* out, bool all, cudaStream_t s);
// Blocks of the wgmma kernel resident per SM (registers and shared memory decide), for details().
int wgmma_blocks_per_sm(DType d);
}  // namespace opmeter::peak
