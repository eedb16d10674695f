// report.html and report.md beside the results at the end of a run.
#include <filesystem>

#include <fmt/format.h>

#include "report/report.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

class ReportFilesReporter : public Reporter {
 public:
  explicit ReportFilesReporter(std::string dir) : dir_(std::move(dir)) {}
  void begin(const nlohmann::json& context, std::size_t) override { context_ = context; }
  void end(const std::vector<Result>& all) override { write_report_files({dir_, ResultsFormat::results_json, context_, all}); }

 private:
  std::string dir_;
  nlohmann::json context_;
};

ReporterRegistrar html_reporter({
    .name = "html",
    .summary = "report.html and report.md: the report, with charts, and its tables in markdown",
    .files = {"report.html", "report.md"},
    .order = 3,
    .make = [](const std::string& dir) { return make_report_files_reporter(dir); },
});

}  // namespace

std::vector<std::string> write_report_files(const ResultSet& run, const std::vector<pipeline::PipelineSummary>& pipelines) {
  namespace fs = std::filesystem;
  const std::vector<ResultSet> sets = {run};
  try {
    write_atomically((fs::path(run.source) / "report.html").string(), html_report(sets, pipelines));
    write_atomically((fs::path(run.source) / "report.md").string(), markdown_report(sets, pipelines));
    return {"report.html", "report.md"};
  } catch (const std::exception& e) {
    fmt::print(stderr, "opmeter: warning: the report was not written ({}); the results are saved\n", e.what());
    return {};
  }
}

std::unique_ptr<Reporter> make_report_files_reporter(const std::string& dir) {
  return std::make_unique<ReportFilesReporter>(dir);
}

}  // namespace opmeter
