#pragma once
// The report's charts as Vega-Lite specs (plain JSON, data inline), built from results. Each
// builder returns nothing when the results hold nothing it could draw.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

struct Chart {
  std::string id;       // unique, usable as an HTML id
  std::string kind;     // gemm-heatmap, gemm-scatter, dtype-curves, roofline, impl-comparison, efficiency, fusion,
                        // quantization, burst-sustained, gpu-telemetry, fleet
  std::string title;
  std::string caption;  // one sentence: what is drawn and how to read it
  nlohmann::json spec;  // Vega-Lite
};

inline constexpr const char* kVegaLiteSchema = "https://vega.github.io/schema/vega-lite/v6.json";

// In the builders below, `runs` names the run each result came from in a report of several runs
// (runs[i] for results[i], short_run_names), so that their series are told apart; empty for one.

// GEMM TFLOP/s over M x N, one panel per K and dtype (and thread count, hot or cold, run where
// these differ; best impl per cell). Too many distinct M, N or K for a canvas a browser draws
// (a random shapes sweep): kind gemm-scatter, the rate against GFLOP per call.
std::optional<Chart> gemm_heatmap_chart(const std::vector<Result>& results, const std::vector<std::string>& runs = {});
// Square GEMM (M = N = K) size vs TFLOP/s, one line per dtype (and thread count, hot or cold,
// run where these differ; best impl per point).
std::optional<Chart> dtype_curves_chart(const std::vector<Result>& results, const std::vector<std::string>& runs = {});
// Every case at its arithmetic intensity under the measured compute ceilings (per dtype) and the
// memory-bandwidth ceiling.
std::optional<Chart> roofline_chart(const std::vector<Result>& results, const std::vector<std::string>& runs = {});
// Per op with two or more impls: throughput vs problem size, one line per impl and what tells its
// results apart (threads, hot, recipe, run); one bar per result where all have one size.
std::vector<Chart> impl_comparison_charts(const std::vector<Result>& results,
                                          const std::vector<std::string>& runs = {});
// The top `top_n` cases by work per watt (GFLOP/s/W or GB/s/W), where power was measured.
std::vector<Chart> efficiency_charts(const std::vector<Result>& results, std::size_t top_n = 20,
                                     const std::vector<std::string>& runs = {});
// Fused vs unfused speedups with the fuse / avoid thresholds.
std::optional<Chart> fusion_chart(const std::vector<Result>& results);
// Quantization recipes: speedup over the baseline against rows M, a line per recipe and layer.
std::optional<Chart> quantization_chart(const std::vector<Result>& results);
// GPU cases: burst (after a cool-down) beside sustained (at steady power) throughput.
std::optional<Chart> burst_sustained_chart(const std::vector<Result>& results,
                                           const std::vector<std::string>& runs = {});
// GPU cases: SM clock and power through each case, the cases laid end to end, points where the
// GPU ran at its power cap or slowed down marked.
std::optional<Chart> gpu_telemetry_chart(const std::vector<Result>& results);

// All of the above, in the report's order.
std::vector<Chart> report_charts(const std::vector<Result>& results);
// The same for a report of several runs: the charts of ratios to a baseline (fusion,
// quantization) are drawn once a run, each run's cases against its own baselines, their titles
// naming the run (sources[i] for runs[i]).
std::vector<Chart> report_charts(const std::vector<std::vector<Result>>& runs, const std::vector<std::string>& sources);

}  // namespace opmeter
