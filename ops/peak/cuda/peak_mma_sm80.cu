// kernel=mma: warp-level tensor-core chains (mma.sync), compute capability 8.0+ (fp8: 8.9+).
// Every element of A and B holds the same value, so the fragment layout does not matter and
// each instruction adds exactly +-K to every accumulator element.
#include <cstdint>

#include "ops/peak/cuda/peak_kernel.hpp"
#include "ops/peak/peak.hpp"

namespace opmeter::peak {
namespace {

// c += a * b for one m16n8kK tile; a and b are one packed 32-bit value repeated over the fragment.
template <DType D>
__device__ __forceinline__ void mma(float (&c)[4], std::uint32_t a, std::uint32_t b) {
  if constexpr (D == DType::tf32) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a), "r"(b));
  } else if constexpr (D == DType::fp16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a), "r"(b));
  } else if constexpr (D == DType::bf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a), "r"(b));
  } else if constexpr (D == DType::fp8_e4m3) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a), "r"(b));
#else
    __trap();  // supports() keeps fp8 off devices below 8.9
#endif
  }
}

__device__ __forceinline__ void mma_s8(int (&c)[4], std::uint32_t a, std::uint32_t b) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3]) : "r"(a), "r"(b));
}

template <DType D>
__device__ __forceinline__ void step(float (&c)[4], std::uint32_t a, std::uint32_t b) { mma<D>(c, a, b); }
template <DType D>
__device__ __forceinline__ void step(int (&c)[4], std::uint32_t a, std::uint32_t b) { mma_s8(c, a, b); }

// Chain j starts at j; per iteration it gets +A, +A, +A and `last` (-A for floats, +A for int8).
// The operands arrive as arguments so the compiler cannot fold anything.
template <DType D, typename Acc>
__global__ void __launch_bounds__(gpu::kMmaWarps * 32) mma_chains(std::uint32_t* out, bool all, std::uint32_t a,
                                                                   std::uint32_t last, std::uint32_t b) {
  Acc c[gpu::kMmaChains][4];
#pragma unroll
  for (int j = 0; j < gpu::kMmaChains; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) c[j][e] = static_cast<Acc>(j);
  for (int i = 0; i < gpu::kMmaIters; ++i) {
    static_assert(gpu::kMmaPerIter == 4);
#pragma unroll
    for (int j = 0; j < gpu::kMmaChains; ++j) step<D>(c[j], a, b);
#pragma unroll
    for (int j = 0; j < gpu::kMmaChains; ++j) step<D>(c[j], a, b);
#pragma unroll
    for (int j = 0; j < gpu::kMmaChains; ++j) step<D>(c[j], a, b);
#pragma unroll
    for (int j = 0; j < gpu::kMmaChains; ++j) step<D>(c[j], last, b);
  }
  Acc sum = 0;  // small integers: exact in any order
#pragma unroll
  for (int j = 0; j < gpu::kMmaChains; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) sum += c[j][e];
  std::uint32_t bits;
  memcpy(&bits, &sum, sizeof bits);
  const auto t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (all || bits == 0xffffffffu) out[t] = bits;
}

}  // namespace

cudaError_t launch_mma_peak(DType d, std::uint32_t* out, bool all, cudaStream_t s) {
  const auto p = mma_operands(d);
  const dim3 grid(static_cast<unsigned>(gpu::kMmaBlocks)), block(static_cast<unsigned>(gpu::kMmaWarps * 32));
  switch (d) {
    case DType::tf32: mma_chains<DType::tf32, float><<<grid, block, 0, s>>>(out, all, p.a, p.last, p.b); break;
    case DType::fp16: mma_chains<DType::fp16, float><<<grid, block, 0, s>>>(out, all, p.a, p.last, p.b); break;
    case DType::bf16: mma_chains<DType::bf16, float><<<grid, block, 0, s>>>(out, all, p.a, p.last, p.b); break;
    case DType::fp8_e4m3: mma_chains<DType::fp8_e4m3, float><<<grid, block, 0, s>>>(out, all, p.a, p.last, p.b); break;
    case DType::int8: mma_chains<DType::int8, int><<<grid, block, 0, s>>>(out, all, p.a, p.last, p.b); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace opmeter::peak
