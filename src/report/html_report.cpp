// The HTML report: one file, charts by the Vega-Lite bundled into the binary, a table of every case.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "analysis/run_where.hpp"
#include "context/build_info.hpp"
#include "report/chart_assets.hpp"
#include "report/charts.hpp"
#include "report/fleet_section.hpp"
#include "report/html_page.hpp"
#include "report/pipeline_section.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "report/run_names.hpp"
#include "scale/fleet.hpp"
#include "util/text.hpp"

namespace opmeter {

#include "report/report_page.inc"

namespace {

const std::map<std::string, std::string>& section_titles() {
  static const std::map<std::string, std::string> titles = {{"gemm-heatmap", "GEMM"},
                                                            {"gemm-scatter", "GEMM"},
                                                            {"dtype-curves", "GEMM"},
                                                            {"roofline", "Roofline"},
                                                            {"impl-comparison", "Implementations"},
                                                            {"efficiency", "Energy efficiency"},
                                                            {"fusion", "Fusion"},
                                                            {"quantization", "Quantization"},
                                                            {"burst-sustained", "GPU: burst, sustained, telemetry"},
                                                            {"gpu-telemetry", "GPU: burst, sustained, telemetry"}};
  return titles;
}

// A number's cell: its text, and its value in data-v, which the table sorts by (a cell
// without one sorts last either way).
std::string num_cell(const std::string& text, std::optional<double> v) {
  if (!v || !std::isfinite(*v) || text.empty()) return "<td class=\"num\"></td>";
  return fmt::format("<td class=\"num\" data-v=\"{:.9g}\">{}</td>", *v, text);
}
std::string num_cell(const std::optional<double>& v, const char* format) {
  return num_cell(v ? fmt::format(fmt::runtime(format), *v) : "", v);
}

// The columns after case and status: a result that did not finish has none of them, and its
// reason takes their place (under the narrow status, it made each such row hundreds of px tall).
constexpr int kDataColumns = 12;

void case_row(std::string& out, const Result& r, const std::string& run) {
  bool ok = r.status == Status::ok;
  std::string cls(to_string(r.status));
  if (r.has_flag("unconverged")) cls += " unconverged";
  std::string status(to_string(r.status));
  for (auto& f : r.flags) status += ", " + f;
  const std::string machine = machine_of(r);  // merged results: the machine that measured it
  fmt::format_to(std::back_inserter(out), "<tr class=\"{}\">{}<td class=\"case\">{}</td>", cls,
                 run.empty() ? "" : "<td class=\"run\">" + html_escape(run) + "</td>",
                 html_escape(r.case_string) +
                     (r.kase.label.empty() ? "" : " <span class=\"label\">" + html_escape(r.kase.label) + "</span>") +
                     (machine.empty() ? "" : " <span class=\"label\">on " + html_escape(machine) + "</span>"));
  if (!ok && !r.reason.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "<td><span class=\"status\">{}</span></td><td class=\"reason\" colspan=\"{}\">{}</td></tr>\n",
                   html_escape(status), kDataColumns, html_escape(r.reason));
    return;
  }
  const std::string why = r.reason.empty() ? rate_note(r) : r.reason;  // a no-rate note says why GB/s is empty
  std::string reason = why.empty() ? "" : "<br>" + html_escape(why);
  auto rate = [&](double v) { return ok && v > 0 ? std::optional<double>(v) : std::nullopt; };
  auto if_ok = [&](double v) { return ok ? std::optional<double>(v) : std::nullopt; };
  auto spread = [&](double fraction) {
    return num_cell(ok ? spread_percent(fraction, r.summary.count) : "",
                    ok && r.summary.count > 1 ? std::optional<double>(fraction) : std::nullopt);
  };
  auto pct_roof = r.efficiency ? std::optional<double>(*r.efficiency * 100) : std::nullopt;
  auto s = sustained_rate(r);
  fmt::format_to(std::back_inserter(out), "<td><span class=\"status\">{}</span>{}</td>{}{}{}{}{}{}{}{}{}{}{}{}</tr>\n",
                 html_escape(status), reason, num_cell(ok ? human_time(r.summary.median) : "", if_ok(r.summary.median)),
                 num_cell(rate(r.gflops), "{:.2f}"), num_cell(rate(r.gbps), "{:.2f}"), num_cell(r.pct_peak, "{:.1f}%"),
                 num_cell(r.pct_bandwidth, "{:.1f}%"), num_cell(pct_roof, "{:.1f}%"), spread(r.summary.precision),
                 spread(r.summary.rel_noise),
                 num_cell(ok ? std::to_string(r.summary.count) : "", if_ok(r.summary.count)),
                 // GFLOP/s or GB/s: no one scale to sort by, so the column (a plain th) sorts as text.
                 "<td class=\"num\">" + (s ? fmt::format("{:.2f} {}", s->value, s->unit) : std::string()) + "</td>",
                 num_cell(r.avg_power_w, "{:.1f}"), num_cell(r.max_error, "{:.2e}"));
}

// Why a report has no chart. Successful cases without sample times (results written by another
// tool, or edited) are named as such: "no successful measurements" above their rows misled.
std::string nothing_to_chart(const std::vector<Result>& results) {
  if (results.empty()) return "These results hold no cases.";
  auto timeless = std::count_if(results.begin(), results.end(),
                                [](const Result& r) { return r.status == Status::ok && !(r.summary.median > 0); });
  if (timeless == 0) return "These results hold nothing to chart (no successful measurements).";
  auto ok = std::count_if(results.begin(), results.end(), [](const Result& r) { return r.status == Status::ok; });
  return fmt::format(
      "These results hold nothing to chart: {} of the {} successful cases carry no sample times "
      "(samples_s), which the charts are drawn from. The table shows the rates the file gives.",
      timeless, ok);
}

void kv_table(std::string& out, const nlohmann::json& j) {
  out += "<table class=\"kv\"><tbody>\n";
  for (auto& [k, v] : flatten_json(j))
    fmt::format_to(std::back_inserter(out), "<tr><td>{}</td><td>{}</td></tr>\n", html_escape(k), html_escape(v));
  out += "</tbody></table>\n";
}

// A merged run's machines (64 GPUs: thousands of rows), each collapsed under its name.
void fleet_contexts(std::string& out, const nlohmann::json& context) {
  if (!context.contains("fleet") || !context["fleet"].is_array()) return;
  out += fmt::format("<h3>Machines of the merged runs ({})</h3>\n", context["fleet"].size());
  for (auto& f : context["fleet"]) {
    out += fmt::format("<details><summary>{}</summary>\n", html_escape(f.value("name", "?")));
    kv_table(out, f);
    out += "</details>\n";
  }
}

void counts(std::string& out, const std::vector<Result>& results) {
  auto [by_status, unconverged] = tally(results);
  out += fmt::format("<div class=\"counts\"><span>{}</span>", count_of(results.size(), "case"));
  for (auto& [status, n] : by_status)
    out += fmt::format("<span class=\"{}\">{} {}</span>", status == "ok" ? "" : status == "skipped" ? "warn" : "bad",
                       n, status);
  if (unconverged) out += fmt::format("<span class=\"warn\">{} unconverged</span>", unconverged);
  out += "</div>\n";
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

StatusTally tally(const std::vector<Result>& results) {
  StatusTally t;
  for (auto& r : results) {
    ++t.by_status[std::string(to_string(r.status))];
    t.unconverged += r.has_flag("unconverged");
  }
  return t;
}

std::vector<Result> merged_results(const std::vector<ResultSet>& sets) {
  std::vector<Result> all;
  for (auto& s : sets) all.insert(all.end(), s.results.begin(), s.results.end());
  return all;
}

std::string html_report(const std::vector<ResultSet>& sets, const std::vector<pipeline::PipelineSummary>& pipelines) {
  auto results = merged_results(sets);
  std::vector<std::vector<Result>> runs;
  std::vector<std::string> names;
  for (auto& s : sets) {
    runs.push_back(s.results);
    names.push_back(s.source);
  }
  auto charts = report_charts(runs, names);
  std::string out;
  out.reserve(1 << 20);
  std::string sources;
  for (auto& s : sets) sources += (sources.empty() ? "" : ", ") + html_escape(s.source);
  out += fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>opmeter report</title>\n"
      "<style>{}</style>\n<script>{}</script>\n",
      kContentSecurityPolicy, kStyle, kErrorHook);
  for (auto& lib : chart_libraries()) out += fmt::format("<script>/* {} {} */\n{}\n</script>\n", lib.name, lib.version, inline_js(lib.js));
  out += fmt::format("</head><body>\n<header><h1>opmeter report</h1><div class=\"sub\">{} &middot; generated {} by opmeter {}</div></header>\n<main>\n",
                     sources, utc_now_iso(), build_info::version);
  if (chart_libraries().empty())
    out += "<p class=\"warning\"><b>Charts are missing:</b> this opmeter was built without the chart libraries "
           "(-DOPMETER_CHARTS=OFF). Run scripts/install-deps.sh (or cd web &amp;&amp; npm ci) and rebuild to draw them; "
           "the tables below are complete.</p>\n";
  counts(out, results);

  std::string section;
  nlohmann::json specs = nlohmann::json::array();
  for (auto& c : charts) {
    auto title = section_titles().at(c.kind);
    if (title != section) out += fmt::format("<h2>{}</h2>\n", title);
    section = title;
    out += fmt::format("<figure><figcaption><b>{}</b><br>{}</figcaption><div class=\"chart\" id=\"{}\"></div></figure>\n",
                       html_escape(c.title), html_escape(c.caption), c.id);
    specs.push_back({{"id", c.id}, {"spec", c.spec}});
  }
  const std::string fleet = fleet_html(sets, specs);
  if (charts.empty() && pipelines.empty() && fleet.empty())
    out += "<h2>Charts</h2><p>" + nothing_to_chart(results) + "</p>\n";
  out += pipelines_html(pipelines, specs);
  out += fleet;

  // Several runs: a run column, so that one case measured in each is told apart.
  const bool several = sets.size() > 1;
  const auto run_names = short_run_names(sets);
  out += fmt::format(
      "<h2>Cases</h2>\n<input id=\"case-filter\" type=\"search\" placeholder=\"filter cases (substring)\">\n"
      "<div class=\"wide\"><table id=\"cases\" class=\"sortable\"><thead><tr>{}<th>case</th><th>status</th>"
      "<th class=\"num\">median</th><th class=\"num\">GFLOP/s</th><th class=\"num\">GB/s</th>"
      "<th class=\"num\">% of peak</th><th class=\"num\">% of BW</th><th class=\"num\">% of roofline</th>"
      "<th class=\"num\">±</th><th class=\"num\">noise</th><th class=\"num\">samples</th>"
      "<th>sustained</th><th class=\"num\">power (W)</th><th class=\"num\">max "
      "error</th></tr></thead><tbody>\n",
      several ? "<th>run</th>" : "");
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (auto& r : sets[i].results) case_row(out, r, several ? run_names[i] : "");
  out += "</tbody></table></div>\n";

  out += "<h2>Machine and run settings</h2>\n";
  for (std::size_t i = 0; i < sets.size(); ++i) {
    auto& s = sets[i];
    out += fmt::format("<details{}><summary>{} ({}, {})</summary>\n", i == 0 ? " open" : "", html_escape(s.source),
                       describe(s.format), count_of(s.results.size(), "case"));
    if (s.context.empty()) {
      out += "<p>No machine context: a results.jsonl journal carries none.</p>\n";
    } else {
      nlohmann::json machine = s.context;
      machine.erase("run");
      machine.erase("fleet");
      out += "<h3>Run settings</h3>\n";
      if (s.context.contains("run")) kv_table(out, s.context["run"]);
      else out += "<p>Not recorded in these results.</p>\n";
      out += "<h3>Machine</h3>\n";
      kv_table(out, machine);
      fleet_contexts(out, s.context);
    }
    out += "</details>\n";
  }
  std::string libs;
  for (auto& lib : chart_libraries()) libs += fmt::format("{}{} {}", libs.empty() ? "" : ", ", lib.name, lib.version);
  out += fmt::format("<p class=\"sub\">Charts: {}.</p>\n", libs.empty() ? "none (this build has no chart library)" : libs);
  out += fmt::format("</main>\n<pre id=\"render-status\" hidden></pre>\n<script type=\"application/json\" id=\"chart-specs\">{}</script>\n"
                     "<script>{}</script>\n<script>{}</script>\n<script>{}</script>\n</body></html>\n",
                     script_json(specs), kCaseFilter, kTableSort, kRender);
  return out;
}

}  // namespace opmeter
