#pragma once
// Training-step tables (linear ops with mode=train): the forward, backward and whole-step cases
// of one layer (case parameter `phase`) joined into one row, as torchao's training benchmark
// prints them: fwd, bwd and total time, each with its % of peak, and the speedup of the step over
// the baseline of the same shape (the fastest step without a recipe or float8 knob, of the same
// device, op, parameters, dtype, threads, settings and cache: run_where.hpp), within one run's
// results (a report of several runs makes the rows one run at a time).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

struct TrainingRow {
  std::string device, op, shape, dtype;  // shape: the parameters without mode, phase, recipe and knobs
  int threads = 1;
  std::string run;    // the case string's last part (threads=2,hot): a hot and a cold step are two rows
  std::string where;  // run_where.hpp: "cpu x2, hot"
  std::string recipe, knobs, impl;       // knobs: the float8 knobs the case sets, "" for none
  std::optional<double> fwd_s, bwd_s, total_s;
  std::optional<double> fwd_pct_peak, bwd_pct_peak, total_pct_peak;
  std::string baseline_impl;             // empty: no baseline step measured for this shape
  std::optional<double> baseline_total_s, speedup;
  // Flags of its phases' results that change how the row reads (contended, unconverged, ...),
  // each once, as "phase:flag" (fwd:contended).
  std::vector<std::string> flags;
  // (fwd + bwd) / total: near 1 where the phases, timed apart, add up to the step.
  std::optional<double> phases_over_total() const;
};

std::vector<TrainingRow> training_rows(const std::vector<Result>& results);
// A markdown table of the rows; empty without rows. A phase not measured reads "-".
std::string training_markdown(const std::vector<TrainingRow>& rows);
// The rows for results.json ("training") and training.csv: times in seconds, null / empty where
// a phase was not measured.
nlohmann::json training_json(const std::vector<TrainingRow>& rows);
std::string training_csv(const std::vector<TrainingRow>& rows);

}  // namespace opmeter
