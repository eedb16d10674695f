// The model report: markdown for a repository, and one self-contained HTML page with the charts.
// Both say per group how far each model's held-out predictions were from the measurements.
#include "predict/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "context/build_info.hpp"
#include "opmeter/result.hpp"
#include "predict/report_parts.hpp"
#include "report/chart_assets.hpp"
#include "report/html_page.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "util/markdown_cell.hpp"
#include "util/text.hpp"

namespace opmeter {

#include "report/report_page.inc"

}  // namespace opmeter

namespace opmeter::predict {
namespace {

using report_parts::kNominalCoverage;
using report_parts::model_label;

std::string pct(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }
// The interval's factors as percentages on the prediction: 0.8, 1.15 -> "-20% / +15%".
std::string interval(const ErrorStats& e) { return fmt::format("{:+.0f}% / {:+.0f}%", (e.lo - 1) * 100, (e.hi - 1) * 100); }
std::string coverage(const ErrorStats& e) { return fmt::format("{:.0f}%", e.coverage * 100); }

const ErrorStats* stats_of(const GroupModel& g, ModelKind k) {
  auto it = g.cv.find(k);
  return it == g.cv.end() || it->second.n == 0 ? nullptr : &it->second;
}

std::string sources_text(const PredictModel& m, bool code) {
  std::string out;
  for (auto& s : m.sources) out += (out.empty() ? "" : ", ") + (code ? "`" + s + "`" : s);
  return out.empty() ? "no results files named" : out;
}

std::string folds_text(const PredictModel& m) {
  return fmt::format(
      "Every error is held out: {}-fold cross-validation, each case predicted by the models fitted without its "
      "fold. Error is |predicted - measured| / measured. The interval is the 5th to 95th percentile of measured / "
      "predicted, as a range on the prediction; coverage is how often a held-out case fell inside the interval "
      "computed from the other folds (nominal {:.0f}%).",
      m.folds, kNominalCoverage * 100);
}

std::string ceilings_text(const Ceilings& c) {
  std::string peaks;
  for (auto& [dtype, gflops] : c.peak_gflops) peaks += fmt::format("{}{} {:.0f}", peaks.empty() ? "" : ", ", dtype, gflops);
  return peaks.empty() ? "-" : peaks;
}

// The best model's worst held-out cases: the fit's own list, else the largest errors among the points.
std::vector<WorstCase> worst_cases(const GroupModel& g) {
  if (auto* e = stats_of(g, g.best); e && !e->worst.empty()) return e->worst;
  std::vector<WorstCase> out;
  for (auto& p : g.points) {
    auto it = p.predicted_s.find(g.best);
    if (it == p.predicted_s.end() || !(p.measured_s > 0)) continue;
    out.push_back({p.case_string, p.measured_s, it->second, std::abs(it->second - p.measured_s) / p.measured_s});
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.ape > b.ape; });
  if (out.size() > 5) out.resize(5);
  return out;
}

std::string title(const PredictModel& m) { return "opmeter predict: " + report_parts::machine_name(m); }

// --- markdown ------------------------------------------------------------------------------

std::string md_group(const GroupModel& g) {
  std::string out = fmt::format(
      "## {}\n\n{}.\n\n| model | median error | p90 error | interval | coverage | |\n"
      "|---|---:|---:|---:|---:|---|\n",
      markdown_cell(g.key), count_of(g.points.size(), "case"));
  for (auto k : kModelKinds) {
    auto* e = stats_of(g, k);
    if (!e) {
      out += fmt::format("| {} | - | - | - | - | not fitted |\n", model_label(k));
      continue;
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", model_label(k), pct(e->median_ape), pct(e->p90_ape),
                       interval(*e), coverage(*e), k == g.best ? "**best**" : "");
  }
  auto worst = worst_cases(g);
  if (!worst.empty()) {
    out += fmt::format("\nWorst cases of the best model ({}):\n\n| case | measured | predicted | error |\n|---|---:|---:|---:|\n",
                       model_label(g.best));
    for (auto& w : worst)
      out += fmt::format("| `{}` | {} | {} | {} |\n", markdown_code(w.case_string), human_time(w.measured_s),
                         human_time(w.predicted_s), pct(w.ape));
  }
  return out + "\n";
}

// --- HTML ----------------------------------------------------------------------------------

constexpr const char* kExtraStyle = R"css(
tr.best td { background: #e3f4e6; font-weight: 600; }
td.muted { color: #888; }
p.lead { max-width: 980px; }
)css";

std::string td_num(const std::string& text) { return "<td class=\"num\">" + text + "</td>"; }

void html_group_table(std::string& out, const GroupModel& g) {
  out += fmt::format("<h3 id=\"group-{}\">{}</h3>\n<p>{}; best: <b>{}</b>.</p>\n", html_escape(g.key),
                     html_escape(g.key), count_of(g.points.size(), "case"), model_label(g.best));
  out += "<table class=\"group\"><thead><tr><th>model</th><th>median error</th><th>p90 error</th><th>interval</th>"
         "<th>coverage</th><th></th></tr></thead><tbody>\n";
  for (auto k : kModelKinds) {
    auto* e = stats_of(g, k);
    if (!e) {
      out += fmt::format("<tr><td>{}</td><td class=\"muted\" colspan=\"5\">not fitted</td></tr>\n", model_label(k));
      continue;
    }
    out += fmt::format("<tr{}><td>{}</td>{}{}{}{}<td>{}</td></tr>\n", k == g.best ? " class=\"best\"" : "", model_label(k),
                       td_num(pct(e->median_ape)), td_num(pct(e->p90_ape)), td_num(interval(*e)), td_num(coverage(*e)),
                       k == g.best ? "best" : "");
  }
  out += "</tbody></table>\n";
  auto worst = worst_cases(g);
  if (worst.empty()) return;
  out += fmt::format("<p>Worst cases of the best model ({}):</p>\n<table class=\"worst\"><thead><tr><th>case</th><th>measured</th>"
                     "<th>predicted</th><th>error</th></tr></thead><tbody>\n",
                     model_label(g.best));
  for (auto& w : worst)
    out += fmt::format("<tr><td class=\"case\">{}</td>{}{}{}</tr>\n", html_escape(w.case_string), td_num(human_time(w.measured_s)),
                       td_num(human_time(w.predicted_s)), td_num(pct(w.ape)));
  out += "</tbody></table>\n";
}

void html_summary_table(std::string& out, const PredictModel& m) {
  out += "<table id=\"groups\"><thead><tr><th>group</th><th>cases</th><th>best</th><th>median error</th><th>p90 error</th>"
         "<th>interval</th><th>coverage</th></tr></thead><tbody>\n";
  for (auto& g : m.groups) {
    auto* e = stats_of(g, g.best);
    out += fmt::format("<tr><td><a href=\"#group-{}\">{}</a></td>{}<td>{}</td>", html_escape(g.key), html_escape(g.key),
                       td_num(std::to_string(g.points.size())), model_label(g.best));
    out += e ? td_num(pct(e->median_ape)) + td_num(pct(e->p90_ape)) + td_num(interval(*e)) + td_num(coverage(*e))
             : "<td class=\"muted\" colspan=\"4\">no held-out error</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
}

void html_ceilings(std::string& out, const PredictModel& m) {
  if (m.ceilings.empty()) return;
  out += "<h2>Ceilings</h2>\n<table id=\"ceilings\"><thead><tr><th>device</th><th>peak GFLOP/s</th><th>memory GB/s</th>"
         "<th>source</th></tr></thead><tbody>\n";
  for (auto& [device, c] : m.ceilings)
    out += fmt::format("<tr><td>{}</td><td>{}</td>{}<td>{}</td></tr>\n", html_escape(device), html_escape(ceilings_text(c)),
                       td_num(fmt::format("{:.1f}", c.memory_gbps)), html_escape(c.source));
  out += "</tbody></table>\n";
}

// Every held-out case with each model's prediction: what the charts draw, to search.
void html_cases(std::string& out, const PredictModel& m) {
  out += "<h2>Cases</h2>\n<input id=\"case-filter\" type=\"search\" placeholder=\"filter cases (substring)\">\n"
         "<table id=\"cases\"><thead><tr><th>case</th><th>fold</th><th>measured</th>";
  for (auto k : kModelKinds) out += fmt::format("<th>{}</th>", model_label(k));
  out += "</tr></thead><tbody>\n";
  for (auto& g : m.groups)
    for (auto& p : g.points) {
      out += fmt::format("<tr><td class=\"case\">{}</td>{}{}", html_escape(p.case_string), td_num(std::to_string(p.fold)),
                         td_num(human_time(p.measured_s)));
      for (auto k : kModelKinds) {
        auto it = p.predicted_s.find(k);
        out += td_num(it == p.predicted_s.end() ? "" : human_time(it->second));
      }
      out += "</tr>\n";
    }
  out += "</tbody></table>\n";
}

void html_context(std::string& out, const PredictModel& m) {
  out += "<h2>Machine</h2>\n";
  if (!m.context.is_object() || m.context.empty()) {
    out += "<p>The model file carries no machine context.</p>\n";
    return;
  }
  out += "<details><summary>The context of the results it was fitted on</summary>\n<table class=\"kv\"><tbody>\n";
  for (auto& [k, v] : flatten_json(m.context))
    out += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_escape(k), html_escape(v));
  out += "</tbody></table></details>\n";
}

}  // namespace

namespace report_parts {

std::string machine_name(const PredictModel& m) {
  const auto& ctx = m.context;
  std::set<std::string> devices;
  for (auto& g : m.groups) devices.insert(g.device);
  if (devices.empty())
    for (auto& [d, c] : m.ceilings) devices.insert(d);
  auto cpu_model = [&]() -> std::string {
    if (ctx.is_object() && ctx.contains("cpu") && ctx["cpu"].is_object()) return ctx["cpu"].value("model", "");
    return "";
  };
  auto gpu_name = [&](const std::string& device) -> std::string {
    if (ctx.is_object() && ctx.contains("gpus") && ctx["gpus"].is_array())
      for (auto& g : ctx["gpus"])
        if (g.is_object() && g.value("device", "") == device) return g.value("name", "");
    return "";
  };
  std::vector<std::string> names;
  auto add = [&](std::string name) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  };
  for (auto& d : devices) {
    std::string name = d == "cpu" ? cpu_model() : gpu_name(d);
    add(name.empty() ? d : name);
  }
  if (names.empty()) add(cpu_model());
  if (names.empty() && ctx.is_object()) add(ctx.value("host_name", ""));
  if (names.empty()) return "unknown machine";
  std::string out;
  for (auto& n : names) out += (out.empty() ? "" : " + ") + n;
  return out;
}

}  // namespace report_parts

std::string model_markdown(const PredictModel& m) {
  std::string out = "# " + markdown_cell(title(m)) + "\n\n";
  out += fmt::format("Fitted {} from {}.\n\n{}\n\n", m.created.empty() ? "(date not recorded)" : m.created,
                     sources_text(m, true), folds_text(m));
  if (!m.ceilings.empty()) {
    out += "## Ceilings\n\n| device | peak GFLOP/s | memory GB/s | source |\n|---|---|---:|---|\n";
    for (auto& [device, c] : m.ceilings)
      out += fmt::format("| {} | {} | {:.1f} | {} |\n", markdown_cell(device), ceilings_text(c), c.memory_gbps,
                         markdown_cell(c.source));
    out += "\n";
  }
  if (m.groups.empty()) {
    out += "## Groups\n\nNo group was fitted: this model has nothing to predict with.\n\n";
  } else {
    out += "## Groups\n\n| group | cases | best | median error | p90 error | interval | coverage |\n"
           "|---|---:|---|---:|---:|---:|---:|\n";
    for (auto& g : m.groups) {
      auto* e = stats_of(g, g.best);
      out += e ? fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", markdown_cell(g.key), g.points.size(),
                             model_label(g.best), pct(e->median_ape), pct(e->p90_ape), interval(*e), coverage(*e))
               : fmt::format("| {} | {} | {} | - | - | - | - |\n", markdown_cell(g.key), g.points.size(),
                             model_label(g.best));
    }
    out += "\n";
    for (auto& g : m.groups) out += md_group(g);
  }
  if (!m.notes.empty()) {
    out += "## Notes\n\n";
    for (auto& n : m.notes) out += "- " + markdown_cell(n) + "\n";
    out += "\n";
  }
  return out;
}

std::string measured_error_summary(const std::vector<Prediction>& cases, const std::set<std::string>& trained) {
  auto ape = [](double predicted, double measured) { return std::abs(predicted - measured) / measured; };
  std::map<ModelKind, std::vector<double>> errors;
  std::vector<double> best;
  std::size_t inside = 0, in_training = 0;
  for (auto& p : cases) {
    if (!p.measured_s) continue;
    in_training += trained.count(p.case_string);
    best.push_back(ape(p.time_s, *p.measured_s));
    inside += *p.measured_s >= p.lo_s && *p.measured_s <= p.hi_s;
    for (auto& [k, v] : p.by_model) errors[k].push_back(ape(v, *p.measured_s));
  }
  if (best.empty()) return "";
  std::string out = fmt::format(
      "\nError against the measured times ({}): the predictions (each group's best model scaled by its held-out "
      "median of measured / predicted, the × in the model column) median {}, p90 {}, {} inside the interval; each "
      "model unscaled:",
      count_of(best.size(), "case"), pct(percentile(best, 50)), pct(percentile(best, 90)),
      pct(double(inside) / double(best.size())));
  const char* sep = " ";
  for (auto& [k, e] : errors) {
    out += fmt::format("{}{} median {}", sep, to_string(k), pct(percentile(e, 50)));
    sep = "; ";
  }
  if (in_training)
    out += fmt::format(
        ". {} of these cases {} in the model's training data: {} error is not a held-out error "
        "(predict fit reports that)",
        in_training, in_training == 1 ? "is" : "are", in_training == 1 ? "its" : "their");
  return out + "\n";
}

std::string model_html(const PredictModel& m) {
  auto charts = model_charts(m);
  std::string out;
  out.reserve(1 << 20);
  out += fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n"
      "<style>{}{}</style>\n<script>{}</script>\n",
      kContentSecurityPolicy, html_escape(title(m)), kStyle, kExtraStyle, kErrorHook);
  for (auto& lib : chart_libraries())
    out += fmt::format("<script>/* {} {} */\n{}\n</script>\n", lib.name, lib.version, inline_js(lib.js));
  out += fmt::format("</head><body>\n<header><h1>{}</h1><div class=\"sub\">fitted {} from {} &middot; page generated {} by opmeter {}</div>"
                     "</header>\n<main>\n",
                     html_escape(title(m)), html_escape(m.created.empty() ? "(date not recorded)" : m.created),
                     html_escape(sources_text(m, false)), utc_now_iso(), build_info::version);
  if (chart_libraries().empty())
    out += "<p class=\"warning\"><b>Charts are missing:</b> this opmeter was built without the chart libraries "
           "(-DOPMETER_CHARTS=OFF). The tables below are complete.</p>\n";
  out += "<p class=\"lead\">" + html_escape(folds_text(m)) + "</p>\n";

  nlohmann::json specs = nlohmann::json::array();
  if (m.groups.empty()) {
    out += "<h2>Groups</h2>\n<p class=\"warning\">No group was fitted: this model has nothing to predict with, and "
           "nothing to chart.</p>\n";
  } else {
    out += "<h2>Groups</h2>\n";
    html_summary_table(out, m);
    for (auto& c : charts) {
      out += fmt::format("<h2>{}</h2>\n<figure><figcaption><b>{}</b><br>{}</figcaption><div class=\"chart\" id=\"{}\"></div>"
                         "</figure>\n",
                         html_escape(c.title), html_escape(c.title), html_escape(c.caption), c.id);
      specs.push_back({{"id", c.id}, {"spec", c.spec}});
    }
    if (charts.empty()) out += "<p>No held-out prediction to chart.</p>\n";
    out += "<h2>Each group</h2>\n";
    for (auto& g : m.groups) html_group_table(out, g);
  }
  html_ceilings(out, m);
  if (!m.notes.empty()) {
    out += "<h2>Notes</h2>\n<ul class=\"notes\">\n";
    for (auto& n : m.notes) out += "<li>" + html_escape(n) + "</li>\n";
    out += "</ul>\n";
  }
  html_cases(out, m);
  html_context(out, m);
  out += fmt::format("</main>\n<pre id=\"render-status\" hidden></pre>\n<script type=\"application/json\" id=\"chart-specs\">{}</script>\n"
                     "<script>{}</script>\n<script>{}</script>\n</body></html>\n",
                     script_json(specs), kCaseFilter, kRender);
  return out;
}

}  // namespace opmeter::predict
