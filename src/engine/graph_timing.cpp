#include "engine/graph_timing.hpp"

namespace opmeter {

LaunchCosts launch_costs(double host_enqueue_s, double stream_elapsed_s, std::size_t launches) {
  if (launches == 0) return {};
  double n = static_cast<double>(launches);
  return {host_enqueue_s / n, stream_elapsed_s / n};
}

}  // namespace opmeter
