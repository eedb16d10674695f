#include "report/fleet_section.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/fleet_chart.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "scale/merge.hpp"

namespace opmeter {
namespace {

using scale::FleetCase;
using scale::FleetEntry;
using scale::Machine;
using Machines = std::map<std::string, Machine>;
using Summaries = std::vector<scale::MachineSummary>;

// Up to this many outliers, their full list is open; beyond, it is collapsed under the per-machine table.
constexpr std::size_t kOpenOutliers = 20;

std::string hardware_of(const Machines& machines, const std::string& name) {
  auto m = machines.find(name);
  return m == machines.end() ? "?" : m->second.hardware;
}

// A numeric cell sorts by data-v (its exact value), not by its text ("3 ms" vs "900 us").
std::string num(double value, const std::string& text) {
  return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", value, text);
}
std::string pct(double fraction) { return fmt::format("{:+.1f}%", fraction * 100); }

std::string note(const FleetEntry& e) {
  std::string s = e.outlier ? "<b>outlier</b>" : "";
  for (auto& d : e.differences) s += (s.empty() ? "" : "; ") + html_escape(d);
  for (auto& f : e.flags)
    if (f != "contended" || !e.outlier) s += (s.empty() ? "" : "; ") + html_escape(f);  // an outlier names it already
  return s;
}

std::size_t outliers_in(const FleetCase& fc) {
  return std::count_if(fc.entries.begin(), fc.entries.end(), [](auto& e) { return e.outlier; });
}

void summary(std::string& out, const std::vector<FleetCase>& fleet, const Machines& machines) {
  std::map<std::string, std::size_t> groups;  // hardware -> machines
  for (auto& [name, m] : machines) ++groups[m.hardware];
  std::size_t outliers = 0;
  for (auto& fc : fleet) outliers += outliers_in(fc);
  std::string kinds;
  for (auto& [hardware, n] : groups) kinds += fmt::format("{}{} &times; {}", kinds.empty() ? "" : ", ", n, html_escape(hardware));
  out += fmt::format("<p>{} machines ({}); {} cases ran on several machines; <b>{} outlier{}</b>. Machines are ranked "
                     "fastest first by median time; an outlier is more than {:.0f}% from the median of at least {} "
                     "machines of identical hardware (same model, default clocks, default power limit), shown with the "
                     "environment differences that may explain it (driver, clocks, power cap, ECC, MIG, busy "
                     "neighbours).</p>\n",
                     machines.size(), kinds, fleet.size(), outliers, outliers == 1 ? "" : "s",
                     scale::kOutlierThreshold * 100, scale::kMinIdenticalForOutlier);
}

// The machines with outliers, most first, with what differs on them: a short table even when a
// slow GPU is an outlier on every one of 50 cases. Then every outlier, furthest from its
// hardware's median first (collapsed when long).
// Each machine's summary, most outliers first (then furthest from its hardware's median): the
// outlier and machine tables both list them in this order.
Summaries ranked_summaries(const std::vector<FleetCase>& fleet) {
  auto summaries = scale::machine_summaries(fleet);
  std::stable_sort(summaries.begin(), summaries.end(), [](auto& a, auto& b) {
    return a.outliers != b.outliers ? a.outliers > b.outliers : std::abs(a.worst_vs_hardware) > std::abs(b.worst_vs_hardware);
  });
  return summaries;
}

void outlier_tables(std::string& out, const std::vector<FleetCase>& fleet, const Summaries& summaries,
                    const Machines& machines) {
  std::vector<std::pair<const FleetCase*, const FleetEntry*>> rows;
  for (auto& fc : fleet)
    for (auto& e : fc.entries)
      if (e.outlier) rows.push_back({&fc, &e});
  out += "<h3>Outliers</h3>\n";
  if (rows.empty()) {
    out += "<p>None: every machine ran within the threshold of its identical hardware.</p>\n";
    return;
  }
  std::map<std::string, std::vector<std::string>> differences;  // machine -> what differs, once each
  for (auto& [fc, e] : rows)
    for (auto& d : e->differences)
      if (auto& v = differences[e->machine]; std::find(v.begin(), v.end(), d) == v.end()) v.push_back(d);
  out += "<div class=\"wide\"><table class=\"sortable fleet-outlier-machines\"><thead><tr><th>machine</th><th>hardware</th>"
         "<th>outlier cases</th><th>of cases</th><th>median vs identical</th><th>worst vs identical</th>"
         "<th>differences that may explain it</th></tr></thead><tbody>\n";
  for (auto& s : summaries) {
    if (s.outliers == 0) continue;
    std::string why;
    for (auto& d : differences[s.machine]) why += (why.empty() ? "" : "; ") + html_escape(d);
    out += fmt::format("<tr data-outlier-machine=\"{0}\"><td>{0}</td><td>{1}</td>{2}{3}{4}{5}<td>{6}</td></tr>\n",
                       html_escape(s.machine), html_escape(hardware_of(machines, s.machine)),
                       num(s.outliers, std::to_string(s.outliers)), num(s.cases, std::to_string(s.cases)),
                       num(s.median_vs_hardware * 100, pct(s.median_vs_hardware)),
                       num(s.worst_vs_hardware * 100, pct(s.worst_vs_hardware)), why.empty() ? "none recorded" : why);
  }
  out += "</tbody></table></div>\n";
  std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) {
    return std::abs(a.second->vs_hardware_median) > std::abs(b.second->vs_hardware_median);
  });
  out += fmt::format("<details{}><summary>Every outlier ({}), furthest first</summary>\n<div class=\"wide\"><table class=\"sortable fleet-outliers\">"
                     "<thead><tr><th>case</th><th>machine</th><th>hardware</th><th>median</th><th>vs identical</th>"
                     "<th>differences that may explain it</th></tr></thead><tbody>\n",
                     rows.size() <= kOpenOutliers ? " open" : "", rows.size());
  for (auto& [fc, e] : rows)
    out += fmt::format("<tr data-case=\"{0}\" data-machine=\"{1}\"><td class=\"case\">{0}</td><td>{1}</td><td>{2}</td>{3}{4}<td>{5}</td></tr>\n",
                       html_escape(fc->case_string), html_escape(e->machine), html_escape(hardware_of(machines, e->machine)),
                       num(e->median_s, human_time(e->median_s)), num(e->vs_hardware_median * 100, pct(e->vs_hardware_median)),
                       note(*e));
  out += "</tbody></table></div>\n</details>\n";
}

void machine_table(std::string& out, const Summaries& rows, const Machines& machines) {
  out += fmt::format("<details><summary>Machines ({}), most outliers first</summary>\n<div class=\"wide\"><table class=\"sortable fleet-machines\">"
                     "<thead><tr><th>machine</th><th>host</th><th>device</th><th>hardware</th><th>cases</th><th>outliers</th>"
                     "<th>median vs identical</th><th>worst vs identical</th><th>environment</th></tr></thead><tbody>\n",
                     rows.size());
  for (auto& s : rows) {
    auto m = machines.find(s.machine);
    std::string env;
    if (m != machines.end())
      for (auto& [k, v] : m->second.environment)
        if (!v.empty()) env += (env.empty() ? "" : ", ") + html_escape(k + "=" + v);
    out += fmt::format("<tr data-machine=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}{}{}<td>{}</td></tr>\n",
                       html_escape(s.machine), html_escape(s.machine), m == machines.end() ? "" : html_escape(m->second.host),
                       m == machines.end() ? "" : html_escape(m->second.device), html_escape(hardware_of(machines, s.machine)),
                       num(s.cases, std::to_string(s.cases)), num(s.outliers, std::to_string(s.outliers)),
                       num(s.median_vs_hardware * 100, pct(s.median_vs_hardware)),
                       num(s.worst_vs_hardware * 100, pct(s.worst_vs_hardware)), env);
  }
  out += "</tbody></table></div>\n</details>\n";
}

// Each case's ranking, collapsed; cases with outliers first.
void case_tables(std::string& out, const std::vector<FleetCase>& fleet, const Machines& machines) {
  std::vector<const FleetCase*> order;
  for (auto& fc : fleet) order.push_back(&fc);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return outliers_in(*a) > outliers_in(*b); });
  out += fmt::format("<details><summary>Every case, machines ranked fastest first ({} cases)</summary>\n"
                     "<input class=\"fleet-filter\" type=\"search\" placeholder=\"filter cases (substring)\">\n",
                     fleet.size());
  for (auto* fc : order) {
    std::size_t n = outliers_in(*fc);
    out += fmt::format("<details class=\"fleet-case\" data-case=\"{0}\"><summary><code>{0}</code>: {1} machines, spread {2:.1f}%{3}</summary>\n"
                       "<div class=\"wide\"><table class=\"sortable fleet-ranking\"><thead><tr><th>rank</th><th>machine</th><th>hardware</th>"
                       "<th>median</th><th>vs identical</th><th>note</th></tr></thead><tbody>\n",
                       html_escape(fc->case_string), fc->entries.size(), fc->spread * 100,
                       n ? fmt::format(", <b>{} outlier{}</b>", n, n == 1 ? "" : "s") : "");
    int rank = 1;
    for (auto& e : fc->entries) {
      out += fmt::format("<tr data-machine=\"{}\"{}>{}<td>{}</td><td>{}</td>{}{}<td>{}</td></tr>\n", html_escape(e.machine),
                         e.outlier ? " class=\"outlier\"" : "", num(rank, std::to_string(rank)), html_escape(e.machine),
                         html_escape(hardware_of(machines, e.machine)), num(e.median_s, human_time(e.median_s)),
                         num(e.vs_hardware_median * 100, pct(e.vs_hardware_median)), note(e));
      ++rank;
    }
    out += "</tbody></table></div>\n</details>\n";
  }
  out += "</details>\n";
}

}  // namespace

std::string fleet_html(const std::vector<ResultSet>& sets, nlohmann::json& specs) {
  std::string out;
  std::vector<Machines> machines_per_set;
  for (auto& s : sets) machines_per_set.push_back(scale::machines_of(s.context));
  const auto with_fleet = std::count_if(machines_per_set.begin(), machines_per_set.end(), [](auto& m) { return !m.empty(); });
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const Machines& machines = machines_per_set[i];
    if (machines.empty()) continue;
    auto fleet = scale::fleet_view(sets[i].results, machines);
    if (fleet.empty()) continue;
    if (out.empty()) out += "<h2 id=\"fleet\">Fleet</h2>\n";
    if (with_fleet > 1) out += fmt::format("<h3>{}</h3>\n", html_escape(sets[i].source));
    out += fmt::format("<section class=\"fleet\" data-source=\"{}\">\n", html_escape(sets[i].source));
    summary(out, fleet, machines);
    const Summaries summaries = ranked_summaries(fleet);
    outlier_tables(out, fleet, summaries, machines);
    if (auto c = fleet_heatmap_chart(fleet, fmt::format("fleet-heatmap-{}", i))) {
      out += fmt::format("<figure><figcaption><b>{}</b><br>{}</figcaption><div class=\"chart\" id=\"{}\"></div></figure>\n",
                         html_escape(c->title), html_escape(c->caption), c->id);
      specs.push_back({{"id", c->id}, {"spec", c->spec}});
    }
    machine_table(out, summaries, machines);
    case_tables(out, fleet, machines);
    out += "</section>\n";
  }
  return out;
}

}  // namespace opmeter
