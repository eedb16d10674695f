#pragma once
// Ceilings that most of the results rated against them beat: measured too low, though nothing
// flagged them contended (the load came from outside: other tenants of a VM's host, which a guest
// cannot see). A ceiling 56x low had rated a whole pipeline at up to 1519% of peak in silence.
#include <string>
#include <vector>

#include "opmeter/result.hpp"

namespace opmeter {

// One line per such ceiling: "the peak 6.3 GFLOP/s (peak/opmeter/...) is below what 12 of the 14
// results rated against it reached ...". A ceiling counts when at least 2 results and half of
// those rated against it are above it (faster-than-peak; faster-than-bandwidth of cold cases
// only: hot data legitimately reads faster than memory).
std::vector<std::string> exceeded_ceilings(const std::vector<Result>& results);

}  // namespace opmeter
