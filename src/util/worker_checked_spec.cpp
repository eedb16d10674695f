#include "opmeter/worker_checked_spec.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace opmeter {

Check WorkerCheckedSpec::check(const HostTensors&, const HostTensor& out, std::uint64_t) const {
  Check check;
  for (std::size_t i = 0; i < out.desc().count; ++i) {
    if (!std::isfinite(out[i])) {
      check.max_error = std::numeric_limits<double>::infinity();
      check.detail = fmt::format("{}[{}] is {} (not written, or not finite)", out.desc().name, i, out[i]);
      return check;
    }
  }
  check.ok = true;
  return check;
}

}  // namespace opmeter
