#pragma once
// CUDA Graph mode: a sample is one graph of U back-to-back launches, timed as a whole; the
// engine divides by U. Issuing the same launches one by one tells the launch overheads apart.
#include <cstddef>

namespace opmeter {

struct LaunchCosts {
  double host_per_launch_s = 0;    // host time to enqueue one launch
  double stream_per_launch_s = 0;  // device time per launch issued one by one (gaps included)
};
// From the host time to enqueue `launches` launches and the device time they took on a stream.
LaunchCosts launch_costs(double host_enqueue_s, double stream_elapsed_s, std::size_t launches);

}  // namespace opmeter
