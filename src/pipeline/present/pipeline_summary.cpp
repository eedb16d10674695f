// summarize(): a pipeline's layer results added up, with idle power accounted.
#include "pipeline/present/pipeline_summary.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace opmeter::pipeline {
namespace {

LayerSummary layer_summary(const Layer& layer, const Result* r, const std::string& planned_case,
                           const std::string& device, const std::optional<double>& idle_power_w) {
  LayerSummary s;
  s.label = layer.label;
  s.op = layer.kase.op;
  s.count = layer.count;
  s.params = layer.cost.params;
  s.macs = layer.cost.macs;
  if (!r) {
    s.case_string = planned_case.empty() ? layer.kase.to_string() : planned_case;
    s.reason = "no result for this layer in the run";
    return s;
  }
  s.case_string = r->case_string;
  s.impl = r->kase.impl;
  s.status = std::string(to_string(r->status));
  s.reason = r->reason;
  s.flags = r->flags;
  if (r->work.flops > 0 || r->work.bytes() > 0) {
    s.flops = r->work.flops;
    s.bytes = r->work.bytes();
  }
  if (r->status != Status::ok) return s;
  if (!(r->summary.median > 0)) {
    s.status = kNotMeasured;
    s.reason = "the result holds no timing";
    return s;
  }
  const double count = double(layer.count);
  s.latency_s = r->summary.median;
  s.total_s = *s.latency_s * count;
  s.power_w = r->avg_power_w;
  if (r->efficiency) s.pct_roofline = *r->efficiency * 100;
  s.pct_peak = r->pct_peak;
  s.precision = r->summary.precision;
  // The energy of the same call as the latency: the window's average power over the median. The
  // window's own energy per call (Result::energy_j) is of hot back-to-back calls, which can be
  // several times shorter than the median: summed beside the latency it would undercount a pass.
  if (r->energy_j && r->avg_power_w && *r->avg_power_w > 0) {
    s.energy_j = *r->avg_power_w * *s.latency_s;
    s.total_energy_j = *s.energy_j * count;
    if (idle_power_w) {
      s.idle_energy_j = *idle_power_w * *s.latency_s;
      s.dynamic_energy_j = *s.energy_j - *s.idle_energy_j;
    }
  } else if (r->energy_j) {
    s.energy_reason = "the energy window has no average power";
  } else {
    s.energy_reason = r->energy_reason.empty() ? fmt::format("no energy reading on {}", device) : r->energy_reason;
  }
  return s;
}

std::vector<RankedLayer> top(const std::vector<LayerSummary>& layers, const std::optional<double>& total,
                             std::optional<double> LayerSummary::*field) {
  std::vector<RankedLayer> ranked;
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (auto v = layers[i].*field) ranked.push_back({i, *v, total && *total > 0 ? std::optional(*v / *total) : std::nullopt});
  // Largest first; ties keep the model's order.
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.value > b.value; });
  if (ranked.size() > kTopLayers) ranked.resize(kTopLayers);
  return ranked;
}

void add_totals(PipelineSummary& s) {
  double latency = 0, energy = 0, dynamic = 0, period = 0, uncertainty = 0;
  const LayerSummary* no_energy = nullptr;
  for (auto& l : s.layers) {
    latency += *l.total_s;
    uncertainty += *l.total_s * l.precision.value_or(0);
    period = std::max(period, *l.total_s);
    if (!l.energy_j) {
      if (!no_energy) no_energy = &l;
      continue;
    }
    energy += *l.total_energy_j;
    if (l.dynamic_energy_j) dynamic += *l.dynamic_energy_j * double(l.count);
  }
  s.latency_s = latency;
  if (latency > 0) s.latency_precision = uncertainty / latency;
  s.period_s = period;
  if (latency > 0) s.throughput = s.samples / latency;
  if (period > 0) s.pipeline_parallel_throughput = s.samples / period;
  if (no_energy) {
    s.energy_reason = fmt::format("layer {}: {}", no_energy->label, no_energy->energy_reason);
    return;
  }
  s.energy_j = energy;
  s.energy_per_sample_j = energy / s.samples;
  if (!s.idle_power_w) {
    s.energy_reason = fmt::format("the idle power of {} is unknown: no dynamic or pipeline-parallel energy", s.device);
    return;
  }
  s.dynamic_energy_j = dynamic;
  s.dynamic_energy_per_sample_j = dynamic / s.samples;
  double parallel = 0;
  for (auto& l : s.layers) parallel += *l.total_energy_j + *s.idle_power_w * (period - *l.total_s);
  s.pipeline_parallel_energy_j = parallel;
}

// The ratio with its interval, or none and why when the interval is too wide to read.
void add_ratio(PipelineSummary& s, double ratio, double a, double b) {
  // A median of fewer than 6 samples has no interval (infinite precision): said so, not "±inf%".
  auto known = [](double p) {
    return std::isfinite(p) ? fmt::format("known to ±{:.1f}%", 100 * p)
                            : std::string("of unknown precision (a median of fewer than 6 samples)");
  };
  const std::string spreads = fmt::format("the sum of layers is {} and the end to end time {}", known(a), known(b));
  if (!std::isfinite(a) || !std::isfinite(b) || b >= 1) {
    s.end_to_end_ratio_note = "no ratio: " + spreads;
    return;
  }
  const double low = ratio * (1 - a) / (1 + b), high = ratio * (1 + a) / (1 - b);
  if ((high - low) / 2 > kMaxRatioSpread * ratio) {
    s.end_to_end_ratio_note = fmt::format("no ratio: {}, so it lies anywhere from {:.2f} to {:.2f}", spreads, low, high);
    return;
  }
  s.end_to_end_ratio = ratio;
  s.end_to_end_ratio_low = low;
  s.end_to_end_ratio_high = high;
}

void add_end_to_end(PipelineSummary& s, const Result& r, double scale) {
  s.end_to_end_case = r.case_string;
  s.end_to_end_status = std::string(to_string(r.status));
  s.end_to_end_reason = r.reason;
  s.end_to_end_scale = scale;
  if (r.status != Status::ok || !(r.summary.median > 0)) return;
  s.end_to_end_s = r.summary.median * scale;
  // As for the layers: the window's power over the median, so both ratios compare like with like.
  if (r.energy_j && r.avg_power_w && *r.avg_power_w > 0) s.end_to_end_energy_j = *r.avg_power_w * *s.end_to_end_s;
  s.end_to_end_precision = r.summary.precision;
  if (s.latency_s) add_ratio(s, *s.latency_s / *s.end_to_end_s, s.latency_precision.value_or(0), r.summary.precision);
  if (s.energy_j && s.end_to_end_energy_j && *s.end_to_end_energy_j > 0)
    s.end_to_end_energy_ratio = *s.energy_j / *s.end_to_end_energy_j;
}

}  // namespace

std::string PipelineSummary::param(const std::string& key) const {
  for (auto& [k, v] : params)
    if (k == key) return v;
  return "";
}

std::string ratio_text(const PipelineSummary& s) {
  if (!s.end_to_end_ratio) return s.end_to_end_ratio_note.empty() ? "" : "—";
  const std::string ratio = fmt::format("{:.2f}", *s.end_to_end_ratio);
  if (!s.end_to_end_ratio_low || !s.end_to_end_ratio_high) return ratio;
  const std::string low = fmt::format("{:.2f}", *s.end_to_end_ratio_low), high = fmt::format("{:.2f}", *s.end_to_end_ratio_high);
  // An interval that rounds to the ratio itself (precisions unknown or tiny) is not shown.
  return low == ratio && high == ratio ? ratio : fmt::format("{} [{}, {}]", ratio, low, high);
}

PipelineSummary summarize(const PipelineRun& run) {
  const Pipeline& p = run.pipeline;
  PipelineSummary s;
  s.name = p.name;
  s.params = p.params;
  s.dtype = std::string(to_string(p.dtype));
  s.device = run.device;
  s.samples = p.samples > 0 ? p.samples : 1;
  s.sample_unit = p.sample_unit;
  s.total_params = p.total_params();
  s.total_macs = p.total_macs();
  s.idle_power_w = run.idle_power_w;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const Result* r = i < run.layer_results.size() ? run.layer_results[i] : nullptr;
    const std::string planned = i < run.layer_cases.size() ? run.layer_cases[i] : "";
    s.layers.push_back(layer_summary(p.layers[i], r, planned, run.device, run.idle_power_w));
    const auto& l = s.layers.back();
    if (!l.measured())
      s.missing.push_back(fmt::format("{} ({}): {}{}", l.label, l.op, l.status, l.reason.empty() ? "" : ": " + l.reason));
  }
  s.complete = !s.layers.empty() && s.missing.empty();
  if (s.layers.empty()) s.missing.push_back("the pipeline has no layers");
  if (s.complete) add_totals(s);
  else if (s.layers.empty()) s.energy_reason = "incomplete: the pipeline has no layers";
  else s.energy_reason = fmt::format("incomplete: {} of {} layers not measured", s.missing.size(), s.layers.size());
  s.top_by_time = top(s.layers, s.latency_s, &LayerSummary::total_s);
  s.top_by_energy = top(s.layers, s.energy_j, &LayerSummary::total_energy_j);
  if (run.end_to_end) add_end_to_end(s, *run.end_to_end, run.end_to_end_scale > 0 ? run.end_to_end_scale : 1);
  return s;
}

}  // namespace opmeter::pipeline
