#pragma once
// The shape every peak kernel shares: kChains independent accumulators, each updated once per
// iteration, summed at the end. Included by each ISA's file, so it compiles for that ISA.
#include <cstdint>

#include "ops/peak/peak.hpp"

namespace opmeter::peak {

// init(j) -> V: chain j's start; step(V) -> V: one instruction; sum(V) -> double: lane total.
template <class V, class Init, class Step, class Sum>
inline double run_chains(std::int64_t iters, Init init, Step step, Sum sum) {
  V acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = init(j);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = step(acc[j]);
  }
  double total = 0;
  for (int j = 0; j < kChains; ++j) total += sum(acc[j]);
  return total;
}

}  // namespace opmeter::peak
