#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/run_settings.hpp"
#include "engine/stopping_settings.hpp"
#include "config/config.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "engine/runner.hpp"
#include "results/result_set.hpp"
#include "util/case_filter.hpp"

namespace opmeter {

struct RunArgs {
  std::string config;
  std::string suite;
  std::string filter;
  std::string exclude;              // --exclude: leave out the cases it matches
  std::string case_string;
  bool case_given = false;          // --case was given (an empty string is an error, not "no case")
  std::optional<int> threads;
  std::string out;
  std::string resume;
  StoppingOverrides stopping;       // --samples, --max-noise, ... (see stopping_settings())
  std::optional<double> case_deadline_s;
  std::uint64_t seed = 20261122;
  bool seed_given = false;
  std::optional<std::size_t> llc_bytes;  // --llc-bytes: replaces the CPU's last-level cache size
  bool hot = false;
  bool isolate = false;
  bool dry_run = false;
  std::string calibration;
  bool no_report = false;
  std::string formats;              // --format: results files by reporter name, comma-separated
  std::string device;               // cpu or cuda:N: replaces the config's device
  bool profile = false;
  bool memory_profile = false;      // --memory-profile: an untimed pass measuring peak memory
  std::string profile_dir;          // internal: where an isolated child's profiles go
  RunSettingValues settings;        // --energy-window, --graph, ... (see run_setting_table())
  std::vector<std::string> kernels;  // --kernel FILE[:NAME]: users' Python kernels
  std::string child_result;  // internal: isolated child writes its one result here
  bool check_only = false;   // internal: the isolated child of `opmeter check` checks, untimed
  std::vector<std::string> plugins;    // --plugin: C plugin libraries, loaded before the plan is made
  std::vector<std::string> pipelines;  // --pipeline NAME[:key=value,...]: built-in pipelines to run
  std::string shard;        // --shard I/N or auto (cli/shard_run.hpp); empty: the launcher's, if any
  std::string shard_model;  // --shard-model: a predict model whose times balance the shards
};

void add_run_command(CLI::App& app, RunArgs& args);

// What `run` and `check` share: the opmeter binary (isolated children re-execute it), --filter,
// and users' impls (--kernel, --plugin), registered before any case names them.
std::string self_path(const char* argv0);
// ROOT/<YYYYmmdd-HHMMSS> (local time): a new run's default results directory.
std::string timestamped_dir(const std::string& root);
// --filter and --exclude: UsageError when one is no RE2 regex (lookaround included); nullopt when both are empty.
std::optional<CaseSelection> compile_filter(const std::string& filter, const std::string& exclude);
// Adds --filter and --exclude to `command`.
void add_filter_options(CLI::App* command, std::string& filter, std::string& exclude);
void add_user_impl_options(CLI::App* command, std::vector<std::string>& kernels, std::vector<std::string>& plugins);
struct UserImpls {
  std::vector<std::string> kernel_specs;  // the kernels' FILE:NAME made absolute (isolated children register them again)
  std::vector<std::string> names;         // the impls they registered
};
UserImpls load_user_impls(const std::vector<std::string>& kernels, const std::vector<std::string>& plugins);
// What reading a resumed run's stored code found that the run judges by later, not an argument:
// a dry run judges --case-deadline by the plugins the run would load.
struct ResumeFacts {
  std::vector<std::string> plugins_not_loaded;  // a dry run's: the stored plugins it did not load
};
// A resumed run's or check's stored plugins and kernels, taken where no flag names any. A dry run
// takes none, and says so: results may come from anyone, and their code runs to measure, not to look.
ResumeFacts take_stored_code(const std::string& resume, bool dry_run, const std::vector<std::string>& stored_plugins,
                             const std::vector<std::string>& stored_kernels, std::vector<std::string>& plugins,
                             std::vector<std::string>& kernels);
// A deadline applies to cases run in a child process: --isolate's, and a C plugin's (which run in
// one without it). UsageError for a --case-deadline given where no case would have one.
inline const std::string kCaseDeadlineHelp =
    "with --isolate (or for a --plugin's cases, which run in a child process anyway): seconds before a case is killed";
void check_case_deadline(const std::optional<double>& deadline, bool isolate, bool plugins);

// Where and how a run writes its results.
struct RunOutput {
  std::string dir;            // default: opmeter-results/<timestamp>
  bool resume = false;        // skip the cases already in dir's journal
  std::string source;         // what the cases came from (suite, config file, ...)
  nlohmann::json settings;    // the run settings, stored in the results' context as "run"
  bool report = true;         // also write report.html and report.md
  std::vector<std::string> formats;  // reporters by name (reporter_registry.hpp); empty: the default set
  // The command that continues an interrupted run in `dir` (empty: `--resume DIR`, run's flag).
  std::function<std::string(const std::string& dir)> resume_command;
  bool formats_named = false;  // --format (or the resumed run's) named them: a table without rows is said so
  bool run_notes = true;       // end with the notes on the whole run (say_run_notes); rounds say them once, after
};
// Runs cases with live progress, journal, summary files and the report in the output directory.
// Returns every result there (a resumed run's earlier ones too), the machine context and the
// directory (`source`: the one given, or the timestamped default).
ResultSet run_cases_in_dir(const std::vector<Case>& cases, const RunOptions& options, RunOutput out);
// What the run's results as a whole ask to be said: ceilings measured on a busy machine, a library
// that fell back to kernels older than the CPU. `source` "calibrate" says the former of its profile.
void say_run_notes(const std::vector<Result>& results, const std::string& source);
// Whether a run with `out` writes report.html and report.md (out.report, and html among the formats).
bool writes_report(const RunOutput& out);
// Runs the pipelines' cases (`cases`, with any others of the plan) in the output directory, moves
// skipped layers to their next impl in further rounds, then writes pipelines.json, summary.csv and
// a log per pipeline beside the results, and prints each pipeline's totals.
int run_pipelines(std::vector<pipeline::PlannedPipeline> pipelines, std::vector<Case> cases, const RunOptions& options,
                  RunOutput out, const std::function<bool()>& interrupted);
// 0 when all cases ran (ok or skipped), 1 when any failed, 128 + signal when interrupted (130
// SIGINT, 143 SIGTERM).
int results_exit_code(const std::vector<Result>& results);
// Reads and checks a calibration profile (UsageError otherwise).
CalibrationProfile read_calibration(const std::string& path);
// The profile's context key listing the ceilings `calibrate` measured while others took the CPUs.
inline constexpr const char* kContendedCeilings = "contended_ceilings";

// `opmeter check`: correctness of every impl x dtype x the ops' check shapes, untimed.
struct CheckArgs {
  std::string device;  // empty: the resumed check's, else cpu
  std::string filter;
  std::string exclude;
  std::vector<std::string> ops, impls, dtypes;
  bool quick = false;
  bool isolate = false;
  std::optional<double> case_deadline_s;
  bool sanitize = false;
  bool dry_run = false;
  std::vector<std::string> kernels, plugins;
  std::string out;     // check.json goes here (empty: the resumed directory, else the current one)
  std::string resume;  // --resume DIR: check only the cases DIR/check.json lacks, write the union there
  std::string shard;      // --shard I/N|auto: this rank's share, its check.json in OUT/rankNNN-of-N-HOST-DEVICE/
};
void add_check_command(CLI::App& app, CheckArgs& args);
int check_command(const CheckArgs& args, const char* argv0);

struct CalibrateArgs {
  std::string out = "opmeter-calibration.json";
  std::string results_dir;
  std::string resume;  // --resume DIR: continue the calibration whose raw results DIR holds
  std::string fusion_config;
  std::optional<std::size_t> array_mib;
  std::optional<std::size_t> llc_bytes;
  std::optional<int> threads;
  std::string device;  // empty: the host
  bool quick = false;
};
void add_calibrate_command(CLI::App& app, CalibrateArgs& args);
int calibrate_command(const CalibrateArgs& args);
int run_command(const RunArgs& args, const char* argv0);

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string out = "report.html";
  std::string markdown;  // default: out with .md for .html
  bool no_markdown = false;
};
void add_report_command(CLI::App& app, ReportArgs& args);
int report_command(const ReportArgs& args);

struct CompareArgs {
  std::string base, neu;
  double fail_above_pct = 5.0;
  double threshold_pct = 1.0;
  double alpha = 0.05;
  std::string format = "md";
  std::string out;
  bool sustained = false;  // GPU cases on their sustained figure
  bool allow_missing = false;  // cases BASE measured and NEW lacks pass the gate
};
void add_compare_command(CLI::App& app, CompareArgs& args);
int compare_command(const CompareArgs& args);
// `opmeter predict` and its subcommands `fit` and `plan` (which one ran: the parsed() of their apps).
struct PredictArgs {
  CLI::App *predict = nullptr, *fit = nullptr, *plan = nullptr;
  // predict MODEL CASES...
  std::vector<std::string> inputs;  // the model, then what to predict
  std::string format = "md";
  std::string out;
  std::string measured;
  // predict fit RESULTS... -o MODEL
  std::vector<std::string> results;
  std::string model_out;
  std::string calibration;
  int folds = 5;
  std::uint64_t seed = 20261123;
  int threads = 1;
  bool no_report = false;
  // predict plan MODEL CONFIG --budget B
  std::string plan_model, plan_config, budget;
  std::string plan_out = "plan.yaml";
};
void add_predict_command(CLI::App& app, PredictArgs& args);
int predict_command(const PredictArgs& args);

// `opmeter merge`: the ranks of sharded runs joined into one results directory (cli/merge_command.cpp).
struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out;
  bool force = false;
};
void add_merge_command(CLI::App& app, MergeArgs& args);
int merge_command(const MergeArgs& args);

int list_command();
int list_markdown_command();  // the guide's ops and impls page (cli/list_markdown.cpp)
int info_command();

}  // namespace opmeter
