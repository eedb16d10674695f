// `opmeter predict`: fit performance models on results (predict fit), answer cases, configs,
// results and pipelines with them (predict MODEL CASES...), and plan which cases to measure next
// (predict plan).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/compare.hpp"
#include "cli/commands.hpp"
#include "util/output_path.hpp"
#include "cli/validators.hpp"
#include "engine/stopping_settings.hpp"
#include "config/config.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "util/interrupt.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "opmeter/registry.hpp"  // validate_case
#include "predict/ceilings.hpp"
#include "predict/cross_validation.hpp"
#include "predict/model.hpp"
#include "predict/pipeline_prediction.hpp"
#include "predict/planner.hpp"
#include "predict/report.hpp"
#include "predict/sample.hpp"
#include "predict/training_range.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "util/text.hpp"

namespace opmeter {

using namespace predict;
namespace fs = std::filesystem;

void add_predict_command(CLI::App& app, PredictArgs& a) {
  auto* cmd = app.add_subcommand(
      "predict", "performance models: predict cases, configs, results and pipelines with a model (predict fit makes one)");
  cmd->footer(
      "  opmeter predict fit RESULTS... -o model.json     fit models, report their held-out error\n"
      "  opmeter predict MODEL CASES...                   predict case strings, configs, results, pipelines\n"
      "  opmeter predict plan MODEL --budget 60s CONFIG   which of CONFIG's cases to measure next");
  cmd->require_subcommand(0, 1);
  a.predict = cmd;
  cmd->add_option("model_and_cases", a.inputs,
                  "the model file, then case strings, configs (.yaml), results (directories, results.json, "
                  "results.jsonl) or built-in pipelines (resnet50:batch=1,dtype=bf16)");
  cmd->add_option("--format", a.format, "md (default), json or csv")->check(CLI::IsMember({"md", "json", "csv"}));
  cmd->add_option("-o,--out", a.out, "write the predictions here instead of standard output");
  cmd->add_option("--measured", a.measured,
                  "a results directory measured on this machine: its times beside the predictions (pipelines from its "
                  "pipelines.json)");

  auto* fit = cmd->add_subcommand("fit", "fit roofline, analytic, boosted-tree and random-forest models per device, op, "
                                         "impl and dtype; report their error by k-fold cross-validation");
  a.fit = fit;
  fit->add_option("results", a.results, "results directories, results.json or results.jsonl files")->required();
  fit->add_option("-o,--out", a.model_out, "the model file to write (model.json); the report goes beside it")->required();
  fit->add_option("--calibration", a.calibration,
                  "a profile from opmeter calibrate: the device's ceilings (default: peak and bandwidth cases in the "
                  "results)");
  fit->add_option("--folds", a.folds, "k of k-fold cross-validation (default 5); a group needs at least k cases")
      ->check(CLI::Range(2, 1000));
  fit->add_option("--seed", a.seed, "seed of the folds and the trees (default 20261123)")->check(kNonNegativeInteger);
  fit->add_option("--threads", a.threads, "threads the tree models train with (default 1; the same threads give the same model)")
      ->check(CLI::Range(1, 4096));
  fit->add_flag("--no-report", a.no_report, "write no MODEL.html and MODEL.md");

  auto* plan = cmd->add_subcommand("plan", "pick the cases of a sweep that most reduce the model's uncertainty within a time "
                                           "budget, as a config to run");
  a.plan = plan;
  plan->add_option("model", a.plan_model, "the model file")->required();
  plan->add_option("config", a.plan_config, "the sweep: a config whose cases are the candidates")->required();
  plan->add_option("--budget", a.budget, "measuring time to spend: 90 (seconds), 60s, 5m, 1h")->required();
  plan->add_option("-o,--out", a.plan_out, "the config to write (default: plan.yaml)");
}

namespace {

void write_output(const std::string& path, const std::string& content) {
  try {
    write_atomically(path, content);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("cannot write {}: {}", path, e.what()));
  }
}

std::string pct(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

// The model file's name without .json, for the report beside it.
std::string report_stem(const std::string& model_path) {
  const std::string ext = ".json";
  if (model_path.size() > ext.size() && model_path.compare(model_path.size() - ext.size(), ext.size(), ext) == 0)
    return model_path.substr(0, model_path.size() - ext.size());
  return model_path;
}

void warn_other_machine(const PredictModel& m, const std::string& path) {
  if (m.context.empty() || !m.context.is_object()) {
    fmt::print(stderr, "opmeter: WARNING: model {} has no machine context: cannot check it was fitted on this machine\n", path);
    return;
  }
  auto rename = [](std::string d, const std::string& from, const std::string& to) {
    if (auto at = d.find(from); at != std::string::npos) d.replace(at, from.size(), to);
    return d;
  };
  nlohmann::json fitted = m.context;
  fitted.erase("run");  // the fitted results' run settings: this machine has none to compare
  for (auto& d : context_differences(fitted, machine_context()))
    fmt::print(stderr, "opmeter: WARNING: model {} was fitted on another machine or software: {}\n", path,
               rename(rename(d, "BASE", "model"), "NEW", "this machine"));
}

// --- predict fit ------------------------------------------------------------------------------

std::string fit_table(const PredictModel& m) {
  std::string out = fmt::format("{:<34} {:>5}", "group", "cases");
  for (ModelKind k : kModelKinds) out += fmt::format("  {:<24}", fmt::format("{} med/p90 cov", to_string(k)));
  out += "\n";
  for (const auto& g : m.groups) {
    out += fmt::format("{:<34} {:>5}", g.key, g.points.size());
    for (ModelKind k : kModelKinds) {
      auto it = g.cv.find(k);
      std::string cell = it == g.cv.end() ? "-"
                                          : fmt::format("{}{} / {} {:.0f}%", g.best == k ? "*" : "", pct(it->second.median_ape),
                                                        pct(it->second.p90_ape), it->second.coverage * 100);
      out += fmt::format("  {:<24}", cell);
    }
    out += "\n";
  }
  out += "* best model of the group (lowest held-out median error); med/p90: held-out absolute percentage error; cov: "
         "share of held-out cases inside the 90% interval\n";
  for (const auto& g : m.groups) {
    const auto& worst = g.cv.at(g.best).worst;
    if (worst.empty()) continue;
    out += fmt::format("worst held-out cases of {} ({}):\n", g.key, to_string(g.best));
    for (std::size_t i = 0; i < worst.size() && i < 3; ++i)
      out += fmt::format("  {}  measured {}, predicted {} ({} off)\n", worst[i].case_string, human_time(worst[i].measured_s),
                         human_time(worst[i].predicted_s), pct(worst[i].ape));
  }
  return out;
}

int fit_command(const PredictArgs& a) {
  check_output_file(a.model_out, "predict fit -o");
  check_not_an_input(a.model_out, "predict fit -o", a.results);
  if (!a.calibration.empty()) check_not_an_input(a.model_out, "predict fit -o", {a.calibration});
  if (!a.no_report) {
    for (const char* ext : {".html", ".md"}) {
      check_output_file(report_stem(a.model_out) + ext, "predict fit -o (its report)");
      check_not_an_input(report_stem(a.model_out) + ext, "predict fit -o (its report)", a.results);
    }
  }
  // Ctrl-C stops the fit (exit 130) and writes no model: a half-fitted one would pass for a whole.
  catch_interrupts();
  throw_if_interrupted();
  std::vector<ResultSet> sets;
  for (auto& path : a.results) {
    sets.push_back(load_results(path));
    for (auto& note : sets.back().notes) fmt::print(stderr, "opmeter: note: {}\n", note);
  }
  auto samples = merge_samples(sets);
  std::map<std::string, predict::Ceilings> ceilings = ceilings_from_results(sets);
  if (!a.calibration.empty()) {
    predict::Ceilings c = ceilings_from_profile(read_calibration(a.calibration), a.calibration);
    ceilings[c.device] = c;
  }
  nlohmann::json context = nlohmann::json::object();
  for (auto& s : sets)
    if (s.context.is_object() && !s.context.empty()) {
      context = s.context;
      break;
    }
  FitSettings settings;
  settings.folds = a.folds;
  settings.seed = a.seed;
  settings.threads = a.threads;
  PredictModel m = fit_model(samples, ceilings, context, settings);
  m.sources = a.results;
  throw_if_interrupted();
  write_output(a.model_out, dump_json(to_json(m), 1) + "\n");
  std::string written = a.model_out;
  if (!a.no_report) {
    const std::string stem = report_stem(a.model_out);
    write_output(stem + ".html", model_html(m));
    write_output(stem + ".md", model_markdown(m));
    written += fmt::format(", {}.html, {}.md", stem, stem);
  }
  std::size_t cases = 0;
  for (auto& g : m.groups) cases += g.points.size();
  fmt::print("{}", fit_table(m));
  for (auto& note : m.notes) fmt::print(stderr, "opmeter: note: {}\n", note);
  fmt::print(stderr, "opmeter: {} fitted on {} ({}-fold cross-validation) -> {}\n", count_of(m.groups.size(), "group"),
             count_of(cases, "case"), m.folds, written);
  return 0;
}

// --- predict MODEL CASES... -------------------------------------------------------------------

struct Answers {
  std::set<std::string> trained;  // the model's training cases
  std::vector<Prediction> cases;
  std::vector<PipelinePrediction> pipelines;
};

bool is_yaml(const std::string& path) {
  auto ext = fs::path(path).extension().string();
  return ext == ".yaml" || ext == ".yml";
}

void add_case(Answers& out, std::set<std::string>& seen, const PredictModel& m, const Sample& s) {
  if (!seen.insert(s.case_string).second) return;
  out.cases.push_back(predict_case(m, s));
}

// The cases of a config or results: those of groups the model never saw are left out with a
// note (a run's peak and bandwidth cases, ops fitted elsewhere); none left is an error.
void add_cases(Answers& out, std::set<std::string>& seen, const PredictModel& m, const std::vector<Sample>& samples,
               const std::string& source) {
  std::map<std::string, std::size_t> unknown;
  const Sample* first_unknown = nullptr;
  std::size_t added = 0;
  for (auto& s : samples) {
    if (!m.group(group_key(s.kase))) {
      ++unknown[group_key(s.kase)];
      if (!first_unknown) first_unknown = &s;
      continue;
    }
    add_case(out, seen, m, s);
    ++added;
  }
  if (added == 0 && first_unknown) predict_case(m, *first_unknown);  // throws: what the model never saw
  for (auto& [key, n] : unknown)
    fmt::print(stderr, "opmeter: note: {}: {} case{} of {}, a group the model never saw: left out\n", source, n,
               n == 1 ? "" : "s", key);
}

// One CASES argument: a case string, a config, results, or a built-in pipeline.
void answer(Answers& out, std::set<std::string>& seen, const PredictModel& m, const std::string& arg) {
  std::error_code ec;
  if (fs::exists(arg, ec)) {
    if (!fs::is_directory(arg, ec) && is_yaml(arg)) {
      // Predicting reads the config; its plugins and kernels are not loaded (nothing is measured).
      Plan plan = load_config_file(arg, usual_threads(m, kHostDevice), "", ConfigCode::skip);
      for (auto& note : plan.notes) fmt::print(stderr, "opmeter: note: {}\n", note);
      std::set<std::string> in_pipelines;
      for (auto& c : pipeline::pipeline_cases(plan.pipelines)) in_pipelines.insert(c.to_string());
      std::vector<Sample> samples;
      for (auto& c : plan.cases)
        if (!in_pipelines.count(c.to_string())) samples.push_back(sample_of(c));
      add_cases(out, seen, m, samples, arg);
      for (auto& p : plan.pipelines) out.pipelines.push_back(predict_pipeline(m, p.pipeline, p.like));
      return;
    }
    auto format = fs::is_directory(arg, ec) ? ResultsFormat::results_json : detect_results_format(arg);
    if (format != ResultsFormat::results_json && format != ResultsFormat::results_jsonl)
      throw UsageError(fmt::format("{}: is {}; expected a case string, a config (.yaml), opmeter results or a built-in "
                                   "pipeline",
                                   arg, describe(format)));
    ResultSet rs = load_results(arg);
    auto samples = samples_from(rs);
    if (samples.empty()) fmt::print(stderr, "opmeter: note: {} has no measured (ok) case\n", arg);
    add_cases(out, seen, m, samples, arg);
    return;
  }
  const auto ext = fs::path(arg).extension().string();
  if (is_yaml(arg) || ext == ".json" || ext == ".jsonl")
    throw UsageError(fmt::format("{}: no such file", arg));
  if (arg.find('/') != std::string::npos) {
    Case c = parse_case(arg);
    validate_case(c);  // what `run` refuses (M=0, a missing parameter) is not predicted either
    add_case(out, seen, m, sample_of(c));
    return;
  }
  auto spec = parse_pipeline_spec(arg);
  if (!spec) {
    std::vector<std::string> names;
    for (auto* def : pipeline::Registry::global().all()) names.push_back(def->name);
    throw UsageError(fmt::format("{}: no such file, not a case string (op/impl/dtype/params/settings) and no built-in "
                                 "pipeline (pipelines: {})",
                                 arg, fmt::join(names, ", ")));
  }
  pipeline::Pipeline p = pipeline::build(spec->name, spec->params, spec->dtype);
  Case like;
  like.device = spec->device;
  // Threads of the pipeline's own ops' training cases: a GEMM sweep at another count does not outvote them.
  like.threads = spec->threads ? *spec->threads : (like.on_host() ? threads_for_pipeline(m, p, like.device) : 1);
  out.pipelines.push_back(predict_pipeline(m, p, like));
}

// Measured times from --measured: per case, and the pipelines' totals.
void attach_measured(Answers& out, const std::string& path) {
  ResultSet rs = load_results(path);
  std::map<std::string, double> times;
  std::vector<std::string> cases;
  for (auto& s : samples_from(rs)) {
    times[s.case_string] = s.time_s;  // merged or resumed runs: the last record is the time
    cases.push_back(s.case_string);
  }
  if (auto repeated = repeated_cases(cases); !repeated.empty())
    fmt::print(stderr, "opmeter: note: --measured {}: {}; each is measured by its last record\n", path, repeated);
  for (auto& p : out.cases)
    if (!p.measured_s)
      if (auto it = times.find(p.case_string); it != times.end()) p.measured_s = it->second;
  std::error_code ec;
  fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
  auto summaries = pipeline::read_pipelines(dir.empty() ? "." : dir.string());
  for (auto& p : out.pipelines) {
    p.measured_s = measured_total(p, summaries);
    for (auto& l : p.layers)
      if (auto it = times.find(l.prediction.case_string); it != times.end()) l.prediction.measured_s = it->second;
  }
}

std::string error_text(const Prediction& p) {
  if (!p.measured_s) return "";
  return fmt::format("{:+.1f}%", (p.time_s / *p.measured_s - 1) * 100);
}

std::string interval_text(const Prediction& p) {
  return fmt::format("{} .. {}{}", human_time(p.lo_s), human_time(p.hi_s), p.extrapolated.empty() ? "" : " (extrapolated)");
}

// The model a prediction comes from, and the held-out ratio its output was scaled by.
std::string model_text(const Prediction& p) {
  return p.ratio == 1 ? std::string(to_string(p.model)) : fmt::format("{} ×{:.3g}", to_string(p.model), p.ratio);
}

std::string answers_markdown(const Answers& a) {
  std::string out;
  if (!a.cases.empty()) {
    out += "| case | model | predicted | 90% interval | measured | error |\n|---|---|---:|---|---:|---:|\n";
    for (auto& p : a.cases)
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", p.case_string, model_text(p), human_time(p.time_s),
                         interval_text(p), p.measured_s ? human_time(*p.measured_s) : "", error_text(p));
    out += measured_error_summary(a.cases, a.trained);
  }
  for (auto& pp : a.pipelines) {
    std::vector<std::string> params;
    for (auto& [k, v] : pp.params) params.push_back(k + "=" + v);
    out += fmt::format("{}## Pipeline {} ({}{} on {})\n\n", out.empty() ? "" : "\n", pp.name,
                       params.empty() ? "" : fmt::format("{}, ", fmt::join(params, ", ")), pp.dtype, pp.device);
    out += "| layer | case | model | per call | count | total | in training |\n|---|---|---|---:|---:|---:|---|\n";
    for (auto& l : pp.layers)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", l.label, l.prediction.case_string,
                         model_text(l.prediction), human_time(l.prediction.time_s), l.count,
                         human_time(l.prediction.time_s * double(l.count)), l.in_training ? "yes" : "");
    out += fmt::format("\nPredicted total: {} (interval {} .. {})", human_time(pp.total_s), human_time(pp.lo_s),
                       human_time(pp.hi_s));
    if (pp.measured_s)
      out += fmt::format("; measured {} (prediction {:+.1f}%)", human_time(*pp.measured_s),
                         (pp.total_s / *pp.measured_s - 1) * 100);
    out += fmt::format(".\n{} of its {} distinct layer cases are in the model's training data{}.\n", pp.cases_in_training,
                       pp.distinct_cases, pp.cases_in_training == 0 ? " (none: every layer is predicted from other shapes)" : "");
  }
  return out;
}

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json by = nlohmann::json::object();
  for (auto& [k, v] : p.by_model) by[std::string(to_string(k))] = v;
  nlohmann::json j = {{"case", p.case_string}, {"group", p.group}, {"model", std::string(to_string(p.model))},
                      {"time_s", p.time_s},    {"lo_s", p.lo_s},   {"hi_s", p.hi_s},
                      {"by_model", by},        {"flops", p.flops}, {"bytes", p.bytes},
                      {"ratio", p.ratio}};  // time_s = by_model[model] x ratio
  j["measured_s"] = p.measured_s ? nlohmann::json(*p.measured_s) : nlohmann::json(nullptr);
  j["extrapolated"] = p.extrapolated;
  return j;
}

nlohmann::json answers_json(const Answers& a) {
  nlohmann::json cases = nlohmann::json::array(), pipelines = nlohmann::json::array();
  for (auto& p : a.cases) cases.push_back(prediction_json(p));
  for (auto& pp : a.pipelines) {
    nlohmann::json layers = nlohmann::json::array();
    for (auto& l : pp.layers) {
      auto j = prediction_json(l.prediction);
      j["label"] = l.label;
      j["count"] = l.count;
      j["in_training"] = l.in_training;
      layers.push_back(j);
    }
    nlohmann::json params = nlohmann::json::object();
    for (auto& [k, v] : pp.params) params[k] = v;
    pipelines.push_back({{"name", pp.name},
                         {"params", params},
                         {"dtype", pp.dtype},
                         {"device", pp.device},
                         {"total_s", pp.total_s},
                         {"lo_s", pp.lo_s},
                         {"hi_s", pp.hi_s},
                         {"measured_s", pp.measured_s ? nlohmann::json(*pp.measured_s) : nlohmann::json(nullptr)},
                         {"distinct_cases", pp.distinct_cases},
                         {"cases_in_training", pp.cases_in_training},
                         {"layers", layers}});
  }
  return {{"cases", cases}, {"pipelines", pipelines}};
}

// One row per case; a pipeline's layers follow with the pipeline's name, then its total.
std::string answers_csv(const Answers& a) {
  // ratio: the held-out median of measured / predicted that the model's output was scaled by.
  std::string out = "pipeline,label,count,case,model,ratio,predicted_s,lo_s,hi_s,measured_s\n";
  auto row = [&](const std::string& pipeline, const std::string& label, std::size_t count, const Prediction& p) {
    out += fmt::format("{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{}\n", csv_field(pipeline), csv_field(label), count,
                       csv_field(p.case_string), to_string(p.model), p.ratio, p.time_s, p.lo_s, p.hi_s,
                       p.measured_s ? fmt::format("{:.6g}", *p.measured_s) : "");
  };
  for (auto& p : a.cases) row("", "", 1, p);
  for (auto& pp : a.pipelines) {
    for (auto& l : pp.layers) row(pp.name, l.label, l.count, l.prediction);
    out += fmt::format("{},total,1,,,,{:.6g},{:.6g},{:.6g},{}\n", csv_field(pp.name), pp.total_s, pp.lo_s, pp.hi_s,
                       pp.measured_s ? fmt::format("{:.6g}", *pp.measured_s) : "");
  }
  return out;
}

// A prediction outside the training data is a guess its interval does not cover: marked, and
// said once per case.
void mark_extrapolated(const PredictModel& m, Answers& a) {
  std::map<std::string, TrainingRanges> ranges;  // by group
  std::set<std::string> warned;
  auto mark = [&](Prediction& p) {
    const GroupModel* g = m.group(p.group);
    if (!g) return;
    auto it = ranges.find(p.group);
    if (it == ranges.end()) it = ranges.emplace(p.group, training_ranges(*g)).first;
    try {
      p.extrapolated = outside_training(it->second, parse_case(p.case_string));
    } catch (const UsageError&) {
      return;  // a case string this opmeter cannot read back (a device it lacks) is not judged
    }
    if (!warned.insert(p.case_string).second) return;
    for (auto& why : p.extrapolated) fmt::print(stderr, "opmeter: WARNING: {}: {}\n", p.case_string, why);
  };
  for (auto& p : a.cases) mark(p);
  for (auto& pp : a.pipelines)
    for (auto& l : pp.layers) mark(l.prediction);
}

int answer_command(const PredictArgs& a) {
  if (!a.out.empty()) {
    check_output_file(a.out, "predict -o");
    std::vector<std::string> inputs = a.inputs;  // the model, results, configs and case strings
    if (!a.measured.empty()) inputs.push_back(a.measured);
    check_not_an_input(a.out, "predict -o", inputs);
  }
  if (a.inputs.size() < 2)
    throw UsageError(a.inputs.empty()
                         ? "predict: give a model and what to predict: opmeter predict MODEL CASES... (or predict fit, "
                           "predict plan; see opmeter predict --help)"
                         : fmt::format("predict {}: nothing to predict: give case strings, configs, results or "
                                       "pipelines after the model",
                                       a.inputs[0]));
  PredictModel m = read_model(a.inputs[0]);
  warn_other_machine(m, a.inputs[0]);
  Answers out;
  for (auto& g : m.groups)
    for (auto& p : g.points) out.trained.insert(p.case_string);
  std::set<std::string> seen;
  for (std::size_t i = 1; i < a.inputs.size(); ++i) answer(out, seen, m, a.inputs[i]);
  if (!a.measured.empty()) attach_measured(out, a.measured);
  mark_extrapolated(m, out);
  for (auto& pp : out.pipelines)
    for (auto& note : pp.notes) fmt::print(stderr, "opmeter: note: pipeline {}: {}\n", pp.name, note);
  std::string text = a.format == "json" ? dump_json(answers_json(out), 2) + "\n"
                     : a.format == "csv" ? answers_csv(out)
                                         : answers_markdown(out);
  if (a.out.empty()) fmt::print("{}", text);
  else write_output(a.out, text);
  return 0;
}

// --- predict plan -----------------------------------------------------------------------------

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

std::string plan_yaml(const SweepPlan& plan, const Plan& sweep, const std::string& config, const std::string& model) {
  std::string out = fmt::format(
      "# opmeter predict plan: {} of the {} cases of {} not yet in {}, chosen for what they teach the model;\n"
      "# about {:.1f} s of measuring (budget {:.0f} s). Run: opmeter run THIS_FILE, then predict fit again with "
      "the new results.\n",
      plan.chosen.size(), plan.candidates, config, model, plan.cost_s, plan.budget_s);
  out += "name: " + yaml_quote("plan from " + config) + "\n";
  if (plan.chosen.empty()) out += "cases: []\n";
  else out += "cases:\n";
  for (auto& c : plan.chosen) out += "  - " + yaml_quote(c.case_string) + "\n";
  out += "stopping:\n";
  for (auto& setting : stopping_settings()) {
    double v = setting.get(sweep.stopping);
    if (setting.zero_is_unset && v == 0) continue;
    out += fmt::format("  {}: {}\n", setting.config_key, setting.is_integer() ? fmt::format("{}", std::llround(v)) : fmt::format("{:.6g}", v));
  }
  if (sweep.llc_bytes) out += fmt::format("llc_bytes: {}\n", sweep.llc_bytes);
  return out;
}

int plan_command(const PredictArgs& a) {
  check_output_file(a.plan_out, "predict plan -o");
  check_not_an_input(a.plan_out, "predict plan -o", {a.plan_model, a.plan_config});
  const double budget = parse_budget(a.budget);
  PredictModel m = read_model(a.plan_model);
  warn_other_machine(m, a.plan_model);
  Plan sweep = load_config_file(a.plan_config, usual_threads(m, kHostDevice), "", ConfigCode::skip);  // read, not run
  std::vector<Sample> candidates;
  for (auto& c : sweep.cases) candidates.push_back(sample_of(c));
  if (candidates.empty()) throw UsageError(fmt::format("{}: the config has no case to plan", a.plan_config));
  SweepPlan plan = plan_sweep(m, candidates, sweep.stopping, budget);
  // An empty plan is a config `run` rejects: say why instead of writing it.
  if (plan.chosen.empty() && plan.candidates == 0)
    throw UsageError(fmt::format("{}: every case of the config is already in the model {}: nothing to plan", a.plan_config,
                                 a.plan_model));
  if (plan.chosen.empty())
    throw UsageError(fmt::format("--budget '{}' is too small for even the cheapest case: {}", a.budget,
                                 plan.notes.empty() ? "no case fits" : plan.notes.back()));
  write_output(a.plan_out, plan_yaml(plan, sweep, a.plan_config, a.plan_model));
  fmt::print("{:<60} {:>10} {:>9} {:>11}\n", "case", "predicted", "cost", "uncertainty");
  for (auto& c : plan.chosen)
    fmt::print("{:<60} {:>10} {:>8.2f}s {:>11.3f}{}\n", c.case_string, human_time(c.predicted_s), c.cost_s, c.uncertainty,
               c.unseen_group ? "  (group new to the model)" : "");
  for (auto& note : plan.notes) fmt::print(stderr, "opmeter: note: {}\n", note);
  const double share = plan.candidates ? double(plan.chosen.size()) / double(plan.candidates) : 0;
  fmt::print(stderr,
             "opmeter: {} of {} cases ({:.1f}% of the sweep's {} unmeasured; {} already in the model), about {:.1f} s of the "
             "{:.0f} s budget (measuring them all: about {:.0f} s) -> {}\n",
             plan.chosen.size(), plan.sweep_cases, share * 100, plan.candidates, plan.measured, plan.cost_s, budget,
             plan.sweep_cost_s, a.plan_out);
  return 0;
}

}  // namespace

int predict_command(const PredictArgs& a) {
  if (a.fit && a.fit->parsed()) return fit_command(a);
  if (a.plan && a.plan->parsed()) return plan_command(a);
  return answer_command(a);
}

}  // namespace opmeter
