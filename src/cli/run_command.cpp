// `opmeter run`: plan the cases, run them, write the results.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/exceeded_ceilings.hpp"
#include "cli/commands.hpp"
#include "cli/shard_run.hpp"
#include "cli/validators.hpp"
#include "config/config.hpp"
#include "config/pipeline_flags.hpp"
#include "context/openblas_core.hpp"
#include "engine/calibration_profile.hpp"
#include "engine/profile_pass.hpp"
#include "engine/runner.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "plugins/c_plugin.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "results/run_dir.hpp"
#include "util/interrupt.hpp"
#include "util/text.hpp"
#include "worker/shared_worker.hpp"
#include "worker/user_kernels.hpp"

namespace opmeter {
namespace {

std::atomic<bool>& g_cancel = interrupt_flag();  // Ctrl-C or SIGTERM: the run stops, exit 128 + the signal


// Says which ceilings the run measures itself although a calibration profile was given: the
// profile holds those of one device and thread count only, and of the dtypes it measured.
// `added`: the ceiling cases planned beside `cases`.
void say_what_the_profile_leaves(const CalibrationProfile& p, const std::vector<Case>& cases,
                                 const std::vector<Case>& added) {
  Case profiled;
  profiled.device = p.device;
  profiled.threads = p.threads;
  std::vector<std::string> own;  // ceilings of the profile's own device and threads it lacks
  for (auto& c : added)
    if (Ceilings::where(c) == Ceilings::where(profiled)) own.push_back(c.to_string());
  if (!own.empty())
    fmt::print(stderr, "opmeter: the calibration profile holds no ceiling for {}: the run measures it itself\n",
               fmt::join(own, ", "));
  const bool host_cases = std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.on_host(); });
  if (p.device != kHostDevice) {
    if (host_cases)
      fmt::print(stderr, "opmeter: the calibration profile is of {}: the run measures the host's ceilings itself\n", p.device);
    return;
  }
  std::set<int> others;
  for (auto& c : cases)
    if (c.on_host() && c.threads != p.threads) others.insert(c.threads);
  if (!others.empty())
    fmt::print(stderr,
               "opmeter: the calibration profile was measured with threads={}, and cases run with threads={}: the run "
               "measures the ceilings of threads={} itself\n",
               p.threads, fmt::join(others, ","), fmt::join(others, ","));
}

Plan make_plan(const RunArgs& a) {
  int threads = a.threads.value_or(default_threads());
  if (a.case_given) {
    if (!a.config.empty() || !a.suite.empty() || !a.pipelines.empty())
      throw UsageError("--case runs one case: give no config, --suite or --pipeline with it");
    Plan p;
    p.source = "case";
    Case c = parse_case(a.case_string);
    validate_case(c);
    // The case string carries its device (threads=N on the host, device=cuda:N on a GPU): a
    // --device that names another is a contradiction, not an override.
    if (!a.device.empty()) {
      check_device(a.device);  // UsageError naming the expected form
      if (a.device != c.device)
        throw UsageError(
            fmt::format("--device {}: the case runs on {}, as its string says; a case string carries its "
                        "device (/threads=N on the CPU, /device=cuda:N on a GPU): give no --device with "
                        "--case, or write the device into the case string",
                        a.device, c.device));
    }
    // --threads and --hot still apply (a quick variation of the case), but make another case string:
    // say so, as its results will not compare with the string's.
    Case changed = c;
    std::vector<std::string> by;
    if (a.threads && c.on_host() && *a.threads != c.threads) {
      changed.threads = *a.threads;
      by.push_back(fmt::format("--threads {}", *a.threads));
    }
    if (a.hot && !c.hot) {
      changed.hot = true;
      by.push_back("--hot");
    }
    if (!by.empty())
      p.notes.push_back(
          fmt::format("{} {} the case {}: another case than the string given (compare matches "
                      "case strings)",
                      fmt::join(by, " and "), by.size() == 1 ? "makes" : "make", changed.to_string()));
    p.cases.push_back(c);
    return p;
  }
  if (!a.config.empty() && !a.suite.empty()) throw UsageError("give either a config file or --suite, not both");
  if (!a.device.empty()) check_device(a.device);  // UsageError naming the expected form
  if (!a.pipelines.empty()) {
    if (!a.config.empty() || !a.suite.empty()) throw UsageError("--pipeline runs built-in pipelines: give no config or --suite with it");
    return load_pipeline_flags(a.pipelines, threads, a.device);
  }
  // A dry run only reads the config: its plugins and kernels are not loaded (their code runs only
  // when something is measured).
  if (!a.config.empty()) return load_config_file(a.config, threads, a.device, a.dry_run ? ConfigCode::skip : ConfigCode::load);
  return load_suite(a.suite.empty() ? "quick" : a.suite, threads, a.device);
}

int child_run(const RunArgs& a, const RunOptions& options) {
  Case c = parse_case(a.case_string);
  validate_case(c);
  Result r = a.check_only ? check_case(c, options) : run_case(c, options);
  std::ofstream f(a.child_result);
  f << dump_json(to_json(r)) << "\n";
  return f ? 0 : 3;
}

int exit_code(const std::vector<Result>& results) {
  if (g_cancel.load()) return 128 + interrupt_signal();  // 130 SIGINT, 143 SIGTERM
  for (auto& r : results)
    if (r.status == Status::failed || r.status == Status::error || r.status == Status::crashed ||
        r.status == Status::timeout)
      return 1;
  return 0;
}

// What a run measures, as run.json keeps it: its case, pipelines, config (absolute) or suite.
void add_what_runs(nlohmann::json& j, const RunArgs& a) {
  std::error_code ec;
  if (a.case_given) j["case"] = a.case_string;
  else if (!a.pipelines.empty()) j["source"] = "--pipeline";
  else if (!a.config.empty()) j["config"] = std::filesystem::absolute(a.config, ec).lexically_normal().string();
  else j["suite"] = a.suite.empty() ? "quick" : a.suite;
  if (!a.pipelines.empty()) j["pipelines"] = a.pipelines;
}

// The part of run.json that says what the run measures, as one line ("" where it says nothing); a
// config as its canonical path, so ./my.yaml, a link to it and my.yaml are one config.
std::string what_runs(const nlohmann::json& j) {
  if (j.contains("config") && j["config"].is_string()) {
    std::error_code ec;
    auto path = std::filesystem::weakly_canonical(j["config"].get<std::string>(), ec);
    return "config " + (ec ? j["config"].get<std::string>() : path.string());
  }
  for (const char* key : {"case", "suite"})
    if (j.contains(key) && j[key].is_string()) return fmt::format("{} {}", key, j[key].get<std::string>());
  if (j.contains("pipelines")) return "--pipeline " + j["pipelines"].dump();
  return "";
}

// `run CONFIG --resume DIR` continues DIR's run only where CONFIG is what DIR measured: another
// plan's cases would join its journal under its run.json (`--resume DIR` alone reuses its plan).
void check_resumes_the_same_run(const RunArgs& a) {
  auto stored = stored_run_settings(a.resume);
  if (!stored) return;
  nlohmann::json now;
  add_what_runs(now, a);
  const std::string before = what_runs(*stored), after = what_runs(now);
  if (!before.empty() && before != after)
    throw UsageError(fmt::format("--resume {}: it holds a run of {}, not of {}; continue it with --resume {} alone, or "
                                 "give another --out",
                                 a.resume, before, after, a.resume));
}

// What a reader of the results needs to reproduce the run, and what `--resume DIR` alone reuses.
nlohmann::json run_settings(const RunArgs& a, const std::string& source, const RunOptions& o) {
  nlohmann::json j = {{"source", source},   {"stopping", stopping_json(o.stopping)}, {"seed", o.seed},
                      {"cache", a.hot ? "hot" : "cold (default)"}, {"isolate", o.isolate}};
  std::error_code ec;
  add_what_runs(j, a);
  if (!a.filter.empty()) j["filter"] = a.filter;
  if (!a.exclude.empty()) j["exclude"] = a.exclude;
  if (!a.formats.empty()) j["formats"] = a.formats;
  if (a.threads) j["threads"] = *a.threads;
  if (!a.calibration.empty()) j["calibration"] = std::filesystem::absolute(a.calibration, ec).string();
  if (!a.device.empty()) j["device"] = a.device;
  if (o.profile) j["profile"] = true;
  if (o.memory_profile) j["memory_profile"] = true;
  if (!a.kernels.empty()) j["kernels"] = o.kernels;  // absolute: --resume may run elsewhere
  if (!a.plugins.empty()) j["plugins"] = loaded_plugins();
  if (llc_bytes_overridden()) j["llc_bytes"] = llc_bytes();
  add_run_settings_json(j, o, a.settings);
  return j;
}

// A stored run.json's values, read with the types and ranges of the flags they stand for: a
// value of another type or out of range (hand-edited, or from another tool) is bad input that
// names the file and the key, never a crash later.
class StoredRun {
 public:
  StoredRun(nlohmann::json settings, const std::string& file)
      : s_(std::move(settings)), file_(file), prefix_(file.ends_with("results.json") ? "context.run." : "run.") {}
  const nlohmann::json& json() const { return s_; }
  bool has(const char* key) const { return s_.contains(key) && !s_[key].is_null(); }

  std::string text(const char* key) const {
    if (!has(key)) return "";
    if (!s_[key].is_string()) bad(key, "a string");
    return s_[key].get<std::string>();
  }
  std::vector<std::string> texts(const char* key) const {
    if (!has(key)) return {};
    if (!s_[key].is_array()) bad(key, "a list of strings");
    std::vector<std::string> out;
    for (auto& v : s_[key]) {
      if (!v.is_string()) bad(key, "a list of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  bool flag(const char* key) const {
    if (!has(key)) return false;
    if (!s_[key].is_boolean()) bad(key, "true or false");
    return s_[key].get<bool>();
  }
  // A non-negative integer in [lo, hi], as `flag` takes it.
  template <class T>
  std::optional<T> integer(const char* key, T lo, T hi, const char* flag) const {
    if (!has(key)) return std::nullopt;
    const auto& v = s_[key];
    const bool non_negative = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
    const auto u = non_negative ? v.get<std::uint64_t>() : 0;
    if (!non_negative || u < std::uint64_t(lo) || u > std::uint64_t(hi))
      bad(key, fmt::format("an integer from {} to {}, as {} takes", lo, hi, flag));
    return static_cast<T>(u);
  }
  // A number in [lo, hi] (an integer where `integer`), as `flag` takes it.
  void check_number(const nlohmann::json& parent, const std::string& key, double lo, double hi, bool integer,
                    const std::string& flag) const {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return;
    const bool ok = it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= lo &&
                    it->get<double>() <= hi && (!integer || it->get<double>() == std::floor(it->get<double>()));
    if (!ok)
      bad(&parent == &s_ ? key : "stopping." + key,
          fmt::format("{} from {} to {}, as {} takes", integer ? "an integer" : "a number", lo, hi, flag), *it);
  }
  [[noreturn]] void bad(const std::string& key, const std::string& expected) const {
    bad(key, expected, s_.contains(key) ? s_[key] : nlohmann::json());
  }
  [[noreturn]] void bad(const std::string& key, const std::string& expected, const nlohmann::json& value) const {
    throw UsageError(
        fmt::format("{}: \"{}{}\" is {}; expected {} (fix or remove it)", file_, prefix_, key, value.dump(), expected));
  }

 private:
  nlohmann::json s_;
  std::string file_, prefix_;
};

// Checks the stored stopping and run settings against the ranges their flags take (restoring
// then takes them as they are).
void check_stored_ranges(const StoredRun& s) {
  for (auto& setting : run_setting_table())
    s.check_number(s.json(), setting.key, setting.lo, setting.hi, setting.integer, setting.flag);
  if (!s.has("stopping")) return;
  const auto& stopping = s.json()["stopping"];
  if (!stopping.is_object()) s.bad("stopping", "an object of stopping settings");
  for (auto& setting : stopping_settings()) {
    auto it = stopping.find(setting.json_key);
    if (setting.zero_is_unset && it != stopping.end() && it->is_number() && it->get<double>() == 0) continue;
    s.check_number(stopping, setting.json_key, setting.flag_range.lo, setting.flag_range.hi, setting.is_integer(),
                   setting.flag);
  }
}

// `--resume DIR` alone continues the run DIR holds: its config, suite or case, its filter and its
// settings (flags given now still win). Returns what reading its stored code found.
ResumeFacts take_stored_settings(RunArgs& a) {
  std::error_code ec;
  if (!std::filesystem::is_directory(a.resume, ec))
    throw UsageError(fmt::format("--resume {}: no such results directory", a.resume));
  std::string file;
  auto stored = stored_run_settings(a.resume, &file);
  if (!stored)
    throw UsageError(fmt::format("--resume {}: no run settings there ({} or results.json); give the config or "
                                 "--suite the run used",
                                 a.resume, kRunFile));
  const StoredRun s(std::move(*stored), file);
  a.config = s.text("config");
  a.suite = s.text("suite");
  if (a.pipelines.empty()) a.pipelines = s.texts("pipelines");
  if (s.has("case")) {
    a.case_string = s.text("case");
    a.case_given = true;
  }
  if (a.filter.empty() && a.exclude.empty()) {  // the filter and exclusion go together
    a.filter = s.text("filter");
    a.exclude = s.text("exclude");
    try {  // one stored by an older opmeter may hold a lookaround
      compile_filter(a.filter, a.exclude);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: the stored {}; give them as flags with --resume {} (flags given now win)", file,
                                   e.what(), a.resume));
    }
  }
  if (a.formats.empty()) a.formats = s.text("formats");
  if (a.device.empty()) a.device = s.text("device");
  if (a.calibration.empty()) a.calibration = s.text("calibration");
  if (a.shard_model.empty()) a.shard_model = s.text("shard_model");  // the split goes on as it began
  const bool hot = s.text("cache") == "hot";
  const bool isolate = s.flag("isolate");
  std::optional<std::uint64_t> seed = s.integer<std::uint64_t>("seed", 0, UINT64_MAX, "--seed");
  auto threads = s.integer<int>("threads", kMinThreads, kMaxThreads, "--threads");
  auto llc = s.integer<std::size_t>("llc_bytes", kMinLlcBytes, kMaxLlcBytes, "--llc-bytes");
  check_stored_ranges(s);
  ResumeFacts facts =
      take_stored_code(a.resume, a.dry_run, s.texts("plugins"), s.texts("kernels"), a.plugins, a.kernels);
  a.hot = a.hot || hot;
  a.isolate = a.isolate || isolate;
  if (!a.seed_given && seed) a.seed = *seed;
  if (!a.threads) a.threads = threads;
  if (!a.llc_bytes) a.llc_bytes = llc;
  restore_run_settings(a.settings, s.json());
  if (s.has("stopping")) restore_stopping(a.stopping, s.json()["stopping"]);
  fmt::print(stderr, "opmeter: resuming with the settings stored in {}\n", a.resume);
  return facts;
}

// More threads than usable CPUs share them: the results then measure the sharing.
void warn_oversubscribed(const std::vector<Case>& cases) {
  int most = 0;
  for (auto& c : cases)
    if (c.on_host()) most = std::max(most, c.threads);
  if (most > default_threads())
    fmt::print(stderr, "opmeter: warning: threads={} is more than the {} CPUs this process may use; threads will share "
                       "CPUs and the results will be slower than the machine can do\n",
               most, default_threads());
}

std::size_t journal_lines(const std::string& journal) {
  try {
    return read_jsonl(journal).size();
  } catch (const std::exception&) {
    return 0;
  }
}

// The results files a run writes: --format's reporters, less the report with --no-report.
std::vector<std::string> chosen_formats(const RunArgs& a) {
  std::vector<std::string> notes;
  auto names = parse_formats(a.formats, &notes);
  for (auto& note : notes) fmt::print(stderr, "opmeter: note: {}\n", note);
  auto html = std::find(names.begin(), names.end(), "html");
  if (a.no_report && html != names.end()) {
    if (!a.formats.empty())
      throw UsageError(fmt::format("--format {} asks for the report (html) that --no-report turns off; give one of them",
                                   a.formats));
    names.erase(html);
  }
  return names;
}

}  // namespace

// ROOT/<YYYYmmdd-HHMMSS>: a new run's default results directory.
std::string timestamped_dir(const std::string& root) {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{}/{:%Y%m%d-%H%M%S}", root, fmt::localtime(t));
}

std::string self_path(const char* argv0) {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : p.string();
}

std::optional<CaseSelection> compile_filter(const std::string& filter, const std::string& exclude) {
  return CaseSelection::make(filter, exclude);
}

void add_filter_options(CLI::App* command, std::string& filter, std::string& exclude) {
  command->add_option("--filter", filter,
                      "only cases whose case string matches this regular expression (anywhere in the string; RE2 "
                      "syntax, linear time: no lookaround, see --exclude)");
  command->add_option("--exclude", exclude,
                      "leave out the cases whose case string matches this regular expression (anywhere; RE2), e.g. "
                      "'^[^/]+/torch_compile'; with --filter: the cases it keeps less these");
}

void add_user_impl_options(CLI::App* command, std::vector<std::string>& kernels, std::vector<std::string>& plugins) {
  // `run` measures a kernel; `check` only checks it.
  const bool measures = command->get_name() == "run";
  command
      ->add_option(
          "--kernel", kernels,
          fmt::format("a Python kernel of your own, FILE.py:NAME (or FILE.py whose module is the kernel): {} as "
                      "impl NAME of the op it declares; repeatable",
                      measures ? "measured" : "checked"))
      ->allow_extra_args(false);  // `--kernel k.py my.yaml`: the config is not a second kernel
  // A dry run loads it too: its impls' cases are the plan, and it is the user's own code, named here
  // (a config's or a resumed run's plugins are not loaded by a dry run).
  command
      ->add_option("--plugin", plugins,
                   "load a C plugin (include/opmeter/plugin_abi.h) and its impls; repeatable. Loaded (its "
                   "constructors run) with --dry-run too: the plan lists its impls' cases")
      ->allow_extra_args(false);
}

void check_case_deadline(const std::optional<double>& deadline, bool isolate, bool plugins) {
  if (deadline && !isolate && !plugins)
    throw UsageError(
        fmt::format("--case-deadline {} needs --isolate: only a case run in a child process has a "
                    "deadline (a --plugin's cases run in one without it)",
                    *deadline));
}

ResumeFacts take_stored_code(const std::string& resume, bool dry_run, const std::vector<std::string>& stored_plugins,
                             const std::vector<std::string>& stored_kernels, std::vector<std::string>& plugins,
                             std::vector<std::string>& kernels) {
  ResumeFacts facts;
  std::vector<std::string> taken;  // the stored code, loaded or not
  for (auto [stored, given] : {std::pair{&stored_plugins, &plugins}, {&stored_kernels, &kernels}}) {
    if (!given->empty() || stored->empty()) continue;  // flags given now win
    taken.insert(taken.end(), stored->begin(), stored->end());
    if (dry_run) {
      if (given == &plugins) facts.plugins_not_loaded = *stored;
    } else {
      *given = *stored;
    }
  }
  if (taken.empty()) return facts;
  if (dry_run)
    fmt::print(stderr,
               "opmeter: a dry run runs no code: not loading {} stored in {} (give them with --plugin or --kernel "
               "to list their impls' cases)\n",
               fmt::join(taken, ", "), resume);
  else  // results are data anyone may share: code they name is never run unsaid
    fmt::print(stderr,
               "opmeter: resuming runs the code the run used, stored in {}: {} (resume only runs you trust; "
               "--plugin or --kernel given now replace them)\n",
               resume, fmt::join(taken, ", "));
  return facts;
}

UserImpls load_user_impls(const std::vector<std::string>& kernels, const std::vector<std::string>& plugins) {
  UserImpls out;
  if (kernels.empty() && plugins.empty()) return out;
  auto before = Registry::global().impl_names();
  for (auto& k : kernels) {
    std::string absolute = worker::absolute_kernel_spec(k);
    worker::add_user_kernel(absolute);
    out.kernel_specs.push_back(absolute);
  }
  for (auto& path : plugins) load_plugin(path);
  for (auto& name : Registry::global().impl_names())
    if (std::find(before.begin(), before.end(), name) == before.end()) out.names.push_back(name);
  return out;
}

CalibrationProfile read_calibration(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("--calibration {}: is a directory; expected a profile written by opmeter calibrate", path));
  std::ifstream f(path);
  if (!f) throw UsageError(fmt::format("--calibration {}: cannot open the file", path));
  nlohmann::json j;
  try {
    f >> j;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("--calibration {}: not JSON ({})", path, e.what()));
  }
  CalibrationProfile p;
  try {  // reject anything that is not a profile now, before any case runs
    p = CalibrationProfile::from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--calibration {}: {}", path, e.what()));
  }
  if (p.ceiling_rule.empty())
    fmt::print(stderr,
               "opmeter: --calibration {}: an older profile, whose ceilings are their cases' medians; opmeter now "
               "takes the {}, 2-4% higher on a quiet machine, so % of peak reads that much higher against it "
               "(run opmeter calibrate again to renew it)\n",
               path, kCeilingRule);
  if (p.context.is_object() && p.context.contains(kContendedCeilings)) {
    std::vector<std::string> cases;
    for (auto& c : p.context[kContendedCeilings]) cases.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    fmt::print(stderr,
               "opmeter: --calibration {}: warning: it was measured while other processes took the CPUs, so its "
               "ceilings of {} are too low and % of peak reads too high against them\n",
               path, fmt::join(cases, ", "));
  }
  return p;
}

namespace {

// A profile of another machine (copied, or hand-edited) rates results against that machine's
// ceilings: said once, naming what differs.
void warn_other_machine(const CalibrationProfile& p, const std::string& path) {
  nlohmann::json here;  // this machine's context, as the profile's was written
  if (p.device == kHostDevice) here = machine_context();
  else if (backend_of(p.device).device_ready(p.device).ok) here = backend_of(p.device).context({p.device});
  if (auto diffs = machine_differences(p, here); !diffs.empty())
    fmt::print(stderr,
               "opmeter: --calibration {}: warning: measured on another machine ({}): % of peak and of bandwidth "
               "against it are of that machine's ceilings, not this one's (run opmeter calibrate here)\n",
               path, fmt::join(diffs, "; "));
}

// Ceilings measured while other processes took the CPUs are too low: every % of peak or of
// bandwidth taken against them reads too high (a peak 80x slow gave a GEMM 3781% of peak).
// Only the ceilings results were rated against (Ceilings::annotate lists them in each result).
void warn_contended_ceilings(const std::vector<Result>& results) {
  std::set<std::string> contended;
  std::size_t rated = 0;
  for (auto& r : results)
    if (auto it = r.details.find("contended_ceilings"); it != r.details.end()) {
      ++rated;
      for (auto& c : split(it->second, ';'))
        if (auto name = trim(c); !name.empty()) contended.insert(name);
    }
  if (!contended.empty())
    fmt::print(stderr,
               "opmeter: warning: {} rated against {} measured while other processes took the CPUs (contended): "
               "too low, so their % of peak or of bandwidth reads too high: {}; measure on a quiet machine, or "
               "give --calibration a profile measured on one\n",
               count_of(rated, "result"), contended.size() == 1 ? "a ceiling" : "ceilings", fmt::join(contended, ", "));
}

// OpenBLAS's rows on a CPU it does not recognise show its fallback kernels (15% of peak where
// oneDNN reaches 90%): said once, where the rows are read, not only in impl-notes.md.
void note_library_fallbacks(const std::vector<Result>& results) {
  for (auto& r : results)
    if (auto it = r.details.find("openblas_core"); it != r.details.end()) {
      if (auto note = openblas_fallback_note(it->second, cpu_info().flags); !note.empty())
        fmt::print(stderr, "opmeter: note: {}\n", note);
      return;
    }
}

// Cases on a device whose backend cannot run here (a GPU config on a machine without a driver)
// are each recorded as skipped with the reason: said once up front, not only case by case.
void say_unusable_devices(const std::vector<Case>& cases) {
  std::map<std::string, std::size_t> per_device;
  for (auto& c : cases) ++per_device[c.device];
  for (auto& [device, count] : per_device)
    if (auto ready = backend_of(device).device_ready(device); !ready.ok)
      fmt::print(stderr, "opmeter: {} cannot run here ({}): its {} will be recorded as skipped\n", device, ready.reason,
                 count_of(count, "case"));
}

}  // namespace

void say_run_notes(const std::vector<Result>& results, const std::string& source) {
  if (source != "calibrate") {  // calibrate says it of its profile
    warn_contended_ceilings(results);
    for (auto& w : exceeded_ceilings(results)) fmt::print(stderr, "opmeter: warning: {}\n", w);
  }
  note_library_fallbacks(results);
}

ResultSet run_cases_in_dir(const std::vector<Case>& cases, const RunOptions& given_options, RunOutput out) {
  namespace fs = std::filesystem;
  RunOptions options = given_options;
  const bool resume = out.resume;
  const std::string& source = out.source;
  const std::string dir = out.dir.empty() ? timestamped_dir("opmeter-results") : out.dir;
  const std::string resume_with = out.resume_command ? out.resume_command(dir) : "--resume " + dir;
  RunDirectory held(dir, resume);  // locked until this function returns
  if ((options.profile || options.memory_profile) && options.profile_dir.empty())
    options.profile_dir = held.file(kProfilesFolder);  // the worker's traces and memory snapshots
  const auto journal = held.file("results.jsonl");
  std::vector<Result> previous;
  std::error_code link_ec;
  if (resume && fs::is_symlink(journal, link_ec))  // read through, it would then be replaced by a file
    throw UsageError(fmt::format("{}: is a link: opmeter resumes only a journal it wrote (a file)", journal));
  if (resume && fs::exists(journal)) {
    bool torn = false;
    previous = read_jsonl(journal, torn);
    if (torn)
      fmt::print(stderr,
                 "opmeter: note: {}: its last line was cut short (by the interruption): dropped, its case "
                 "runs again\n",
                 journal);
    // Rewrite the journal from what parsed, so a line torn by the interruption is not followed
    // by new records.
    std::string clean;
    for (auto& r : previous) clean += dump_json(to_json(r)) + "\n";
    write_atomically(journal, clean);
  }

  std::size_t todo = cases.size();
  if (!previous.empty()) {
    std::set<std::string> done;
    for (auto& r : previous) done.insert(r.case_string);
    todo = std::count_if(cases.begin(), cases.end(), [&](const Case& c) { return !done.count(c.to_string()); });
  }
  fmt::print(stderr, "opmeter: {} from {}{} -> {}\n", count_of(cases.size(), "case"), source,
             previous.empty() ? "" : fmt::format(" ({} already done, {} to run)", cases.size() - todo, todo), dir);

  auto context = machine_context();
  // The devices each backend runs cases on: each says what the context records of them (a GPU's
  // clocks, the CPU's RAPL domains) and measures their idle power once.
  std::map<Backend*, std::set<std::string>> devices;
  for (auto& c : cases) devices[&backend_of(c)].insert(c.device);
  for (auto& [backend, names] : devices) context.update(backend->context({names.begin(), names.end()}));
  if (!out.settings.is_null()) context["run"] = out.settings;
  // Written first: what --resume DIR reuses, and a disk that is full now stops the run now.
  if (!resume || !fs::exists(held.file(kRunFile)))
    write_atomically(held.file(kRunFile), dump_json({{"run", out.settings}, {"context", context}}, 2) + "\n");

  // The journal is always written (resume and every reader fall back on it); the other files are
  // the chosen reporters'.
  MultiReporter reporter;
  std::vector<std::string> files;
  reporter.add(make_console_reporter(stderr, isatty(fileno(stderr))));
  reporter.add(make_jsonl_reporter(journal));
  for (auto& name : out.formats.empty() ? parse_formats("") : out.formats) {
    const ReporterDef* def = ReporterRegistry::global().find(name);
    if (!def) throw UsageError(fmt::format("unknown format '{}'; known: {}", name, ReporterRegistry::global().known()));
    if (def->name == "html" && !out.report) continue;
    reporter.add(def->make(dir));
    files.insert(files.end(), def->files.begin(), def->files.end());
  }
  files.push_back("results.jsonl");
  reporter.add(make_markdown_reporter(stdout));
  reporter.begin(context, cases.size());

  std::vector<Result> results;
  catch_interrupts();  // Ctrl-C ends the run with what finished saved (calibrate's too)
  try {
    results = run_all(cases, std::move(previous), options, reporter, &g_cancel);
  } catch (const OutputError& e) {
    // Stop at once: measuring on would lose every further result too.
    throw OutputError(fmt::format("{}\nopmeter: the run stopped there; the {} cases finished before it are in {}; "
                                  "free space (or fix the directory) and continue with {}",
                                  e.what(), journal_lines(journal), journal, resume_with));
  }
  // The files there are, not those a reporter might write (quantization.csv only with recipes);
  // one that --format asked for by name and that has no rows is said so.
  std::erase_if(files, [&](const std::string& f) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / f, ec)) return false;
    static const std::map<std::string, std::string> rows_from = {{"quantization.csv", "quant= cases"},
                                                                 {"training.csv", "mode=train cases"}};
    if (auto it = rows_from.find(f); it != rows_from.end() && out.formats_named && !g_cancel.load())
      fmt::print(stderr, "opmeter: no {}: the run has none of its rows (they come from {})\n", f, it->second);
    return true;
  });
  fmt::print(stderr, "opmeter: results in {}/ ({})\n", dir, fmt::join(files, ", "));
  if (out.run_notes) say_run_notes(results, source);
  if (g_cancel.load()) fmt::print(stderr, "opmeter: interrupted; finished cases are saved, continue with {}\n", resume_with);
  return {dir, ResultsFormat::results_json, context, std::move(results)};
}

void add_run_command(CLI::App& app, RunArgs& a) {
  auto* run = app.add_subcommand("run", "measure the cases of a config file or a built-in suite (default: quick)");
  run->add_option("config", a.config, "YAML config file");
  run->add_option("--suite", a.suite, "built-in suite: quick (default), full, ops, fusion, fusion-gpu, pipeline-quick")
      ->check(kNonEmpty);
  add_filter_options(run, a.filter, a.exclude);
  run->add_option_function<std::string>(
      "--case",
      [&a](const std::string& s) {
        a.case_string = s;
        a.case_given = true;
      },
      "run exactly one case, given by its case string");
  run->add_option("--threads", a.threads, "threads for every case (default: all usable CPUs)")
      ->check(CLI::Range(kMinThreads, kMaxThreads));
  run->add_option("--out", a.out, "results directory (default: opmeter-results/<timestamp>)")->check(kNonEmpty);
  run->add_option("--resume", a.resume,
                  "continue the run in this results directory, skipping finished cases; the plugins and kernels "
                  "it used are loaded again (resume only runs you trust)");
  for (auto& setting : stopping_settings()) {  // --samples, --max-noise, --timeout, ...
    auto given = [&a, key = std::string(setting.config_key)](auto value) {
      a.stopping[key] = static_cast<double>(value);
    };
    auto [lo, hi] = setting.flag_range;
    if (setting.is_integer())
      run->add_option_function<std::size_t>(setting.flag, given, setting.help)
          ->check(kNonNegativeInteger)->check(CLI::Range(static_cast<int>(lo), static_cast<int>(hi)));
    else
      run->add_option_function<double>(setting.flag, given, setting.help)->check(kFinite)->check(CLI::Range(lo, hi));
  }
  run->add_option_function<std::uint64_t>(
         "--seed",
         [&a](std::uint64_t v) {
           a.seed = v;
           a.seed_given = true;
         },
         "seed of the random inputs (a non-negative integer)")
      ->check(kNonNegativeInteger);
  run->add_option("--llc-bytes", a.llc_bytes,
                  "last-level cache size that sizes bandwidth arrays and cold-cache copies (default: what the CPU "
                  "reports; a VM may report the host's)")
      ->check(kNonNegativeInteger)
      ->check(CLI::Range(kMinLlcBytes, kMaxLlcBytes));
  run->add_flag("--hot", a.hot, "measure with warm caches (default: cold, inputs rotate through copies)");
  run->add_flag("--isolate", a.isolate, "run each case in a child process; crashes and hangs are recorded");
  run->add_option("--case-deadline", a.case_deadline_s, kCaseDeadlineHelp + " (default 2 x timeout + 30)")
      ->check(kFinite)
      ->check(CLI::Range(kMinCaseDeadline, kMaxCaseDeadline));
  run->add_option("--calibration", a.calibration, "calibration profile (opmeter calibrate) for % of peak and roofline");
  run->add_flag("--no-report", a.no_report, "do not write report.html and report.md beside the results");
  run->add_option("--format", a.formats,
                  fmt::format("results files to write besides results.jsonl, comma-separated, of: {} (default: all)",
                              ReporterRegistry::global().known()))
      ->check(kNonEmpty);
  run->add_flag("--dry-run", a.dry_run, "print the cases the plan expands to and stop");
  run->add_option("--device", a.device, "where cases run: cpu (default) or cuda:N; picks that backend's impls")
      ->check(kNonEmpty);
  run->add_flag("--profile", a.profile,
                "after each case's measurement, one more untimed sample of one call inside the profiler's capture "
                "range (nsys/ncu --profile-from-start off); the worker's impls also write a PyTorch profiler trace per "
                "case into OUT/profiles");
  run->add_flag("--memory-profile", a.memory_profile,
                "an untimed pass per case after its measurement: its peak memory (the worker's impls: PyTorch's "
                "count; on CUDA also a memory snapshot in OUT/profiles for PyTorch's memory visualizer)");
  run->add_option("--profile-dir", a.profile_dir, "internal: where an isolated child writes its profiles")->group("");
  for (auto& setting : run_setting_table()) {  // --energy-window, --graph, ...
    auto given = [&a, key = setting.key](double value) { a.settings[key] = value; };
    if (setting.integer)
      run->add_option_function<std::int64_t>(setting.flag, given, setting.help)
          ->check(CLI::Range(static_cast<std::int64_t>(setting.lo), static_cast<std::int64_t>(setting.hi)));
    else
      run->add_option_function<double>(setting.flag, given, setting.help)->check(kFinite)->check(CLI::Range(setting.lo, setting.hi));
  }
  add_user_impl_options(run, a.kernels, a.plugins);
  run->add_option("--pipeline", a.pipelines,
                  "run a built-in pipeline layer by layer, NAME[:key=value,...] (e.g. resnet50:batch=64,dtype=bf16); "
                  "repeatable; opmeter list shows them");
  run->add_option("--shard", a.shard,
                  "measure part I of N of the cases (I/N, 0-based), or auto: the launcher's rank and size (mpirun, srun, "
                  "a Slurm job array; the default when one started several); each rank writes OUT/rankI-of-N-HOST-DEVICE");
  run->add_option("--shard-model", a.shard_model, "a model from opmeter predict fit whose times balance the shards (default: the work model)");
  run->add_option("--child-result", a.child_result, "internal: used by --isolate")->group("");
  run->add_flag("--check-only", a.check_only, "internal: the isolated child of opmeter check checks its case, untimed")->group("");
}

int run_command(const RunArgs& given, const char* argv0) {
  RunArgs a = given;
  // From the start: loading a kernel waits on the worker too. An isolated child is stopped by its
  // parent (which kills it), so it keeps the default.
  if (given.child_result.empty()) catch_interrupts();
  std::optional<scale::Shard> shard = run_shard(a);  // sharded runs: each rank's directory under --out
  std::optional<ShardOutput> shard_out;
  if (shard) shard_out = prepare_shard_output(a, *shard);
  if (!shard && a.child_result.empty()) refuse_unsharded_resume_of_tree(a.resume);  // a rank's tree needs its --shard
  ResumeFacts resumed;  // what `--resume DIR` alone found in DIR's stored run
  if (!a.resume.empty() && a.config.empty() && a.suite.empty() && !a.case_given && a.pipelines.empty() &&
      a.child_result.empty())
    resumed = take_stored_settings(a);
  else if (!a.resume.empty() && a.child_result.empty() && !shard)
    check_resumes_the_same_run(a);
  if (a.llc_bytes) set_llc_bytes(*a.llc_bytes);
  RunOptions options;
  options.seed = a.seed;
  options.isolate = a.isolate;
  options.self_exe = self_path(argv0);
  options.case_deadline_s = a.case_deadline_s.value_or(0);
  options.profile = a.profile;
  options.memory_profile = a.memory_profile;
  options.profile_dir = a.profile_dir;
  options = apply_run_settings(options, a.settings);  // a config's come under them, once it is read
  options.kernels = load_user_impls(a.kernels, a.plugins).kernel_specs;  // before any case names them
  if (!a.child_result.empty()) {
    options.stopping = apply_overrides(Stopping{}, a.stopping);
    return child_run(a, options);
  }

  auto formats = chosen_formats(a);  // a wrong name stops the run before anything is planned
  std::optional<CaseSelection> filter = compile_filter(a.filter, a.exclude);  // so does a bad pattern
  Plan plan = make_plan(a);
  options.profile = options.profile || plan.profile;  // a config's enable_profiler
  options.memory_profile = options.memory_profile || plan.memory_profile;  // its enable_memory_profiler
  options.kernels.insert(options.kernels.end(), plan.kernels.begin(), plan.kernels.end());
  options.plugins = loaded_plugins();  // the config's too: isolated cases load them again
  // A dry run loads no config's or resumed run's plugins: it judges the deadline as the run would.
  const bool plugins =
      !options.plugins.empty() || !plan.plugins_not_loaded.empty() || !resumed.plugins_not_loaded.empty();
  check_case_deadline(a.case_deadline_s, options.isolate, plugins);
  if (!a.llc_bytes && plan.llc_bytes) set_llc_bytes(plan.llc_bytes);
  options.stopping = apply_overrides(plan.stopping, a.stopping);
  options = apply_run_settings(apply_run_settings(options, plan.run_settings), a.settings);
  std::vector<Case> cases;
  for (auto& note : plan.notes) fmt::print(stderr, "opmeter: {}\n", note);
  auto override = [&](Case& c) {  // the command line's settings over the plan's
    if (a.threads && c.on_host()) c.threads = *a.threads;
    apply_case_settings(c, a.settings);
    if (a.hot) c.hot = true;
  };
  for (auto c : plan.cases) {
    override(c);
    if (filter && !filter->matches(c.to_string())) continue;
    cases.push_back(c);
  }
  // Where each pipeline runs too: its layers' cases are made from it again (to find their
  // results, and in each round), so they must be the cases run (--hot left every pipeline
  // incomplete).
  for (auto& p : plan.pipelines) {
    override(p.like);
    if (p.end_to_end) override(*p.end_to_end);
  }
  // --graph N on a CPU-only run: refused, as the config's graph: is, rather than dropped.
  std::vector<Case> where = plan.cases;
  for (auto& p : plan.pipelines) where.push_back(p.like);
  check_case_settings_used(a.settings, where);
  if (cases.empty() && !(a.dry_run && !plan.notes.empty())) {  // a dry run of a config's unloaded kernels may list none
    const std::string selection = a.exclude.empty() ? fmt::format("--filter '{}' matches", a.filter)
                                  : a.filter.empty()
                                      ? fmt::format("--exclude '{}' leaves", a.exclude)
                                      : fmt::format("--filter '{}' less --exclude '{}' leaves", a.filter, a.exclude);
    throw UsageError(
        fmt::format("{} none of the {} of {}", selection, count_of(plan.cases.size(), "case"), plan.source));
  }
  if (!a.calibration.empty()) {
    options.calibration = read_calibration(a.calibration);
    warn_other_machine(*options.calibration, a.calibration);
  }
  // The ceilings % of peak needs: a config's or suite's run measures them; a --case run measures
  // its one case, unless a calibration profile was given that lacks its ceiling (it asked for %
  // of peak): then, as a config's run, it measures that ceiling first and says so.
  std::size_t ceiling_cases = 0;  // added to the plan's for % of peak, counted apart in a dry run
  if (!a.case_given || options.calibration) {
    Ceilings known;
    if (options.calibration) known.load_profile(*options.calibration);
    std::vector<Case> planned = with_needed_peaks(cases, default_bandwidth_elements(), known);
    if (options.calibration)  // the ceiling cases come first
      say_what_the_profile_leaves(*options.calibration, cases,
                                  {planned.begin(), planned.begin() + std::ptrdiff_t(planned.size() - cases.size())});
    ceiling_cases = planned.size() - cases.size();
    cases = std::move(planned);
  } else if (std::any_of(cases.begin(), cases.end(),
                         [](const Case& c) { return c.op != "peak" && c.op != "bandwidth"; })) {
    fmt::print(stderr,
               "opmeter: a --case run measures its case alone, no ceiling: no % of peak or of bandwidth "
               "(--calibration PROFILE from `opmeter calibrate` gives them)\n");
  }
  std::string split;  // the shard's split, as every rank computes it
  if (!shard && !a.shard_model.empty())
    fmt::print(stderr,
               "opmeter: warning: --shard-model {} is not used: this run is not sharded (no --shard, and no "
               "launcher started several processes)\n",
               a.shard_model);
  if (shard) {
    if (!plan.pipelines.empty())
      throw UsageError("pipelines run whole on one machine: a run of pipelines (--pipeline or a config's pipelines:) takes no --shard");
    const std::size_t planned = cases.size();
    cases = cases_of_shard(cases, *shard, options.stopping, a.shard_model, device_pins_ranks(a.device), &split);
    fmt::print(stderr, "opmeter: rank {} of {} ({}): {} of the {} planned cases (ceilings run on every rank)\n",
               shard->rank, shard->size, shard->source, cases.size(), planned);
  }
  warn_oversubscribed(cases);
  if (auto note = llc_note(); !note.empty()) fmt::print(stderr, "opmeter: {}\n", note);
  // The note is about the default arrays: said where a case has them (sizes_mib sets others).
  const std::string default_n = std::to_string(default_bandwidth_elements());
  if (std::any_of(cases.begin(), cases.end(), [&](const Case& c) {
        return ceiling_of(c.op) == CeilingKind::memory && c.has("n") && c.get("n") == default_n;
      }))
    if (auto note = bandwidth_cap_note(); !note.empty()) fmt::print(stderr, "opmeter: {}\n", note);

  if (a.dry_run) {
    for (auto& p : plan.pipelines) fmt::print("{}\n", pipeline::planned_pipeline_text(p));
    fmt::print("{} from {}{}\n", count_of(cases.size(), "case"), plan.source,
               ceiling_cases ? fmt::format(", {} of them {} for % of peak", ceiling_cases,
                                           ceiling_cases == 1 ? "a ceiling case" : "ceiling cases")
                             : "");
    for (auto& c : cases) fmt::print("{}\n", c.to_string());
    return 0;
  }
  worker::check_worker_environment(cases);  // a bad OPMETER_PYTHON or deadline: exit 2, not one error per case
  say_unusable_devices(cases);

  // A config's output folder (torchao's output_dir) holds the run's directory unless --out is given.
  const std::string dir = !a.resume.empty() ? a.resume : !a.out.empty() || plan.output_root.empty() ? a.out
                                                                                               : timestamped_dir(plan.output_root);
  auto settings = run_settings(a, plan.source, options);
  if (!plan.notes.empty()) settings["notes"] = plan.notes;  // what the plan left out or maps differently
  RunOutput out{dir, !a.resume.empty(), plan.source, settings, !a.no_report, formats};
  out.formats_named = !a.formats.empty();
  if (shard) {
    out.dir = shard_results_dir(*shard_out, *shard, cases);
    out.resume = !shard_out->existing.empty();
    out.settings["shard"] = shard_json(*shard, split, cases);
    if (!a.shard_model.empty()) add_shard_model(out.settings, a.shard_model);
    if (!a.resume.empty()) check_split_as_stored(a.resume, out.settings["shard"], shard_out->root);
    out.resume_command = [root = shard_out->root](const std::string&) { return "--resume " + root + " on every rank"; };
  }
  if (!plan.pipelines.empty())
    return run_pipelines(std::move(plan.pipelines), std::move(cases), options, out, [] { return g_cancel.load(); });
  return exit_code(run_cases_in_dir(cases, options, out).results);
}

bool writes_report(const RunOutput& out) {
  if (!out.report) return false;
  const auto formats = out.formats.empty() ? parse_formats("") : out.formats;
  return std::find(formats.begin(), formats.end(), "html") != formats.end();
}

int results_exit_code(const std::vector<Result>& results) { return exit_code(results); }

}  // namespace opmeter
