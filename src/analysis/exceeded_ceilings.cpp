#include "analysis/exceeded_ceilings.hpp"

#include <map>
#include <tuple>

#include <fmt/format.h>

namespace opmeter {
namespace {

struct Tally {
  std::size_t rated = 0, above = 0;
};

// The ceiling a flag's detail names: "GFLOP/s is 1519.0% of the peak 6.3 GFLOP/s, measured by
// CASE" -> "the peak 6.3 GFLOP/s (measured by CASE)".
std::string ceiling_named(const std::string& detail) {
  const auto of = detail.find("% of ");
  if (of == std::string::npos) return detail;
  std::string named = detail.substr(of + 5);
  named = named.substr(0, named.find("; "));  // the why that follows is the result's own
  if (auto by = named.find(", measured by "); by != std::string::npos)
    named = named.substr(0, by) + " (" + named.substr(by + 2) + ")";
  return named;
}

}  // namespace

std::vector<std::string> exceeded_ceilings(const std::vector<Result>& results) {
  // By flag and the ceiling's value: every result rated against a ceiling carries its value.
  std::map<std::tuple<std::string, double>, Tally> tally;
  std::map<std::tuple<std::string, double>, std::string> name;
  for (auto& r : results) {
    if (r.status != Status::ok) continue;
    auto count = [&](const char* flag, const std::optional<double>& ceiling, bool applies) {
      if (!ceiling || !applies) return;
      auto& t = tally[{flag, *ceiling}];
      ++t.rated;
      if (!r.has_flag(flag)) return;
      ++t.above;
      auto it = r.details.find(flag);
      name[{flag, *ceiling}] =
          it != r.details.end() ? ceiling_named(it->second) : fmt::format("the ceiling {:.4g} ({})", *ceiling, flag);
    };
    count("faster-than-peak", r.peak_gflops, true);
    count("faster-than-bandwidth", r.bandwidth_gbps, r.cache == "cold");
  }
  std::vector<std::string> out;
  for (auto& [key, t] : tally)
    if (t.above >= 2 && 2 * t.above >= t.rated)
      out.push_back(
          fmt::format("{} is below what {} of the {} results rated against it reached: it was measured too "
                      "low (a machine busy with work opmeter cannot see, such as other tenants of a VM's "
                      "host), so their % of peak or of bandwidth reads too high; measure again on a quiet "
                      "machine, or give --calibration a profile measured on one",
                      name[key], t.above, t.rated));
  return out;
}

}  // namespace opmeter
