// The report's Pipelines section: the pipelines compared, then each one's stacked layer bars and
// layer table (HTML); the summary table and top layers (markdown).
#include "report/pipeline_section.hpp"

#include <fmt/format.h>

#include "pipeline/present/pipeline_outputs.hpp"
#include "report/pipeline_charts.hpp"
#include "report/pipeline_labels.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "util/human_units.hpp"
#include "util/markdown_cell.hpp"

namespace opmeter {
namespace {

using pipeline::PipelineSummary;

std::string time_cell(const std::optional<double>& s) { return s ? human_time(*s) : ""; }
std::string energy_cell(const std::optional<double>& j) { return j ? pipeline::human_energy(*j) : ""; }
std::string fixed(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "";
}
std::string td(const std::string& text) { return "<td class=\"num\">" + text + "</td>"; }

constexpr const char* kFormula =
    "Pipeline parallel: every layer a stage on its own device; stage i takes t<sub>i</sub> = latency<sub>i</sub> "
    "&times; count<sub>i</sub>. The slowest stage sets the period T = max t<sub>i</sub> (throughput = samples / T), "
    "and every stage idles for the rest of it: energy per pass = &Sigma;<sub>i</sub> [E<sub>i</sub> &times; "
    "count<sub>i</sub> + P<sub>idle</sub> &times; (T &minus; t<sub>i</sub>)]. A layer's energy per call is "
    "E<sub>i</sub> = P<sub>i</sub> &times; latency<sub>i</sub>: its average power over its energy window "
    "&times; its median. Energy without idle subtracts P<sub>idle</sub> &times; latency from each call.";

void add_chart(std::string& out, nlohmann::json& specs, const std::optional<Chart>& c) {
  if (!c) return;
  out += fmt::format("<figure><figcaption><b>{}</b><br>{}</figcaption><div class=\"chart\" id=\"{}\"></div></figure>\n",
                     html_escape(c->title), html_escape(c->caption), c->id);
  specs.push_back({{"id", c->id}, {"spec", c->spec}});
}

// A table row's name: the pipeline's, and what tells it from another of that name (its label past
// the display name; the other columns give dtype, device and parameters).
std::string row_name(const PipelineSummary& s, const std::string& label) {
  return s.name + label.substr(std::min(label.size(), pipeline::display_name(s).size()));
}

std::string ratio_cell(const PipelineSummary& s) {
  if (!s.end_to_end_case.empty() && !s.end_to_end_s) return s.end_to_end_status;
  if (!s.end_to_end_ratio && !s.end_to_end_ratio_note.empty()) return "— (" + s.end_to_end_ratio_note + ")";
  return pipeline::ratio_text(s);
}

void summary_table(std::string& out, const std::vector<PipelineSummary>& summaries,
                   const std::vector<std::string>& labels) {
  out += "<div class=\"wide\"><table class=\"pipelines\"><thead><tr><th>pipeline</th><th>device</th><th>dtype</th><th>built with</th>"
         "<th>params</th><th>MACs</th><th>status</th><th>latency</th><th>throughput</th><th>energy / pass</th>"
         "<th>energy / sample</th><th>without idle / sample</th><th>idle W</th><th>parallel period</th>"
         "<th>parallel energy / pass</th><th>PyTorch end to end</th><th>sum / end to end</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    auto& s = summaries[i];
    std::string status = s.complete ? "complete" : fmt::format("incomplete ({} missing)", s.missing.size());
    out += fmt::format("<tr{}><td><a href=\"#pipeline-{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td>",
                       s.complete ? "" : " class=\"skipped\"", i, html_escape(row_name(s, labels[i])),
                       html_escape(s.device), html_escape(s.dtype), html_escape(pipeline::params_text(s)));
    out += td(pipeline::human_count(s.total_params)) + td(pipeline::human_count(s.total_macs)) + "<td>" + status +
           "</td>" + td(time_cell(s.latency_s)) +
           td(s.throughput ? fmt::format("{} {}/s", human_rate(*s.throughput), html_escape(s.sample_unit)) : "") +
           td(energy_cell(s.energy_j)) + td(energy_cell(s.energy_per_sample_j)) +
           td(energy_cell(s.dynamic_energy_per_sample_j)) + td(fixed(s.idle_power_w, "{:.1f}")) +
           td(time_cell(s.period_s)) + td(energy_cell(s.pipeline_parallel_energy_j)) + td(time_cell(s.end_to_end_s)) +
           td(html_escape(ratio_cell(s))) + "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

void layer_table(std::string& out, const PipelineSummary& s) {
  out += fmt::format("<details><summary>Layers ({})</summary>\n<div class=\"wide\"><table class=\"layers\"><thead><tr><th>#</th><th>label</th>"
                     "<th>op</th><th>impl</th><th>count</th><th>status</th><th>latency</th><th>&times; count</th>"
                     "<th>% of time</th><th>power (W)</th><th>energy / call</th><th>&times; count</th>"
                     "<th>without idle / call</th><th>params</th><th>MACs</th><th>GFLOP / call</th>"
                     "<th>% of roofline</th><th>% of peak</th><th>case</th></tr></thead><tbody>\n",
                     s.layers.size());
  for (std::size_t i = 0; i < s.layers.size(); ++i) {
    auto& l = s.layers[i];
    std::optional<double> share;
    if (l.total_s && s.latency_s && *s.latency_s > 0) share = *l.total_s / *s.latency_s * 100;
    std::string status = l.status;
    for (auto& f : l.flags) status += ", " + f;
    std::string why = l.reason.empty() ? "" : "<br>" + html_escape(l.reason);
    if (l.measured() && !l.energy_j && !l.energy_reason.empty()) why += "<br>energy: " + html_escape(l.energy_reason);
    out += fmt::format("<tr class=\"{}\"><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
                       "<td><span class=\"status\">{}</span>{}</td>",
                       l.measured() ? "ok" : html_escape(l.status), i, html_escape(l.label), html_escape(l.op),
                       html_escape(l.impl), l.count, html_escape(status), why);
    out += td(time_cell(l.latency_s)) + td(time_cell(l.total_s)) + td(fixed(share, "{:.1f}%")) +
           td(fixed(l.power_w, "{:.1f}")) + td(energy_cell(l.energy_j)) + td(energy_cell(l.total_energy_j)) +
           td(energy_cell(l.dynamic_energy_j)) + td(pipeline::human_count(l.params)) + td(pipeline::human_count(l.macs)) +
           td(l.flops ? fmt::format("{:.4g}", *l.flops * 1e-9) : "") + td(fixed(l.pct_roofline, "{:.1f}%")) +
           td(fixed(l.pct_peak, "{:.1f}%")) + "<td class=\"case\">" + html_escape(l.case_string) + "</td></tr>\n";
  }
  out += "</tbody></table></div></details>\n";
}

std::string md_top(const PipelineSummary& s, const std::vector<pipeline::RankedLayer>& ranked, bool energy) {
  std::string out;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    auto& r = ranked[i];
    auto& l = s.layers[r.layer];
    out += fmt::format("{}. `{}` ({} x {}): {}{}\n", i + 1, markdown_code(l.label), markdown_cell(l.op), l.count,
                       energy ? pipeline::human_energy(r.value) : human_time(r.value),
                       r.share ? fmt::format(", {:.1f}%", *r.share * 100) : "");
  }
  return out;
}

}  // namespace

std::string pipelines_html(const std::vector<PipelineSummary>& summaries, nlohmann::json& specs) {
  if (summaries.empty()) return "";
  const auto labels = pipeline_labels(summaries);
  std::string out = "<h2>Pipelines</h2>\n";
  out += "<p>Each model as its layers, every layer measured on its own and counted as often as one forward pass runs "
         "it. A pipeline with a layer that was not measured is <i>incomplete</i> and has no totals.</p>\n";
  summary_table(out, summaries, labels);
  out += std::string("<p class=\"sub\">") + kFormula + "</p>\n";
  add_chart(out, specs, pipeline_comparison_chart(summaries, labels));
  add_chart(out, specs, pipeline_end_to_end_chart(summaries, labels));
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    auto& s = summaries[i];
    const std::string built_with = pipeline::params_text(s);  // empty for a config's own pipeline
    out += fmt::format(
        "<h3 id=\"pipeline-{}\">{}</h3>\n<p class=\"sub\">{}{} params, {} MACs per pass; {:g} {} per pass</p>\n", i,
        html_escape(labels[i]), built_with.empty() ? "" : html_escape(built_with) + "; ",
        pipeline::human_count(s.total_params), pipeline::human_count(s.total_macs), s.samples,
        html_escape(s.sample_unit));
    if (!s.complete) {
      out += fmt::format("<p class=\"warning\"><b>Incomplete:</b> {} layer(s) not measured, so no totals:</p>\n<ul>\n",
                         s.missing.size());
      for (auto& m : s.missing) out += "<li>" + html_escape(m) + "</li>\n";
      out += "</ul>\n";
    } else if (!s.energy_reason.empty()) {
      out += "<p class=\"sub\">Energy: " + html_escape(s.energy_reason) + "</p>\n";
    }
    add_chart(out, specs, pipeline_layers_chart(s, i, kPipelineSegments, labels[i]));
    layer_table(out, s);
  }
  return out;
}

std::string pipelines_markdown(const std::vector<PipelineSummary>& summaries) {
  if (summaries.empty()) return "";
  const auto labels = pipeline_labels(summaries);
  std::string out =
      "## Pipelines\n\n| pipeline | device | dtype | built with | params | MACs | status | latency | throughput | "
      "energy / sample | without idle / sample | parallel period | parallel energy / pass | PyTorch end to end | ratio |\n"
      "|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    auto& s = summaries[i];
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        markdown_cell(row_name(s, labels[i])), markdown_cell(s.device), markdown_cell(s.dtype),
        markdown_cell(pipeline::params_text(s)), pipeline::human_count(s.total_params),
        pipeline::human_count(s.total_macs),
        s.complete ? "complete" : fmt::format("incomplete ({} missing)", s.missing.size()), time_cell(s.latency_s),
        s.throughput ? fmt::format("{} {}/s", human_rate(*s.throughput), markdown_cell(s.sample_unit)) : "",
        energy_cell(s.energy_per_sample_j), energy_cell(s.dynamic_energy_per_sample_j), time_cell(s.period_s),
        energy_cell(s.pipeline_parallel_energy_j), time_cell(s.end_to_end_s), markdown_cell(ratio_cell(s)));
  }
  out +=
      "\nPipeline parallel: every layer a stage on its own device, t_i = latency_i x count_i; period T = max t_i; "
      "energy per pass = sum_i [E_i x count_i + P_idle x (T - t_i)]; E_i = P_i x latency_i, the layer's average "
      "power over its energy window x its median.\n\n";
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    auto& s = summaries[i];
    out += fmt::format("### {}\n\n", markdown_cell(labels[i]));
    if (!s.complete) {
      out += "Incomplete, no totals. Not measured:\n\n";
      for (auto& m : s.missing) out += "- " + markdown_cell(m) + "\n";
      out += "\n";
    } else if (!s.energy_reason.empty()) {
      out += "Energy: " + markdown_cell(s.energy_reason) + "\n\n";
    }
    if (!s.top_by_time.empty()) out += "Top layers by time:\n\n" + md_top(s, s.top_by_time, false) + "\n";
    if (!s.top_by_energy.empty()) out += "Top layers by energy:\n\n" + md_top(s, s.top_by_energy, true) + "\n";
  }
  return out;
}

}  // namespace opmeter
