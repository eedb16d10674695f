#pragma once
// Quantization tables: each result that carries a recipe (case parameter `quant`) beside the
// baseline of the same shape: the fastest result without a recipe of the same device, op,
// parameters, dtype, mode (inference or train) and threads. Time, speedup over that baseline,
// what the recipe costs in accuracy (sqnr_db, max_abs_error metrics), weight bytes and peak memory.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

struct QuantRow {
  std::string device, op, shape, dtype, mode;  // shape: the parameters without quant and mode
  int threads = 1;
  std::string run;              // the case string's last part (threads=2,hot): the baseline ran the same way
  std::string where;            // run_where.hpp: "cpu x2, hot"
  double m = 0;                 // rows of the layer's input (batch x seq, or M): the speedup chart's x
  std::string recipe, impl;
  double time_s = 0;
  std::string baseline_impl;    // empty: no baseline measured for this shape
  std::optional<double> baseline_s, speedup;
  std::optional<double> sqnr_db, max_abs_error;
  std::optional<double> weight_bytes, baseline_weight_bytes;
  std::optional<std::size_t> peak_memory_bytes;
  // Flags of the recipe's result and of its baseline's ("baseline:contended") that change how the
  // speedup reads: contended, unconverged, plateau, throttled, partly-cached, faster-than-*.
  std::vector<std::string> flags;
};

// Rows in the results' order: recipes only, inference and training alike (see `mode`).
std::vector<QuantRow> quant_rows(const std::vector<Result>& results);
nlohmann::json quant_json(const std::vector<QuantRow>& rows);
std::string quant_csv(const std::vector<QuantRow>& rows);
// Markdown tables, inference first, then training; empty without rows.
std::string quant_markdown(const std::vector<QuantRow>& rows);

}  // namespace opmeter
