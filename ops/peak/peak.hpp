#pragma once
// Compute peak: independent chains of the widest multiply-add the CPU has, per dtype:
// fp32/fp64 FMA, bf16 dot products (vdpbf16ps), int8 dot products (vpdpbusd).
// Each thread runs kIters iterations of kChains independent instructions; no memory traffic.
#include <cstdint>
#include <optional>

#include "opmeter/dtype.hpp"

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

std::optional<Kernel> select_kernel(DType d);

// The CUDA FMA kernel (ops/peak/cuda/): a fixed grid, so its work does not depend on the device.
// Many short blocks keep the last wave's share of the time small.
namespace gpu {
constexpr std::int64_t kBlocks = 32768, kThreads = 256, kChains = 8, kIters = 256;
constexpr double kFlops = 2.0 * kBlocks * kThreads * kChains * kIters;  // 34.4 GFLOP per call
}  // namespace gpu  // best kernel this CPU runs, if any

// Per-ISA kernel sets, defined in files compiled for their ISA.
std::optional<Kernel> avx512_kernel(DType d);
std::optional<Kernel> avx2_kernel(DType d);

// Shared recurrences (see peak.cpp): what every ISA's kernels compute per lane.
inline constexpr float kFmaA = 0.999f, kFmaB = 0.001f;
double fma_expected(std::int64_t iters, int lanes);
double dot_bf16_expected(std::int64_t iters, int lanes);
double dot_int8_expected(std::int64_t iters, int lanes);
inline float chain_start(int j) { return 0.01f * static_cast<float>(j); }

}  // namespace opmeter::peak
