#pragma once
// The result flags that make a time, and so a % of peak or a speedup, doubtful: carried into the
// derived tables (quantization, training), which show no results table's flags of their own.
#include <algorithm>
#include <string>
#include <vector>

#include "opmeter/result.hpp"

namespace opmeter {

inline bool doubtful_time_flag(const std::string& f) {
  return f == "contended" || f == "unconverged" || f == "plateau" || f == "throttled" || f == "partly-cached" ||
         f == "above-roofline" || f.starts_with("faster-than-");
}

// r's doubtful flags added to `out`, each after `prefix` ("baseline:", "bwd:"), each once.
inline void add_doubtful_flags(const Result& r, const std::string& prefix, std::vector<std::string>& out) {
  for (auto& f : r.flags)
    if (doubtful_time_flag(f) && std::find(out.begin(), out.end(), prefix + f) == out.end()) out.push_back(prefix + f);
}

}  // namespace opmeter
