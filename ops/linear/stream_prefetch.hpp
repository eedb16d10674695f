#pragma once
// How the CPU's quantized kernels prefetch the weights they stream once per call: into L2
// (prefetcht1), 8 KiB ahead. Chosen by measurement (the likely reason: lines bound for the L1 tie
// up its few fill buffers for DRAM's whole latency, while the L2 keeps more misses in flight).
// On the Emerald Rapids VM (2026-11-28, docs/BENCHMARKS.md) the int4 limbs kernel took 6-14% less
// time this way than with prefetcht0 4 KiB ahead, which itself took a fifth less than no software
// prefetch at all.
// Included only by files compiled with SSE (every x86-64 build).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace opmeter::linear {

constexpr std::size_t kStreamAheadBytes = 8192;

// The cache lines of [p, p + bytes) into L2.
inline void prefetch_stream(const std::uint8_t* p, std::size_t bytes) {
  for (std::size_t l = 0; l < bytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(p + l), _MM_HINT_T1);
}

}  // namespace opmeter::linear
