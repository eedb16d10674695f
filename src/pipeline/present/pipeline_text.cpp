// Pipelines as text: the per-pipeline log file and the console summary at the end of a run.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/pipeline.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "util/human_units.hpp"

namespace opmeter::pipeline {
namespace {

// Columns padded to their widest cell; numbers (right-aligned columns) line up on the right.
std::string text_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& right) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      std::string cell = right[c] ? fmt::format("{:>{}}", cells[c], width[c])
                                  : last ? cells[c] : fmt::format("{:<{}}", cells[c], width[c]);
      out += (c ? "  " : "") + cell;
    }
    return out + "\n";
  };
  std::string out = line(header);
  for (auto& r : rows) out += line(r);
  return out;
}

std::string time_or_dash(const std::optional<double>& s) { return s ? human_time(*s) : "-"; }
std::string energy_or_dash(const std::optional<double>& j) { return j ? human_energy(*j) : "-"; }
std::string pct(const std::optional<double>& fraction) { return fraction ? fmt::format("{:.1f}%", *fraction * 100) : "-"; }

std::string layer_table(const PipelineSummary& s) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < s.layers.size(); ++i) {
    auto& l = s.layers[i];
    std::optional<double> share;
    if (l.total_s && s.latency_s && *s.latency_s > 0) share = *l.total_s / *s.latency_s;
    std::string status = l.status;
    for (auto& f : l.flags) status += "," + f;
    rows.push_back({std::to_string(i), l.label, l.op, l.impl.empty() ? "-" : l.impl, std::to_string(l.count), status,
                    time_or_dash(l.latency_s), time_or_dash(l.total_s), pct(share),
                    l.power_w ? fmt::format("{:.1f}", *l.power_w) : "-", energy_or_dash(l.energy_j),
                    energy_or_dash(l.total_energy_j), energy_or_dash(l.dynamic_energy_j), human_count(l.params),
                    human_count(l.macs), l.pct_roofline ? fmt::format("{:.1f}%", *l.pct_roofline) : "-",
                    l.case_string});
  }
  return text_table({"#", "label", "op", "impl", "count", "status", "latency", "x count", "time", "power W",
                     "energy/call", "x count", "dynamic/call", "params", "MACs", "roofline", "case"},
                    rows,
                    {true, false, false, false, true, false, true, true, true, true, true, true, true, true, true, true,
                     false});
}

std::string ranked_lines(const PipelineSummary& s, const std::vector<RankedLayer>& ranked, bool energy) {
  std::string out;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    auto& r = ranked[i];
    auto& l = s.layers[r.layer];
    out += fmt::format("  {}. {} ({} x {}): {}{}\n", i + 1, l.label, l.op, l.count,
                       energy ? human_energy(r.value) : human_time(r.value),
                       r.share ? fmt::format(", {:.1f}%", *r.share * 100) : "");
  }
  return out;
}

std::string parallel_line(const PipelineSummary& s) {
  if (!s.period_s) return "-";
  std::string out = fmt::format("period {} (the slowest stage), {} {}/s", human_time(*s.period_s),
                                human_rate(*s.pipeline_parallel_throughput), s.sample_unit);
  if (s.pipeline_parallel_energy_j) out += ", energy " + human_energy(*s.pipeline_parallel_energy_j) + " per pass";
  return out;
}

std::string end_to_end_line(const PipelineSummary& s) {
  if (s.end_to_end_case.empty()) return "";
  if (!s.end_to_end_s)
    return fmt::format("{}{}", s.end_to_end_status, s.end_to_end_reason.empty() ? "" : ": " + s.end_to_end_reason);
  std::string out = human_time(*s.end_to_end_s);
  if (s.end_to_end_energy_j) out += ", " + human_energy(*s.end_to_end_energy_j);
  if (s.end_to_end_scale != 1) out += fmt::format(" (x {:g})", s.end_to_end_scale);
  if (s.end_to_end_ratio) out += "; sum of layers / end to end: " + ratio_text(s);
  else if (!s.end_to_end_ratio_note.empty()) out += "; sum of layers / end to end: — (" + s.end_to_end_ratio_note + ")";
  if (s.end_to_end_energy_ratio) out += fmt::format(" (energy {:.2f})", *s.end_to_end_energy_ratio);
  return out;
}

}  // namespace

std::string human_energy(double j) {
  if (std::isnan(j)) return "-";
  double a = std::abs(j);  // dynamic energy can come out negative when idle power was overestimated
  if (a >= 1) return fmt::format("{:.3f} J", j);
  if (a >= 1e-3) return fmt::format("{:.3f} mJ", j * 1e3);
  if (a >= 1e-6) return fmt::format("{:.3f} uJ", j * 1e6);
  if (a == 0) return "0 J";
  return fmt::format("{:.3f} nJ", j * 1e9);
}

std::string human_count(double n) {
  if (!(n >= 0)) return "-";
  if (n >= 1e12) return fmt::format("{:.2f} T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f} G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.2f} k", n / 1e3);
  return fmt::format("{:g}", n);
}

std::string params_text(const PipelineSummary& s) {
  std::vector<std::string> kv;
  for (auto& [k, v] : s.params) kv.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(kv, ", "));
}

std::string params_in_parens(const PipelineSummary& s) {
  const std::string built_with = params_text(s);
  return built_with.empty() ? "" : " (" + built_with + ")";  // a config's own pipeline has none: no "()"
}

std::string display_name(const PipelineSummary& s) {
  // The batch, and every parameter off the pipeline's default: resnet18 at image=32 and at
  // image=64 in one run are two names (two bars, two headings), not one.
  const PipelineDef* def = Registry::global().find(s.name);
  std::string shown;
  for (auto& [k, v] : s.params) {
    bool is_default = false;
    if (def)
      for (auto& [dk, dv] : def->defaults) is_default = is_default || (dk == k && dv == v);
    if (k == "batch" || !is_default) shown += " " + k + "=" + v;
  }
  // Merged from several machines: the same pipeline once per machine.
  if (!s.machine.empty()) shown += " on " + s.machine;
  return fmt::format("{} {} {}{}", s.name, s.dtype, s.device, shown);
}

std::string pipeline_log(const PipelineSummary& s) {
  std::string out = fmt::format("opmeter pipeline {} on {}{}, {}{}\n", s.name, s.device,
                                s.machine.empty() ? "" : " of " + s.machine, s.dtype, params_in_parens(s));
  out += fmt::format("{} params, {} MACs per pass; {} layers; {:g} {} per pass\n\n", human_count(s.total_params),
                     human_count(s.total_macs), s.layers.size(), s.samples, s.sample_unit);
  out += layer_table(s) + "\n";
  if (!s.complete) {
    out += fmt::format("INCOMPLETE: {} layer(s) not measured, so there are no totals:\n", s.missing.size());
    for (auto& m : s.missing) out += "  " + m + "\n";
    out += "\n";
  }
  auto line = [&](const char* key, const std::string& value) { out += fmt::format("{:<26}{}\n", key, value); };
  out += "totals (one forward pass)\n";
  line("  latency", time_or_dash(s.latency_s));
  line("  throughput", s.throughput ? fmt::format("{} {}/s", human_rate(*s.throughput), s.sample_unit) : "-");
  line("  energy (idle included)", energy_or_dash(s.energy_j));
  line("  energy without idle", energy_or_dash(s.dynamic_energy_j));
  line(fmt::format("  energy per {}", s.sample_unit).c_str(),
       s.energy_per_sample_j ? human_energy(*s.energy_per_sample_j) +
                                   (s.dynamic_energy_per_sample_j ? " (without idle " + human_energy(*s.dynamic_energy_per_sample_j) + ")" : "")
                             : "-");
  line("  idle power", s.idle_power_w ? fmt::format("{:.1f} W", *s.idle_power_w) : "unknown");
  if (!s.energy_reason.empty()) line("  energy note", s.energy_reason);
  line("  pipeline parallel", parallel_line(s));
  if (auto e2e = end_to_end_line(s); !e2e.empty()) line("  PyTorch end to end", e2e);
  out += "\ntop layers by time (latency x count)\n" + ranked_lines(s, s.top_by_time, false);
  if (!s.top_by_energy.empty()) out += "\ntop layers by energy (energy x count)\n" + ranked_lines(s, s.top_by_energy, true);
  out +=
      "\nenergy/call E_i = P_i x latency_i: the layer's average power over its energy window x its median.\n"
      "pipeline parallel: every layer a stage on its own device, stage time t_i = latency_i x count_i;\n"
      "period T = max t_i; energy per pass = sum_i [E_i x count_i + P_idle x (T - t_i)].\n";
  return out;
}

void print_pipeline_summary(std::ostream& out, const PipelineSummary& s) {
  out << fmt::format("pipeline {}{} {} on {}: {} params, {} MACs, {} layers\n", s.name, params_in_parens(s), s.dtype,
                     s.device, human_count(s.total_params), human_count(s.total_macs), s.layers.size());
  if (!s.complete) {
    out << fmt::format("  INCOMPLETE, no totals: {} layer(s) not measured; first: {}\n", s.missing.size(),
                       s.missing.empty() ? "" : s.missing.front());
  } else {
    std::string energy = s.energy_per_sample_j
                             ? fmt::format("{} per pass, {} per {}", human_energy(*s.energy_j),
                                           human_energy(*s.energy_per_sample_j), s.sample_unit)
                             : "energy: " + s.energy_reason;
    out << fmt::format("  {} per pass, {} {}/s; {}\n", human_time(*s.latency_s), human_rate(*s.throughput),
                       s.sample_unit, energy);
    if (s.energy_j && !s.dynamic_energy_j) out << "  " << s.energy_reason << "\n";
    out << "  pipeline parallel: " << parallel_line(s) << "\n";
  }
  if (auto e2e = end_to_end_line(s); !e2e.empty()) out << "  PyTorch end to end: " << e2e << "\n";
  std::vector<std::string> top;
  for (std::size_t i = 0; i < s.top_by_time.size() && i < 3; ++i) {
    auto& r = s.top_by_time[i];
    top.push_back(fmt::format("{} {}{}", s.layers[r.layer].label, human_time(r.value),
                              r.share ? fmt::format(" ({:.0f}%)", *r.share * 100) : ""));
  }
  if (!top.empty()) out << fmt::format("  top layers: {}\n", fmt::join(top, ", "));
}

std::string planned_pipeline_text(const PlannedPipeline& p) {
  std::vector<std::string> params;
  for (const auto& [k, v] : p.pipeline.params) params.push_back(k + "=" + v);
  std::string out = fmt::format("pipeline {} ({}{} on {}): {} layers, {} params, {} MACs per pass\n", p.pipeline.name,
                                params.empty() ? "" : fmt::format("{}, ", fmt::join(params, ", ")),
                                to_string(p.pipeline.dtype), p.like.device, p.pipeline.layers.size(),
                                human_count(p.pipeline.total_params()), human_count(p.pipeline.total_macs()));
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) {
    const auto& l = p.pipeline.layers[i];
    rows.push_back({l.label, std::to_string(l.count), human_count(l.cost.params), human_count(l.cost.macs),
                    p.layer_case(i).to_string()});
  }
  return out + text_table({"layer", "count", "params", "MACs", "case"}, rows, {false, true, true, true, false});
}

}  // namespace opmeter::pipeline
