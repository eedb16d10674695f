#pragma once
// The result flags that make a time, and so a % of peak or a speedup, doubtful: carried into the
// derived tables (quantization, training), which show no results table's flags of their own.
#include <string>

namespace opmeter {

inline bool doubtful_time_flag(const std::string& f) {
  return f == "contended" || f == "unconverged" || f == "plateau" || f == "throttled" || f == "partly-cached" ||
         f == "above-roofline" || f.starts_with("faster-than-");
}

}  // namespace opmeter
