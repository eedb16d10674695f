#pragma once
// What a CUDA sample's details say of the launch hold (launch_hold.hpp): how many samples it held
// until all their calls were issued, and, where it could not hold (no machine code for the GPU, a
// launch error), that it was off and why: those samples include the host's launch gaps.
// CUDA-free, so that the tests read it on any machine.
#include <cstddef>
#include <string>

#include <fmt/format.h>

namespace opmeter::cuda {

struct HoldCounts {
  std::size_t held = 0;       // samples held until issued
  std::size_t timed_out = 0;  // of those, the hold gave up before the host released it
  std::size_t off = 0;        // samples that should have been held but were not
  std::string off_reason;     // the first reason it was off
};

inline std::string hold_detail(const HoldCounts& c) {
  const std::string held = fmt::format("{} samples held until issued ({} timed out)", c.held, c.timed_out);
  if (c.off == 0) return held;
  return fmt::format("off ({}) for {} samples; {}", c.off_reason, c.off, held);
}

}  // namespace opmeter::cuda
