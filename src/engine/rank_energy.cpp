#include "engine/rank_energy.hpp"

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/host_name.hpp"

namespace opmeter {

LaunchEnergy sum_over_ranks(const std::vector<RankEnergy>& ranks) {
  LaunchEnergy out;
  std::set<std::string> seen;
  double joules = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankEnergy& e = ranks[r];
    if (!e.joules_per_call) {
      out.reason = fmt::format("rank {} has no energy reading ({})", r, e.reason.empty() ? "no reason given" : e.reason);
      out.avg_power_w = 0;
      out.counters = 0;
      return out;
    }
    if (!seen.insert(e.counter).second) continue;  // the same counter, read over the same window
    joules += *e.joules_per_call;
    out.avg_power_w += e.avg_power_w;
    ++out.counters;
  }
  if (out.counters == 0) {
    out.reason = "no ranks";
    return out;
  }
  out.joules_per_call = joules;
  return out;
}

std::string energy_counter_name(const Result& r) {
  std::string name = fmt::format("{}/{}", host_name(), r.kase.on_host() ? "cpu" : r.kase.device);
  if (auto it = r.details.find("pci_bus_id"); it != r.details.end() && !r.kase.on_host()) name += "/" + it->second;
  return name;
}

void sum_energy_over_ranks(Result& r, scale::LaunchComm& comm) {
  nlohmann::json mine = {{"counter", energy_counter_name(r)}, {"reason", r.energy_reason}, {"watts", r.avg_power_w.value_or(0)}};
  if (r.energy_j) mine["joules"] = *r.energy_j;
  std::vector<RankEnergy> ranks;
  for (const std::string& text : comm.gather(mine.dump())) {
    auto j = nlohmann::json::parse(text);
    RankEnergy e{.counter = j.at("counter"), .avg_power_w = j.at("watts"), .reason = j.at("reason")};
    if (j.contains("joules")) e.joules_per_call = j.at("joules").get<double>();
    ranks.push_back(std::move(e));
  }
  if (r.energy_j) r.details["energy_this_rank_j"] = fmt::format("{:.6g}", *r.energy_j);
  // The per-domain figures (RAPL's package, dram) are this rank's: not the launch's sum.
  for (auto it = r.metrics.begin(); it != r.metrics.end();)
    it = it->first.starts_with("energy_") && it->first.ends_with("_j") ? r.metrics.erase(it) : std::next(it);
  const LaunchEnergy sum = sum_over_ranks(ranks);
  if (!sum.joules_per_call) {
    r.energy_j.reset();
    r.avg_power_w.reset();
    r.energy_reason = sum.reason;
    return;
  }
  r.energy_j = sum.joules_per_call;
  r.avg_power_w = sum.avg_power_w;
  r.energy_reason.clear();
  r.details["energy_ranks"] = fmt::format("summed over {} counter{} of {} rank{}", sum.counters,
                                          sum.counters == 1 ? "" : "s", ranks.size(), ranks.size() == 1 ? "" : "s");
}

}  // namespace opmeter
