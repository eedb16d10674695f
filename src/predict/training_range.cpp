#include "predict/training_range.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace opmeter::predict {
namespace {

std::optional<long long> integer(const std::string& s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The integer values of a case by name: its params, and threads for a host case.
std::map<std::string, long long> integers_of(const Case& c) {
  std::map<std::string, long long> out;
  for (auto& [key, value] : c.params)
    if (auto v = integer(value)) out[key] = *v;
  if (c.on_host()) out["threads"] = c.threads;
  return out;
}

}  // namespace

TrainingRanges training_ranges(const GroupModel& g) {
  TrainingRanges range;
  for (auto& p : g.points) {
    Case trained;
    try {
      trained = parse_case(p.case_string);
    } catch (const std::exception&) {
      continue;  // a point this opmeter cannot read back says nothing about the range
    }
    for (auto& [key, v] : integers_of(trained)) {
      auto [it, fresh] = range.try_emplace(key, v, v);
      if (!fresh) it->second = {std::min(it->second.first, v), std::max(it->second.second, v)};
    }
  }
  return range;
}

std::vector<std::string> outside_training(const TrainingRanges& range, const Case& c) {
  std::vector<std::string> out;
  for (auto& [key, v] : integers_of(c)) {
    auto it = range.find(key);
    if (it == range.end()) continue;
    auto [lo, hi] = it->second;
    if (v >= lo && v <= hi) continue;
    out.push_back(lo == hi ? fmt::format("{}={} is outside the training data, which has only {}={}: extrapolated", key, v,
                                         key, lo)
                           : fmt::format("{}={} is outside the training range {}..{}: extrapolated", key, v, lo, hi));
  }
  return out;
}

}  // namespace opmeter::predict
