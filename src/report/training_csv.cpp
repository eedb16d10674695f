// training.csv: the training-step table (fwd, bwd and total per step, speedup over its baseline),
// written only when a run measured a training step: what torchao's training benchmark saves.
#include <filesystem>

#include "analysis/training.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

class TrainingCsvReporter : public Reporter {
 public:
  explicit TrainingCsvReporter(std::string dir) : dir_(std::move(dir)) {}
  void end(const std::vector<Result>& all) override {
    auto rows = training_rows(all);
    if (!rows.empty()) write_atomically((std::filesystem::path(dir_) / "training.csv").string(), training_csv(rows));
  }

 private:
  std::string dir_;
};

ReporterRegistrar training_reporter({
    .name = "training",
    .summary = "training.csv: each training step's fwd, bwd and total time, % of peak, speedup over its baseline (runs with mode=train)",
    .files = {"training.csv"},
    .order = 5,
    .make = [](const std::string& dir) { return std::make_unique<TrainingCsvReporter>(dir); },
});

}  // namespace
}  // namespace opmeter
