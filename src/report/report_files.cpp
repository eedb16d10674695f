// report.html and report.md beside the results at the end of a run.
#include <filesystem>

#include <fmt/format.h>

#include "report/report.hpp"
#include "opmeter/reporter_registry.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

class ReportFilesReporter : public Reporter {
 public:
  explicit ReportFilesReporter(std::string dir) : dir_(std::move(dir)) {}
  void begin(const nlohmann::json& context, std::size_t) override { context_ = context; }
  void end(const std::vector<Result>& all) override {
    namespace fs = std::filesystem;
    std::vector<ResultSet> sets = {{dir_, ResultsFormat::results_json, context_, all}};
    try {
      write_atomically((fs::path(dir_) / "report.html").string(), html_report(sets));
      write_atomically((fs::path(dir_) / "report.md").string(), markdown_report(sets));
    } catch (const std::exception& e) {
      fmt::print(stderr, "opmeter: warning: the report was not written ({}); the results are saved\n", e.what());
    }
  }

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

void rewrite_report_files(const std::string& dir, const std::vector<pipeline::PipelineSummary>& pipelines) {
  namespace fs = std::filesystem;
  try {
    std::vector<ResultSet> sets = {load_results(dir)};
    sets[0].notes.clear();  // the run's own directory: nothing the reader chose needs saying
    write_atomically((fs::path(dir) / "report.html").string(), html_report(sets, pipelines));
    write_atomically((fs::path(dir) / "report.md").string(), markdown_report(sets, pipelines));
  } catch (const std::exception& e) {
    fmt::print(stderr, "opmeter: warning: the report was not rewritten with the pipelines ({}); they are in {}\n",
               e.what(), (fs::path(dir) / "pipelines.json").string());
  }
}

std::unique_ptr<Reporter> make_report_files_reporter(const std::string& dir) {
  return std::make_unique<ReportFilesReporter>(dir);
}

}  // namespace opmeter
