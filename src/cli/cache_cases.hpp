#pragma once
// The read cases that measure a CPU's cache bandwidths. Each must read data the level holds: hot
// (the same array every call, no rotating cold copies, which would measure DRAM), over half of
// the level as the case's threads see it: half of each private instance a thread has (L1d, most
// L2s), half of a shared one (L3) once. Small arrays are read several times a call (`passes`), so
// that a call reads at least kCacheCallBytes and its fixed cost (a parallel region, ~0.4 us) stays
// about 1% of it.
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/context.hpp"

namespace opmeter {

inline constexpr std::size_t kCacheCallBytes = std::size_t{8} << 20;

struct CacheReadCase {
  int level = 0;
  std::size_t capacity = 0;  // bytes of that level the case's threads can use (instances x size)
  Case kase;                 // bandwidth/opmeter/fp32/kernel=read,n=...[,passes=P]/...,hot
};

// One case per data or unified level with a known size. `llc_bytes` caps the last level (a VM may
// report its host's L3; see llc_bytes()). A level whose sharing is unknown counts as private up
// to L2 and shared from L3 on.
std::vector<CacheReadCase> cache_read_cases(const std::vector<CacheLevel>& caches, int threads, std::size_t llc_bytes);

}  // namespace opmeter
