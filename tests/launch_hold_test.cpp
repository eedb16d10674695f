// What a CUDA sample's details say of the launch hold, from the CPU: held samples, and samples the
// hold could not hold (a GPU without the hold kernel's code) said to be off, with the reason.
#include <gtest/gtest.h>

#include "cuda/plugin/hold_detail.hpp"

using namespace opmeter::cuda;

TEST(LaunchHold, DetailsSayHeldOnlyWhenHeld) {
  EXPECT_EQ(hold_detail({.held = 12, .timed_out = 1}), "12 samples held until issued (1 timed out)");
  const HoldCounts off{.held = 0, .timed_out = 0, .off = 30, .off_reason = "no hold kernel for sm_70: invalid device function"};
  EXPECT_EQ(hold_detail(off), "off (no hold kernel for sm_70: invalid device function) for 30 samples; "
                              "0 samples held until issued (0 timed out)");
  EXPECT_EQ(hold_detail(off).rfind("off (", 0), 0u);  // the details lead with it
}
