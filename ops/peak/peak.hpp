#pragma once
// Compute peak: independent chains of the widest multiply-add the CPU has, per dtype:
// fp32/fp64 FMA, bf16 dot products (vdpbf16ps), int8 dot products (vpdpbusd); on AMX CPUs
// also tile dot products (kernel=amx: tdpbf16ps, tdpbssd).
// Each thread runs kIters iterations of kChains independent instructions; no memory traffic.
// On CUDA: fp32 FMA chains (kernel=fma) and tensor-core chains (kernel=mma, kernel=wgmma).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opmeter/dtype.hpp"

namespace opmeter {
struct Case;
struct Support;
}  // namespace opmeter
namespace opmeter::cuda {
enum class Kernels;  // include/opmeter/cuda/kernel_gate.hpp (the kernels here are also built as CUDA C++17)
}  // namespace opmeter::cuda

namespace opmeter::peak {

constexpr int kChains = 12;                    // enough to cover FMA latency x pipes
constexpr std::int64_t kIters = 1 << 16;       // per thread per call: ~0.1-0.5 ms
constexpr std::int64_t kCheckIters = 1000;

// One kernel: returns a checksum of its accumulators (so nothing is optimized away).
struct Kernel {
  const char* isa;
  double ops_per_iter;  // flops (or int ops) per loop iteration, all chains
  double (*fn)(std::int64_t iters);
  // The checksum a correct kernel returns after `iters` iterations, in fp64.
  double (*expected)(std::int64_t iters);
};

// The CPU kernel of a dtype: kernel=fma (the widest vector multiply-add) or kernel=amx.
std::optional<Kernel> select_kernel(DType d, std::string_view kernel = "fma");

// The CUDA peak kernels (ops/peak/cuda/). Each has a fixed grid, so its work per call does not
// depend on the device. Many short blocks keep the last wave's share of the time small.
namespace gpu {
// kernel=fma: independent fp32 FMA chains in every thread.
constexpr std::int64_t kBlocks = 32768, kThreads = 256, kChains = 8, kIters = 256;
constexpr double kFlops = 2.0 * kBlocks * kThreads * kChains * kIters;  // 34.4 GFLOP per call

// kernel=mma: mma.sync m16n8kK per warp, kMmaChains independent accumulators, each getting
// kMmaPerIter dependent instructions per iteration (+A, +A, +A, -A: the sums stay small integers,
// exact even where the tensor core's fp32 accumulation is truncated).
constexpr std::int64_t kMmaBlocks = 8192, kMmaWarps = 8, kMmaChains = 8, kMmaIters = 64, kMmaPerIter = 4;
constexpr std::int64_t kMmaThreads = kMmaBlocks * kMmaWarps * 32;

// kernel=wgmma: one warpgroup per block (154 registers: 3 resident per SM), kWgGroups commit
// groups of kWgPerGroup m64n256kK instructions (+,+,+,- again), operands from shared memory.
// kWgBlocks = 132 x 128: ~43 waves on a 132-SM H100 SXM / H200, so the last one costs < 1%.
constexpr std::int64_t kWgBlocks = 16896, kWgThreads = 128, kWgGroups = 32, kWgPerGroup = 4, kWgN = 256;
constexpr std::int64_t kWgThreadsTotal = kWgBlocks * kWgThreads;

enum class Kind { fma, mma, wgmma };  // the `kernel` parameter on CUDA
inline std::optional<Kind> parse_kind(std::string_view kernel) {
  if (kernel == "fma") return Kind::fma;
  if (kernel == "mma") return Kind::mma;
  if (kernel == "wgmma") return Kind::wgmma;
  return std::nullopt;
}
constexpr bool tensor_dtype(DType d) {
  return d == DType::tf32 || d == DType::fp16 || d == DType::bf16 || d == DType::fp8_e4m3 || d == DType::int8;
}
// K of one tensor-core instruction: 32 bytes of a row of A (tf32 8, fp16/bf16 16, fp8/int8 32),
// the same for mma.sync (m16n8kK) and wgmma (m64n256kK).
constexpr int mma_k(DType d) { return d == DType::tf32 ? 8 : d == DType::fp16 || d == DType::bf16 ? 16 : 32; }
// Flops (int8: int ops) per call of a kernel in a dtype: 2*m*n*k per instruction x instructions.
constexpr double flops(DType d, Kind k) {
  switch (k) {
    case Kind::fma: return kFlops;
    case Kind::mma: return 2.0 * 16 * 8 * mma_k(d) * static_cast<double>(kMmaThreads / 32 * kMmaChains * kMmaIters * kMmaPerIter);
    case Kind::wgmma: return 2.0 * 64 * kWgN * mma_k(d) * static_cast<double>(kWgBlocks * kWgGroups * kWgPerGroup);
  }
  return 0;
}
}  // namespace gpu

// Which group of opmeter's CUDA kernels a valid peak/cuda case runs: the FMA chains are plain
// CUDA-core code, mma.sync needs 8.0 (fp8: 8.9), wgmma sm_90a code. The plugin gates the case by
// that group's needs and the architectures it was built for (include/opmeter/cuda/kernel_gate.hpp).
cuda::Kernels cuda_kernels(const Case& c);

// The peak kernels a case of this dtype can name (the config plans them all).
std::vector<std::string> kernels_for(DType d, bool on_cuda);

// Per-ISA kernel sets, defined in files compiled for their ISA.
std::optional<Kernel> avx512_kernel(DType d);
std::optional<Kernel> avx2_kernel(DType d);
std::optional<Kernel> amx_kernel(DType d);  // bf16, int8: call only where amx_usable(d)

// kernel=amx (peak_amx.cpp): kAmxAccumulators independent accumulator tiles, one tile dot
// product each per iteration, on A and B tiles loaded once (16 rows of 64 bytes each).
constexpr int kAmxAccumulators = 6;
// Multiply-adds per instruction: 16 x 16 outputs x K (bf16 pairs: 32, int8 quadruples: 64).
constexpr double amx_ops_per_iter(DType d) { return kAmxAccumulators * 2.0 * 16 * 16 * (d == DType::int8 ? 64 : 32); }
// The sum of the accumulators after `iters`: bf16 gains 32 x 2^-10 an element, int8 64.
constexpr double amx_expected(DType d, std::int64_t iters) {
  return kAmxAccumulators * 256.0 * static_cast<double>(iters) * (d == DType::int8 ? 64.0 : 32 * 0x1p-10);
}
// Whether the CPU has AMX for d (amx_bf16, amx_int8) and Linux grants this process the tiles.
bool amx_usable(DType d);

// Shared recurrences (see peak.cpp): what every ISA's kernels compute per lane.
inline constexpr float kFmaA = 0.999f, kFmaB = 0.001f;
double fma_expected(std::int64_t iters, int lanes);
double dot_bf16_expected(std::int64_t iters, int lanes);
double dot_int8_expected(std::int64_t iters, int lanes);
inline float chain_start(int j) { return 0.01f * static_cast<float>(j); }

}  // namespace opmeter::peak
