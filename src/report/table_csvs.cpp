// The tables a run writes as CSV files of their own, each only when the run has rows for it:
// quantization.csv (recipes beside their baselines) and training.csv (training steps: fwd, bwd
// and total, as torchao's training benchmark saves them).
#include <filesystem>
#include <functional>

#include "analysis/quantization.hpp"
#include "analysis/training.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

// The CSV text of a table from all results; empty when the run has no rows for it.
using CsvTable = std::function<std::string(const std::vector<Result>&)>;

class TableCsvReporter : public Reporter {
 public:
  TableCsvReporter(std::string dir, std::string file, CsvTable table)
      : path_((std::filesystem::path(dir) / file).string()), table_(std::move(table)) {}
  void end(const std::vector<Result>& all) override {
    if (auto text = table_(all); !text.empty()) write_atomically(path_, text);
  }

 private:
  std::string path_;
  CsvTable table_;
};

ReporterRegistrar quantization_reporter({
    .name = "quantization",
    .summary = "quantization.csv: each recipe's time, speedup over its baseline, SQNR, weight bytes (runs with recipes)",
    .files = {"quantization.csv"},
    .order = 4,
    .make =
        [](const std::string& dir) {
          return std::make_unique<TableCsvReporter>(dir, "quantization.csv", [](const std::vector<Result>& all) {
            auto rows = quant_rows(all);
            return rows.empty() ? std::string() : quant_csv(rows);
          });
        },
});

ReporterRegistrar training_reporter({
    .name = "training",
    .summary = "training.csv: each training step's fwd, bwd and total time, % of peak, speedup over its baseline "
               "(runs with mode=train)",
    .files = {"training.csv"},
    .order = 5,
    .make =
        [](const std::string& dir) {
          return std::make_unique<TableCsvReporter>(dir, "training.csv", [](const std::vector<Result>& all) {
            auto rows = training_rows(all);
            return rows.empty() ? std::string() : training_csv(rows);
          });
        },
});

}  // namespace
}  // namespace opmeter
