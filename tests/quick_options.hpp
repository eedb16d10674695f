#pragma once
// Run options for tests that need a checked result, not a precise measurement: a few samples
// after one warm-up call, no cool-down and no sustained window.
#include <cstddef>

#include "engine/runner.hpp"

namespace opmeter::testing {

inline RunOptions quick_options(std::size_t samples = 3) {
  RunOptions o;
  o.stopping.fixed_samples = samples;
  o.stopping.warmup_calls = 1;
  o.energy_window_s = 0;
  o.cooldown_s = 0;
  return o;
}

}  // namespace opmeter::testing
