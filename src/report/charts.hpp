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
  std::string kind;     // gemm-heatmap, dtype-curves, roofline, impl-comparison, efficiency, fusion,
                        // quantization, burst-sustained, gpu-telemetry, fleet
  std::string title;
  std::string caption;  // one sentence: what is drawn and how to read it
  nlohmann::json spec;  // Vega-Lite
};

inline constexpr const char* kVegaLiteSchema = "https://vega.github.io/schema/vega-lite/v6.json";

// GEMM TFLOP/s over M x N, one panel per K and dtype (best impl per cell).
std::optional<Chart> gemm_heatmap_chart(const std::vector<Result>& results);
// Square GEMM (M = N = K) size vs TFLOP/s, one line per dtype (best impl per point).
std::optional<Chart> dtype_curves_chart(const std::vector<Result>& results);
// Every case at its arithmetic intensity under the measured compute ceilings (per dtype) and the
// memory-bandwidth ceiling.
std::optional<Chart> roofline_chart(const std::vector<Result>& results);
// Per op with two or more impls: throughput vs problem size, one line per impl.
std::vector<Chart> impl_comparison_charts(const std::vector<Result>& results);
// The top `top_n` cases by work per watt (GFLOP/s/W or GB/s/W), where power was measured.
std::vector<Chart> efficiency_charts(const std::vector<Result>& results, std::size_t top_n = 20);
// Fused vs unfused speedups with the fuse / avoid thresholds.
std::optional<Chart> fusion_chart(const std::vector<Result>& results);
// Quantization recipes: speedup over the baseline against rows M, a line per recipe and layer.
std::optional<Chart> quantization_chart(const std::vector<Result>& results);
// GPU cases: burst (after a cool-down) beside sustained (at steady power) throughput.
std::optional<Chart> burst_sustained_chart(const std::vector<Result>& results);
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
