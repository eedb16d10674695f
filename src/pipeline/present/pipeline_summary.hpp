#pragma once
// What a pipeline's measured layers add up to: per-layer latency and energy (idle accounted),
// totals, throughput, energy under full pipeline parallelism, top layers, and the PyTorch model
// end to end beside the sum of its layers. Pure functions of results: no I/O.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "opmeter/pipeline.hpp"
#include "opmeter/result.hpp"

namespace opmeter::pipeline {

// A pipeline after a run: its layers' results and what the device's energy is read against.
struct PipelineRun {
  Pipeline pipeline;
  std::string device;                          // "cpu" / "cuda:0"
  std::vector<const Result*> layer_results;    // parallel to pipeline.layers; nullptr: not measured
  // Parallel to pipeline.layers: the case each layer was planned as (impl, threads or device),
  // named for a layer without a result; empty: the layer's own case.
  std::vector<std::string> layer_cases;
  std::optional<double> idle_power_w;          // the device's idle power, where known
  const Result* end_to_end = nullptr;          // the PyTorch model (op `model`), when run
  double end_to_end_scale = 1;                 // e.g. 64 for OPT (one decoder layer x 64)
};

// The status a layer shows when no result was given for it.
inline constexpr const char* kNotMeasured = "not-measured";

struct LayerSummary {
  std::string label, op, case_string;
  std::string impl;  // its result's; empty when the run has no result for it
  std::size_t count = 1;
  std::string status = kNotMeasured;  // a Status name, or kNotMeasured
  std::string reason;
  std::vector<std::string> flags;
  // Empty unless measured (status ok with a median).
  std::optional<double> latency_s;         // median per call
  std::optional<double> total_s;           // latency x count
  std::optional<double> power_w;           // average over the energy window
  // Per call, idle included: power_w x latency_s, the call whose time latency_s is. Not
  // Result::energy_j, which is per hot call of the energy window (shorter than a cold median).
  std::optional<double> energy_j;
  std::optional<double> total_energy_j;    // energy x count
  std::optional<double> idle_energy_j;     // idle power x latency_s
  std::optional<double> dynamic_energy_j;  // energy - idle energy, per call
  std::string energy_reason;               // why energy is empty
  double params = 0, macs = 0;             // per call, from the pipeline's layer
  std::optional<double> flops, bytes;      // per call, the op's work model (Result::work)
  std::optional<double> pct_roofline;      // percent (Result::efficiency x 100)
  std::optional<double> pct_peak;          // percent (Result::pct_peak)
  std::optional<double> precision;         // of latency_s: the median's relative 95% CI half-width

  bool measured() const { return latency_s.has_value(); }
};

// A layer among the top ones: its index in PipelineSummary::layers, its value (seconds or
// joules per pass: x count) and its share of the pipeline's total when there is one.
struct RankedLayer {
  std::size_t layer = 0;
  double value = 0;
  std::optional<double> share;  // 0..1
};

inline constexpr std::size_t kTopLayers = 5;

// The widest interval a sum-of-layers / end-to-end ratio is shown with, as a fraction of the
// ratio. The ratio says whether layers measured alone add up to the model; fusion and framework
// overheads move it by 10-50%. At ±25% an interval around any ratio from 0.8 to 1.33 holds 1:
// it could no longer tell "adds up" from "does not".
inline constexpr double kMaxRatioSpread = 0.25;

struct PipelineSummary {
  std::string name;
  std::string machine;  // the run that measured it, in a merged set (opmeter merge); "" otherwise
  std::string source;   // the folder its pipelines.json was read from (read_pipelines); never written there
  std::vector<std::pair<std::string, std::string>> params;  // batch=1, image=224, ...
  std::string dtype, device;
  double samples = 1;           // per forward pass
  std::string sample_unit = "img";
  double total_params = 0, total_macs = 0;  // from the pipeline's layers
  std::vector<LayerSummary> layers;

  // Complete: every layer measured. Otherwise `missing` says which and why, and the totals below
  // are empty (a sum of what is left would look like a faster model).
  bool complete = false;
  std::vector<std::string> missing;  // "label (op): status: reason"

  std::optional<double> latency_s;          // one forward pass: sum of latency x count
  // latency_s's relative uncertainty: sum of count x latency x precision over latency_s. A linear
  // sum, not in quadrature: layers that share a case share its error.
  std::optional<double> latency_precision;
  std::optional<double> throughput;         // samples / latency, in sample_unit per second
  std::optional<double> energy_j;           // sum of energy x count, idle included
  std::optional<double> dynamic_energy_j;   // the same without idle (needs idle power)
  std::optional<double> energy_per_sample_j;
  std::optional<double> dynamic_energy_per_sample_j;
  std::string energy_reason;                // why the energy fields are empty
  std::optional<double> idle_power_w;

  // Full pipeline parallelism: every layer a stage on its own device, each stage t_i = latency_i x
  // count_i. The slowest stage sets the period T = max t_i; each stage idles for the rest of it:
  // energy per pass = sum_i [E_i x count_i + P_idle x (T - t_i)].
  std::optional<double> period_s;
  std::optional<double> pipeline_parallel_throughput;  // samples / T
  std::optional<double> pipeline_parallel_energy_j;    // per pass (needs energies and idle power)

  std::vector<RankedLayer> top_by_time, top_by_energy;  // at most kTopLayers each, largest first

  // The PyTorch model run end to end (x end_to_end_scale), beside the sum of layers.
  std::string end_to_end_case, end_to_end_status, end_to_end_reason;  // empty case: not run
  std::optional<double> end_to_end_s, end_to_end_energy_j;            // energy: its window's power x end_to_end_s
  double end_to_end_scale = 1;
  std::optional<double> end_to_end_ratio;         // sum of layers latency / end-to-end latency
  // The ratio's interval from both relative uncertainties (a = latency_precision, b = the end to
  // end result's precision): [ratio (1-a)/(1+b), ratio (1+a)/(1-b)]. When its half-width is above
  // kMaxRatioSpread of the ratio, the ratio is refused (empty) and the note says why.
  std::optional<double> end_to_end_precision;
  std::optional<double> end_to_end_ratio_low, end_to_end_ratio_high;
  std::string end_to_end_ratio_note;
  std::optional<double> end_to_end_energy_ratio;  // sum of layers energy / end-to-end energy

  // "batch" among params, or empty.
  std::string param(const std::string& key) const;
};

PipelineSummary summarize(const PipelineRun& run);

// The sum-of-layers / end-to-end ratio as shown: "1.40 [1.31, 1.50]", "—" when refused (see
// end_to_end_ratio_note), "" without an end-to-end figure.
std::string ratio_text(const PipelineSummary& s);

}  // namespace opmeter::pipeline
