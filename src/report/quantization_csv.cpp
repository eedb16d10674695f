// quantization.csv: the quantization table (recipes beside their baselines), written only when a
// run measured a recipe.
#include <filesystem>

#include "analysis/quantization.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

class QuantizationCsvReporter : public Reporter {
 public:
  explicit QuantizationCsvReporter(std::string dir) : dir_(std::move(dir)) {}
  void end(const std::vector<Result>& all) override {
    auto rows = quant_rows(all);
    if (!rows.empty()) write_atomically((std::filesystem::path(dir_) / "quantization.csv").string(), quant_csv(rows));
  }

 private:
  std::string dir_;
};

ReporterRegistrar quantization_reporter({
    .name = "quantization",
    .summary = "quantization.csv: each recipe's time, speedup over its baseline, SQNR, weight bytes (runs with recipes)",
    .files = {"quantization.csv"},
    .order = 4,
    .make = [](const std::string& dir) { return std::make_unique<QuantizationCsvReporter>(dir); },
});

}  // namespace
}  // namespace opmeter
