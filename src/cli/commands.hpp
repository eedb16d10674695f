#pragma once
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "opmeter/runner.hpp"

namespace opmeter {

struct RunArgs {
  std::string config;
  std::string suite;
  std::string filter;
  std::string case_string;
  std::optional<int> threads;
  std::string out;
  std::string resume;
  std::optional<std::size_t> samples;
  std::optional<double> max_noise_pct;
  std::optional<double> timeout_s;
  std::optional<std::size_t> min_samples;
  std::optional<double> min_time_s;
  std::optional<std::size_t> warmup;
  std::optional<double> warmup_s;
  std::optional<double> case_deadline_s;
  std::uint64_t seed = 20261122;
  bool hot = false;
  bool isolate = false;
  bool dry_run = false;
  std::string calibration;
  std::string child_result;  // internal: isolated child writes its one result here
};

void add_run_command(CLI::App& app, RunArgs& args);
// Runs cases with live progress, journal and summary files in `out_dir` (default:
// opmeter-results/<timestamp>); with `resume`, skips the cases already in its journal.
std::vector<Result> run_cases_in_dir(const std::vector<Case>& cases, const RunOptions& options, std::string out_dir,
                                     bool resume, const std::string& source);
// 0 when all cases ran (ok or skipped), 1 when any failed, 130 when interrupted.
int results_exit_code(const std::vector<Result>& results);
// Reads and checks a calibration profile (UsageError otherwise).
nlohmann::json read_calibration(const std::string& path);

struct CalibrateArgs {
  std::string out = "opmeter-calibration.json";
  std::string results_dir;
  std::string fusion_config;
  std::optional<std::size_t> array_mib;
  std::optional<int> threads;
  bool quick = false;
};
void add_calibrate_command(CLI::App& app, CalibrateArgs& args);
int calibrate_command(const CalibrateArgs& args);
int run_command(const RunArgs& args, const char* argv0);
int list_command();
int info_command();

}  // namespace opmeter
