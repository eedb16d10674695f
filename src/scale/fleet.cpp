#include "scale/fleet.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "opmeter/stats.hpp"
#include "util/markdown_cell.hpp"

namespace opmeter::scale {
namespace {

std::string text(const nlohmann::json& j) {
  if (j.is_null()) return "";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) return fmt::format("{:g}", j.get<double>());
  return j.dump();
}

std::string at(const nlohmann::json& j, const char* key) { return j.is_object() && j.contains(key) ? text(j[key]) : ""; }

// The most common value of a key among machines (ties: the smallest), to name how one differs.
std::string usual(const std::vector<const Machine*>& group, const std::string& key) {
  std::map<std::string, int> count;
  for (auto* m : group) {
    auto it = m->environment.find(key);
    ++count[it == m->environment.end() ? "" : it->second];
  }
  return std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
}

}  // namespace

Machine machine_of(const nlohmann::json& context, const std::string& device, const std::string& name) {
  Machine m;
  m.name = name;
  m.host = at(context, "host_name");
  m.device = device;
  const nlohmann::json* gpu = nullptr;
  if (context.contains("gpus") && context["gpus"].is_array())
    for (auto& g : context["gpus"])
      if (at(g, "device") == device) gpu = &g;
  if (gpu) {
    // The board's default power limit is what identical hardware shares; the limit enforced now
    // (an administrator's cap) is a difference that explains. Older contexts record only the latter.
    const char* limit = gpu->contains("power_limit_default_w") ? "power_limit_default_w" : "power_limit_w";
    m.hardware = fmt::format("{}, {} MHz, {} W", at(*gpu, "name"), at(*gpu, "sm_clock_default_mhz"), at(*gpu, limit));
    for (const char* key : {"sm_clock_now_mhz", "mem_clock_now_mhz", "power_limit_w", "ecc_enabled", "mig_enabled"})
      m.environment[key] = at(*gpu, key);
    if (context.contains("cuda")) m.environment["driver"] = at(context["cuda"], "nvml_driver");
  } else {
    const auto& cpu = context.contains("cpu") ? context["cpu"] : nlohmann::json::object();
    m.hardware = fmt::format("{}, {} CPUs", at(cpu, "model"), at(cpu, "usable_cpus"));
    m.environment["governor"] = at(cpu, "governor");
    m.environment["mhz"] = at(cpu, "mhz");
  }
  if (context.contains("load")) m.environment["loadavg_1m"] = at(context["load"], "loadavg_1m");
  return m;
}

std::vector<FleetCase> fleet_view(const std::vector<Result>& results, const std::map<std::string, Machine>& machines,
                                  double threshold) {
  std::map<std::string, std::vector<const Result*>> by_case;
  for (auto& r : results)
    if (r.status == Status::ok && r.summary.median > 0 && r.details.count(kMachineDetail))
      by_case[r.case_string].push_back(&r);
  std::vector<FleetCase> out;
  for (auto& [case_string, rs] : by_case) {
    if (rs.size() < 2) continue;
    FleetCase fc{case_string, {}, 0};
    std::map<std::string, std::vector<std::size_t>> by_hardware;  // entry indices
    std::vector<double> all;
    for (auto* r : rs) {
      FleetEntry e;
      e.machine = r->details.at(kMachineDetail);
      e.median_s = r->summary.median;
      e.flags = r->flags;
      all.push_back(e.median_s);
      auto m = machines.find(e.machine);
      by_hardware[m == machines.end() ? "" : m->second.hardware].push_back(fc.entries.size());
      fc.entries.push_back(std::move(e));
    }
    fc.spread = (*std::max_element(all.begin(), all.end()) - *std::min_element(all.begin(), all.end())) / median(all);
    for (auto& [hardware, idx] : by_hardware) {
      std::vector<double> times;
      std::vector<const Machine*> group;
      for (auto i : idx) {
        times.push_back(fc.entries[i].median_s);
        auto m = machines.find(fc.entries[i].machine);
        if (m != machines.end()) group.push_back(&m->second);
      }
      const double med = median(times);
      for (auto i : idx) {
        auto& e = fc.entries[i];
        e.vs_hardware_median = e.median_s / med - 1;
        e.outlier = idx.size() >= kMinIdenticalForOutlier && std::abs(e.vs_hardware_median) > threshold;
        auto m = machines.find(e.machine);
        if (!e.outlier || m == machines.end()) continue;
        for (auto& [key, value] : m->second.environment)
          if (auto normal = usual(group, key); value != normal)
            e.differences.push_back(fmt::format("{}: {} (others {})", key, value.empty() ? "?" : value, normal.empty() ? "?" : normal));
        if (std::find(e.flags.begin(), e.flags.end(), "contended") != e.flags.end())
          e.differences.push_back("busy neighbours (contended)");
      }
    }
    std::sort(fc.entries.begin(), fc.entries.end(), [](auto& a, auto& b) { return a.median_s < b.median_s; });
    out.push_back(std::move(fc));
  }
  return out;
}

std::vector<MachineSummary> machine_summaries(const std::vector<FleetCase>& fleet) {
  std::map<std::string, std::vector<double>> deviations;
  std::map<std::string, MachineSummary> by_name;
  for (auto& fc : fleet)
    for (auto& e : fc.entries) {
      auto& s = by_name[e.machine];
      s.machine = e.machine;
      ++s.cases;
      s.outliers += e.outlier;
      if (std::abs(e.vs_hardware_median) > std::abs(s.worst_vs_hardware)) s.worst_vs_hardware = e.vs_hardware_median;
      deviations[e.machine].push_back(e.vs_hardware_median);
    }
  std::vector<MachineSummary> out;
  for (auto& [name, s] : by_name) {
    s.median_vs_hardware = median(deviations[name]);
    out.push_back(s);
  }
  return out;
}

nlohmann::json fleet_json(const std::vector<FleetCase>& fleet, const std::map<std::string, Machine>& machines) {
  nlohmann::json j = {{"schema", "opmeter-fleet/1"}, {"outlier_threshold", kOutlierThreshold}, {"min_identical_for_outlier", kMinIdenticalForOutlier}};
  nlohmann::json ms = nlohmann::json::array();
  for (auto& s : machine_summaries(fleet)) {
    nlohmann::json m = {{"name", s.machine}, {"cases", s.cases}, {"outliers", s.outliers},
                        {"median_vs_hardware_median", s.median_vs_hardware}, {"worst_vs_hardware_median", s.worst_vs_hardware}};
    if (auto it = machines.find(s.machine); it != machines.end())
      m.update({{"host", it->second.host}, {"device", it->second.device}, {"hardware", it->second.hardware},
                {"environment", it->second.environment}});
    ms.push_back(std::move(m));
  }
  j["machines"] = std::move(ms);
  nlohmann::json cases = nlohmann::json::array();
  for (auto& fc : fleet) {
    nlohmann::json entries = nlohmann::json::array();
    int rank = 1;
    for (auto& e : fc.entries)
      entries.push_back({{"rank", rank++}, {"machine", e.machine}, {"median_s", e.median_s},
                         {"vs_hardware_median", e.vs_hardware_median}, {"outlier", e.outlier},
                         {"differences", e.differences}, {"flags", e.flags}});
    cases.push_back({{"case", fc.case_string}, {"spread", fc.spread}, {"entries", std::move(entries)}});
  }
  j["cases"] = std::move(cases);
  return j;
}

std::string fleet_markdown(const std::vector<FleetCase>& fleet, const std::map<std::string, Machine>& machines) {
  if (fleet.empty()) return "";
  std::string md = "## Fleet\n\nThe same case on several machines, fastest first. Outliers are more than "
                   "5% from the median of at least three machines of identical hardware.\n\n";
  for (auto& fc : fleet) {
    md += fmt::format("### `{}`\n\nspread {:.1f}%\n\n| rank | machine | hardware | median | vs identical | note |\n|---|---|---|---|---|---|\n",
                      fc.case_string, fc.spread * 100);
    int rank = 1;
    for (auto& e : fc.entries) {
      auto m = machines.find(e.machine);
      std::string note = e.outlier ? "**outlier**" : "";
      for (auto& d : e.differences) note += "; " + d;
      md += fmt::format("| {} | {} | {} | {:.4g} s | {:+.1f}% | {} |\n", rank++, markdown_cell(e.machine),
                        markdown_cell(m == machines.end() ? "?" : m->second.hardware), e.median_s,
                        e.vs_hardware_median * 100, markdown_cell(note));
    }
    md += "\n";
  }
  return md;
}

}  // namespace opmeter::scale
