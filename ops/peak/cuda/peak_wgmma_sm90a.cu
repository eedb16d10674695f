// kernel=wgmma: Hopper warpgroup MMA (wgmma.mma_async m64n256kK, both operands from shared
// memory), the only way to the H100's full tensor rate. Compiled for sm_90a alone (files named
// *_sm90a.cu get their own object library in CMakeLists.txt); supports() allows cc 9.0 only.
//
// Why any descriptor layout gives the exact answer: the shared tile holds one value (+1 in the
// dtype) everywhere, so whatever core matrices a descriptor picks inside the tile, every product
// is 1 and each instruction adds exactly +-K to every accumulator element.
#include <cstdint>
#include <type_traits>

#include "ops/peak/cuda/peak_kernel.hpp"
#include "ops/peak/peak.hpp"

namespace opmeter::peak {
namespace {

// 16 KB: the descriptors below touch at most 8 KB (32 core-matrix rows x 256 B), so a misread
// of LBO vs SBO still stays inside.
constexpr int kTileBytes = 16384;
// No-swizzle K-major core matrices (8 rows x 16 B, 128 B contiguous): the next one along K at
// +128 B (leading byte offset), the next 8 rows at +256 B (stride byte offset); K = 32 B per row.
constexpr std::uint64_t kLbo = 128, kSbo = 256;

__device__ __forceinline__ std::uint64_t descriptor(const void* smem) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  // bits 0-13 start address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 62-63 swizzle (0: none).
  return static_cast<std::uint64_t>((addr & 0x3ffff) >> 4) | ((kLbo >> 4) << 16) | ((kSbo >> 4) << 32);
}

// The 128 accumulator registers of m64n256 (64 x 256 / 128 threads) as asm operands %0..%127.
#define OPM_R10(t) "%" #t "0, %" #t "1, %" #t "2, %" #t "3, %" #t "4, %" #t "5, %" #t "6, %" #t "7, %" #t "8, %" #t "9, "
#define OPM_DREGS                                                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " OPM_R10(1) OPM_R10(2) OPM_R10(3) OPM_R10(4) OPM_R10(5) OPM_R10(6)  \
      OPM_R10(7) OPM_R10(8) OPM_R10(9) OPM_R10(10) OPM_R10(11) "%120, %121, %122, %123, %124, %125, %126, %127}"
#define OPM_ACC8(C, i) \
  C(d[i + 0]), C(d[i + 1]), C(d[i + 2]), C(d[i + 3]), C(d[i + 4]), C(d[i + 5]), C(d[i + 6]), C(d[i + 7])
#define OPM_ACC128(C)                                                                                                 \
  OPM_ACC8(C, 0), OPM_ACC8(C, 8), OPM_ACC8(C, 16), OPM_ACC8(C, 24), OPM_ACC8(C, 32), OPM_ACC8(C, 40), OPM_ACC8(C, 48), \
      OPM_ACC8(C, 56), OPM_ACC8(C, 64), OPM_ACC8(C, 72), OPM_ACC8(C, 80), OPM_ACC8(C, 88), OPM_ACC8(C, 96),           \
      OPM_ACC8(C, 104), OPM_ACC8(C, 112), OPM_ACC8(C, 120)

// d (+)= S * A * B with scale-d = 1 (accumulate). S = +1 or -1 (imm-scale-a).
// Floating-point variants: "..., p, imm-scale-a, imm-scale-b[, imm-trans-a, imm-trans-b]".
#define OPM_WGMMA_F32(NAME, INSTR, TAIL)                                                                  \
  template <int S>                                                                                        \
  __device__ __forceinline__ void NAME(float (&d)[128], std::uint64_t a, std::uint64_t b) {               \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" INSTR " " OPM_DREGS ", %128, %129, p, %131, %132" TAIL \
                 ";\n}\n"                                                                                 \
                 : OPM_ACC128("+f")                                                                       \
                 : "l"(a), "l"(b), "r"(1), "n"(S), "n"(1));                                               \
  }
OPM_WGMMA_F32(wgmma_tf32, "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "")
OPM_WGMMA_F32(wgmma_fp16, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", ", 0, 0")
OPM_WGMMA_F32(wgmma_bf16, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 0, 0")
OPM_WGMMA_F32(wgmma_fp8, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", "")

// Integer: no scale operands; s32 accumulation is exact, so every instruction adds +K.
template <int S>
__device__ __forceinline__ void wgmma_s8(int (&d)[128], std::uint64_t a, std::uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 " OPM_DREGS ", %128, %129, p;\n}\n"
               : OPM_ACC128("+r")
               : "l"(a), "l"(b), "r"(1));
}

// Keeps the compiler from moving writes or reads of the accumulators across a fence or a wait
// (their asm does not name them).
template <typename Acc>
__device__ __forceinline__ void pin(Acc (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) {
    if constexpr (std::is_same_v<Acc, float>)
      asm volatile("" : "+f"(d[i])::"memory");
    else
      asm volatile("" : "+r"(d[i])::"memory");
  }
}

template <DType D, int S, typename Acc>
__device__ __forceinline__ void wgmma(Acc (&d)[128], std::uint64_t desc) {
  if constexpr (D == DType::tf32) wgmma_tf32<S>(d, desc, desc);
  else if constexpr (D == DType::fp16) wgmma_fp16<S>(d, desc, desc);
  else if constexpr (D == DType::bf16) wgmma_bf16<S>(d, desc, desc);
  else if constexpr (D == DType::fp8_e4m3) wgmma_fp8<S>(d, desc, desc);
  else wgmma_s8<S>(d, desc, desc);
}

// One warpgroup per block. Per commit group: +A, +A, +A, then -A (floats; +A for int8), so every
// accumulator ends at 2K (floats) or 4K (int8) per group and stays a small exact integer.
template <DType D, typename Acc>
__global__ void __launch_bounds__(gpu::kWgThreads) wgmma_chains(std::uint32_t* out, bool all, std::uint32_t one) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ alignas(128) std::uint32_t tile[kTileBytes / 4];
  for (int i = threadIdx.x; i < kTileBytes / 4; i += blockDim.x) tile[i] = one;
  // wgmma reads shared memory through the async proxy: make the generic-proxy stores visible to it.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const std::uint64_t desc = descriptor(tile);
  constexpr int kLast = D == DType::int8 ? 1 : -1;

  Acc d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0;
  pin(d);  // the zeros are written before the first wgmma.fence, as the fence requires
  for (int g = 0; g < gpu::kWgGroups; ++g) {
    static_assert(gpu::kWgPerGroup == 4);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wgmma<D, 1>(d, desc);
    wgmma<D, 1>(d, desc);
    wgmma<D, 1>(d, desc);
    wgmma<D, kLast>(d, desc);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    // Up to two groups (8 instructions) in flight while the next is issued.
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  pin(d);
  Acc sum = 0;  // small integers: exact in any order
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += d[i];
  std::uint32_t bits;
  memcpy(&bits, &sum, sizeof bits);
  const auto t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (all || bits == 0xffffffffu) out[t] = bits;
#else
  // Built for another architecture by mistake: fail loudly rather than time nothing.
  __trap();
#endif
}

template <typename F>
cudaError_t for_dtype(DType d, F&& f) {
  switch (d) {
    case DType::tf32: return f(wgmma_chains<DType::tf32, float>);
    case DType::fp16: return f(wgmma_chains<DType::fp16, float>);
    case DType::bf16: return f(wgmma_chains<DType::bf16, float>);
    case DType::fp8_e4m3: return f(wgmma_chains<DType::fp8_e4m3, float>);
    case DType::int8: return f(wgmma_chains<DType::int8, int>);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_wgmma_peak(DType d, std::uint32_t* out, bool all, cudaStream_t s) {
  const std::uint32_t one = mma_operands(d).a;
  return for_dtype(d, [&](auto kernel) {
    kernel<<<static_cast<unsigned>(gpu::kWgBlocks), static_cast<unsigned>(gpu::kWgThreads), 0, s>>>(out, all, one);
    return cudaGetLastError();
  });
}

int wgmma_blocks_per_sm(DType d) {
  int blocks = 0;
  auto e = for_dtype(d, [&](auto kernel) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, static_cast<int>(gpu::kWgThreads), 0);
  });
  return e == cudaSuccess ? blocks : 0;
}

}  // namespace opmeter::peak
