#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace opmeter::bandwidth {
// STREAM's kernels over n floats with 16-byte (float4) loads and stores; `blocks` x 256 threads
// stride over the arrays, kVectorsPerThread float4s per thread per step. read() writes one partial sum per block to `partials`.
void launch_copy(const float* a, float* b, std::size_t n, int blocks, cudaStream_t s);
void launch_scale(const float* a, float* b, float scalar, std::size_t n, int blocks, cudaStream_t s);
void launch_add(const float* a, const float* b, float* c, std::size_t n, int blocks, cudaStream_t s);
void launch_triad(float* a, const float* b, const float* c, float scalar, std::size_t n, int blocks, cudaStream_t s);
void launch_read(const float* a, double* partials, std::size_t n, int blocks, cudaStream_t s);
void launch_write(float* a, float value, std::size_t n, int blocks, cudaStream_t s);
inline constexpr int kThreadsPerBlock = 256;
inline constexpr int kVectorsPerThread = 2;  // float4s each thread has in flight per step
inline constexpr int kMaxBlocks = 1 << 30;    // grid cap; beyond it the kernels loop
}  // namespace opmeter::bandwidth
