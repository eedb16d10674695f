#pragma once
#include <cuda_runtime.h>

namespace opmeter::peak {
// gpu::kBlocks x gpu::kThreads threads, each running gpu::kChains independent fp32 FMA chains
// for gpu::kIters iterations. With `all` every thread writes its chain sum to out[thread];
// otherwise only a value no chain reaches would be written (it keeps the work alive).
void launch_fma_peak(float* out, bool all, cudaStream_t s);
}  // namespace opmeter::peak
