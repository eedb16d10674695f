// `opmeter predict` end to end: a tiny sweep measured by the test binary, fitted, predicted,
// planned; and every bad input with its message and exit code 2.
#include <gtest/gtest.h>

#include <functional>

#include <algorithm>
#include <fstream>
#include <tuple>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Ceilings in the ballpark of one core, so the roofline has something to say.
const char* kProfile = R"({"schema": "opmeter-calibration/1", "threads": 1, "device": "cpu",
  "peak_gflops": {"fp32": 50.0, "bf16": 50.0}, "bandwidth": {"memory_gbps": 10.0}, "context": {}})";

// 12 small oneDNN GEMMs, and a two-layer pipeline of GEMMs (its pipelines.json for --measured).
const char* kSweep = R"(ops: [gemm]
impls: [onednn]
threads: 1
stopping: {samples: 3, warmup: 1}
shapes:
  - name: custom
    shapes: [[8, 8, 8], [16, 8, 8], [8, 16, 32], [32, 32, 32], [16, 48, 16], [48, 16, 64],
             [64, 64, 64], [24, 40, 56], [64, 8, 128], [128, 32, 16], [96, 96, 32], [40, 128, 72]]
pipelines:
  - name: mlp
    layers:
      - {label: fc1, op: gemm, M: 8, N: 64, K: 32}
      - {label: fc2, op: gemm, M: 8, N: 32, K: 64, count: 2}
end_to_end: false
)";

struct Fixture {
  fs::path dir, profile, results, model;
  std::string fit_output;
};

// Sets or clears the `contended` flag of the results file's cases whose name `pick` takes; how
// many it flagged.
template <class Pick>
int flag_contended(const fs::path& results_json, bool on, Pick pick) {
  auto j = nlohmann::json::parse(std::ifstream(results_json));
  int flagged = 0;
  for (auto& b : j["benchmarks"]) {
    if (!b.contains("flags") || !b["flags"].is_array()) continue;  // google-benchmark's aggregate rows
    nlohmann::json kept = nlohmann::json::array();
    for (auto& f : b["flags"])
      if (f != "contended") kept.push_back(f);
    if (on && pick(b["name"].get<std::string>())) {
      kept.push_back("contended");
      ++flagged;
    }
    b["flags"] = kept;
  }
  std::ofstream(results_json) << j.dump();
  return flagged;
}

// Measured and fitted once per test process (a few seconds); its own folder, since ctest runs
// the tests of this file as separate processes side by side.
const Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.dir = temp_dir("predict_" + std::to_string(getpid()));
    x.profile = write(x.dir, "calibration.json", kProfile);
    auto cfg = write(x.dir, "sweep.yaml", kSweep);
    x.results = x.dir / "sweep";
    auto run = cli("run " + cfg.string() + " --calibration " + x.profile.string() + " --no-report --out " +
                   x.results.string());
    EXPECT_EQ(run.code, 0) << run.text;
    // A busy test machine flags some cases contended, and fit leaves those out: the tests below
    // count every case, so the flags go (ContendedResultsAreLeftOut puts some back).
    flag_contended(x.results / "results.json", false, [](const std::string&) { return false; });
    x.model = x.dir / "model.json";
    auto fit = cli("predict fit " + x.results.string() + " -o " + x.model.string() + " --calibration " +
                   x.profile.string());
    EXPECT_EQ(fit.code, 0) << fit.text;
    x.fit_output = fit.text;
    return x;
  }();
  return f;
}

}  // namespace

TEST(CliPredict, FitWritesTheModelAndItsReportAndPrintsTheErrors) {
  const auto& f = fixture();
  ASSERT_TRUE(fs::exists(f.model)) << f.fit_output;
  EXPECT_TRUE(fs::exists(f.dir / "model.html"));
  EXPECT_TRUE(fs::exists(f.dir / "model.md"));
  auto j = nlohmann::json::parse(std::ifstream(f.model));
  EXPECT_EQ(j["schema"], "opmeter-predict-model/2");
  ASSERT_EQ(j["groups"].size(), 1u) << f.fit_output;
  EXPECT_EQ(j["groups"][0]["key"], "cpu/gemm/onednn/fp32");
  EXPECT_EQ(j["groups"][0]["points"].size(), 14u);  // and the pipeline's two layers: shapes of the same group
  EXPECT_TRUE(has(f.fit_output, "cpu/gemm/onednn/fp32")) << f.fit_output;
  EXPECT_TRUE(has(f.fit_output, "roofline med/p90 cov")) << f.fit_output;
  EXPECT_TRUE(has(f.fit_output, "* best model")) << f.fit_output;
  EXPECT_TRUE(has(f.fit_output, "worst held-out cases")) << f.fit_output;
  EXPECT_TRUE(has(f.fit_output, "5-fold cross-validation")) << f.fit_output;
  EXPECT_FALSE(has(f.fit_output, "WARNING")) << f.fit_output;

  auto quiet = cli("predict fit " + f.results.string() + " -o " + (f.dir / "bare.json").string() + " --no-report --folds 3 "
                   "--calibration " + f.profile.string());
  EXPECT_EQ(quiet.code, 0) << quiet.text;
  EXPECT_TRUE(fs::exists(f.dir / "bare.json"));
  EXPECT_FALSE(fs::exists(f.dir / "bare.html"));
}

// Results measured while other processes took the CPUs do not train the model; the output and
// the model file say how many were left out.
TEST(CliPredict, ContendedResultsAreLeftOutOfTheFitWithANote) {
  const auto& f = fixture();
  auto dir = f.dir / "contended";
  fs::create_directories(dir);
  fs::copy_file(f.results / "results.json", dir / "results.json", fs::copy_options::overwrite_existing);
  const int flagged = flag_contended(dir / "results.json", true, [](const std::string& name) {
    return name.find("M=8,N=8,K=8/") != std::string::npos || name.find("M=64,N=64,K=64/") != std::string::npos;
  });
  ASSERT_EQ(flagged, 2);
  auto model = dir / "model.json";
  auto fit =
      cli("predict fit " + dir.string() + " -o " + model.string() + " --no-report --calibration " + f.profile.string());
  ASSERT_EQ(fit.code, 0) << fit.text;
  EXPECT_TRUE(has(fit.text,
                  "2 results flagged contended (measured while other processes took the CPUs) left out of "
                  "the training data"))
      << fit.text;
  auto j = nlohmann::json::parse(std::ifstream(model));
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["points"].size(), 12u);  // the fixture's 14 less the 2
  for (auto& p : j["groups"][0]["points"]) {
    EXPECT_FALSE(has(p["case"].get<std::string>(), "M=8,N=8,K=8/"));
    EXPECT_FALSE(has(p["case"].get<std::string>(), "M=64,N=64,K=64/"));
  }
  EXPECT_TRUE(has(j["notes"].dump(), "2 results flagged contended")) << j["notes"].dump();
}

// The probe of the README, item 6: when too few cases are left for the folds, the error counts
// the contended results that were left out (the note that says so comes only with a model).
TEST(CliPredict, TooFewCasesSaysHowManyWereLeftOutAsContended) {
  const auto& f = fixture();
  auto dir = f.dir / "mostly_contended";
  fs::create_directories(dir);
  fs::copy_file(f.results / "results.json", dir / "results.json", fs::copy_options::overwrite_existing);
  int kept = 0;  // the first three cases stay: fewer than --folds 5 needs
  const int flagged = flag_contended(dir / "results.json", true, [&](const std::string&) { return ++kept > 3; });
  ASSERT_EQ(flagged, 11);
  auto fit = cli("predict fit " + dir.string() + " -o " + (dir / "model.json").string() +
                 " --no-report --calibration " + f.profile.string());
  EXPECT_EQ(fit.code, 2) << fit.text;
  EXPECT_TRUE(has(fit.text,
                  "cpu/gemm/onednn/fp32 (3 cases); besides these, 11 results flagged contended (measured "
                  "while other processes took the CPUs) were left out: measure them again on a quiet machine"))
      << fit.text;
  EXPECT_FALSE(fs::exists(dir / "model.json"));
}

TEST(CliPredict, PredictsACaseAConfigAndResults) {
  const auto& f = fixture();
  auto one = cli("predict " + f.model.string() + " gemm/onednn/fp32/M=20,N=20,K=20/threads=1");
  ASSERT_EQ(one.code, 0) << one.text;
  EXPECT_TRUE(has(one.text, "| gemm/onednn/fp32/M=20,N=20,K=20/threads=1 |")) << one.text;
  EXPECT_TRUE(has(one.text, "interval")) << one.text;
  EXPECT_FALSE(has(one.text, "WARNING")) << one.text;  // fitted here

  auto cfg = write(f.dir, "more.yaml", "ops: [gemm]\nimpls: [onednn]\nthreads: 1\nshapes: [{name: custom, shapes: "
                                       "[[100, 100, 100], [12, 200, 30]]}]\n");
  auto json = cli("predict " + f.model.string() + " " + cfg.string() + " --format json");
  ASSERT_EQ(json.code, 0) << json.text;
  auto j = nlohmann::json::parse(json.text.substr(json.text.find('{')));
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["case"], "gemm/onednn/fp32/M=100,N=100,K=100/threads=1");
  EXPECT_GT(j["cases"][0]["time_s"].get<double>(), 0);
  EXPECT_LE(j["cases"][0]["lo_s"].get<double>(), j["cases"][0]["time_s"].get<double>());
  EXPECT_EQ(j["cases"][0]["by_model"].size(), 4u);

  auto measured = cli("predict " + f.model.string() + " " + f.results.string() + " --format csv -o " +
                      (f.dir / "p.csv").string());
  ASSERT_EQ(measured.code, 0) << measured.text;
  auto csv = slurp(f.dir / "p.csv");
  EXPECT_TRUE(has(csv, "pipeline,label,count,case,model,ratio,predicted_s,lo_s,hi_s,measured_s")) << csv;
  EXPECT_EQ(line_count(f.dir / "p.csv"), 15u) << csv;  // the header and the 14 measured cases

  auto md = cli("predict " + f.model.string() + " " + f.results.string());
  ASSERT_EQ(md.code, 0) << md.text;
  EXPECT_TRUE(has(md.text, "Error against the measured times")) << md.text;
  // The printed predictions are the best model's output scaled by its held-out ratio, and the
  // output says so: the model column gives the factor, the summary which errors are unscaled.
  EXPECT_TRUE(has(md.text,
                  "the predictions (each group's best model scaled by its held-out median of measured / "
                  "predicted, the × in the model column) median "))
      << md.text;
  EXPECT_TRUE(has(md.text, "; each model unscaled: ")) << md.text;
  const double ratio = j["cases"][0]["ratio"].get<double>();
  const std::string best = j["cases"][0]["model"].get<std::string>();
  EXPECT_NEAR(j["cases"][0]["time_s"].get<double>(), j["cases"][0]["by_model"][best].get<double>() * ratio,
              1e-12 * j["cases"][0]["time_s"].get<double>());
  if (ratio != 1) {
    EXPECT_TRUE(has(md.text, fmt::format("| {} ×{:.3g} |", best, ratio))) << md.text;
  }
}

TEST(CliPredict, PredictsAPipelineBesideItsMeasuredTotal) {
  const auto& f = fixture();
  auto out = cli("predict " + f.model.string() + " " + (f.dir / "sweep.yaml").string() + " --measured " + f.results.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "## Pipeline mlp")) << out.text;
  EXPECT_TRUE(has(out.text, "| fc2 | gemm/onednn/fp32/M=8,N=32,K=64/threads=1 |")) << out.text;
  EXPECT_TRUE(has(out.text, "Predicted total:")) << out.text;
  EXPECT_TRUE(has(out.text, "; measured ")) << out.text;
  EXPECT_TRUE(has(out.text, "2 of its 2 distinct layer cases are in the model's training data")) << out.text;
}

// A results file holding a case twice (merged or resumed runs): the last record is its measured
// time, and a note on stderr says so, naming it.
TEST(CliPredict, MeasuredCasesRecordedTwiceAreNamedInANote) {
  const auto& f = fixture();
  auto lines = slurp(f.results / "results.jsonl");
  const std::string first = lines.substr(0, lines.find('\n') + 1);
  auto twice = write(f.dir, "twice.jsonl", lines + first);
  const std::string kase = "gemm/onednn/fp32/M=8,N=8,K=8/threads=1";
  auto out = cli("predict " + f.model.string() + " " + kase + " --measured " + twice.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "1 case appears more than once (merged or resumed runs): gemm/")) << out.text;
  EXPECT_TRUE(has(out.text, "; each is measured by its last record")) << out.text;
  auto once = cli("predict " + f.model.string() + " " + kase + " --measured " + f.results.string());
  EXPECT_FALSE(has(once.text, "more than once")) << once.text;
}

TEST(CliPredict, PlanPicksCasesWithinTheBudgetAsAConfig) {
  const auto& f = fixture();
  auto cfg = write(f.dir, "big.yaml", "ops: [gemm]\nimpls: [onednn]\nthreads: 1\nstopping: {samples: 3, warmup: 1}\n"
                                      "shapes: [{name: pow2, min_power: 3, max_power: 7}]\n");
  auto plan = f.dir / "plan.yaml";
  auto out = cli("predict plan " + f.model.string() + " " + cfg.string() + " --budget 2s -o " + plan.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "% of the sweep")) << out.text;
  auto text = slurp(plan);
  EXPECT_TRUE(has(text, "cases:\n  - \"gemm/onednn/fp32/")) << text;
  EXPECT_TRUE(has(text, "stopping:")) << text;
  // The plan is a config opmeter runs.
  auto dry = cli("run --dry-run " + plan.string());
  ASSERT_EQ(dry.code, 0) << dry.text << text;
  EXPECT_TRUE(has(dry.text, "gemm/onednn/fp32/")) << dry.text;
  auto again = cli("predict plan " + f.model.string() + " " + cfg.string() + " --budget 2 -o " + (f.dir / "plan2.yaml").string());
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_EQ(slurp(f.dir / "plan2.yaml"), text);  // deterministic
}

TEST(CliPredict, BadInputIsAClearMessageAndExitCode2) {
  const auto& f = fixture();
  const std::string model = f.model.string();
  struct Bad {
    std::string args, expect;
  };
  auto not_model = write(f.dir, "pipelines.json", R"({"schema": "opmeter-pipelines/1", "pipelines": []})");
  std::vector<Bad> bad = {
      {"predict fit " + f.results.string() + " -o x.json --folds 20 --calibration " + f.profile.string(),
       "cpu/gemm/onednn/fp32 (14 cases)"},
      {"predict fit /nonexistent/results -o x.json", "/nonexistent/results"},
      {"predict fit " + f.results.string() + " -o " + (f.results / "results.json").string(),
       "write the output elsewhere"},
      {"predict fit " + f.results.string() + " -o x.json --calibration /nonexistent.json", "/nonexistent.json"},
      {"predict " + f.profile.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1", "calibration profile"},
      {"predict " + not_model.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1", "opmeter-pipelines/1"},
      {"predict " + f.results.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1", "is a directory"},
      {"predict " + (f.results / "results.json").string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1", "not a model"},
      {"predict /nonexistent/model.json gemm/onednn/fp32/M=8,N=8,K=8/threads=1", "cannot open"},
      {"predict " + model + " gemm/onednn/bf16/M=8,N=8,K=8/threads=1", "never saw dtype bf16"},
      {"predict " + model + " gemm/openblas/fp32/M=8,N=8,K=8/threads=1", "never saw impl openblas"},
      {"predict " + model + " relu/onednn/fp32/batch=1,seq=4,hidden=64/threads=1", "never saw op relu"},
      {"predict " + model + " resnet18", "never saw op"},
      {"predict " + model + " nonsense", "no built-in pipeline"},
      {"predict " + model + " /nonexistent/more.yaml", "/nonexistent/more.yaml: no such file"},
      {"predict " + model + " gemm/onednn/fp32/M=8/threads=1", "gemm"},
      {"predict " + model, "nothing to predict"},
      {"predict plan " + model + " " + (f.dir / "sweep.yaml").string() + " --budget 5x", "--budget '5x'"},
      {"predict plan " + model + " /nonexistent.yaml --budget 60s", "/nonexistent.yaml"},
      {"predict fit " + f.results.string() + " -o x.json --seed -5", "must be a non-negative integer"},
      {"predict plan " + f.profile.string() + " " + (f.dir / "sweep.yaml").string() + " --budget 60s",
       "calibration profile"},
      // -o onto what the command reads: the model, the results predicted, --measured, the config planned.
      {"predict " + model + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1 -o " + model, "write the output elsewhere"},
      {"predict " + model + " " + f.results.string() + " -o " + (f.results / "results.json").string(),
       "write the output elsewhere"},
      {"predict " + model + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1 --measured " + f.results.string() + " -o " +
           (f.results / "results.json").string(),
       "write the output elsewhere"},
      {"predict plan " + model + " " + (f.dir / "sweep.yaml").string() + " --budget 60s -o " + model,
       "write the output elsewhere"},
      {"predict plan " + model + " " + (f.dir / "sweep.yaml").string() + " --budget 60s -o " +
           (f.dir / "sweep.yaml").string(),
       "write the output elsewhere"},
      {"predict fit " + f.results.string() + " -o " + f.profile.string() + " --calibration " + f.profile.string(),
       "write the output elsewhere"},
  };
  for (auto& b : bad) {
    auto out = cli(b.args);
    EXPECT_EQ(out.code, 2) << b.args << "\n" << out.text;
    EXPECT_TRUE(has(out.text, b.expect)) << b.args << "\n" << out.text;
    EXPECT_FALSE(has(out.text, "internal error")) << b.args << "\n" << out.text;
  }
}

TEST(CliPredict, FitWithoutCeilingsSaysHowToGiveThem) {
  const auto& f = fixture();
  // The results without the ceilings they were compared with: a journal with the figures removed.
  auto bare = temp_dir("predict_bare");
  std::ifstream in(f.results / "results.jsonl");
  std::ofstream out(bare / "results.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    for (auto& key : {"peak_gflops", "bandwidth_gbps", "pct_peak", "efficiency"}) j.erase(key);
    out << j.dump() << "\n";
  }
  out.close();
  auto fit = cli("predict fit " + bare.string() + " -o " + (bare / "m.json").string());
  EXPECT_EQ(fit.code, 2) << fit.text;
  EXPECT_TRUE(has(fit.text, "--calibration")) << fit.text;
  EXPECT_TRUE(has(fit.text, "device cpu")) << fit.text;
}

TEST(CliPredict, AModelFittedOnAnotherMachineWarnsLikeCompare) {
  const auto& f = fixture();
  auto j = nlohmann::json::parse(std::ifstream(f.model));
  j["context"]["cpu"]["model"] = "Some Other CPU 9000";
  auto other = f.dir / "other.json";
  std::ofstream(other) << j.dump();
  auto out = cli("predict " + other.string() + " gemm/onednn/fp32/M=20,N=20,K=20/threads=1");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "WARNING: model " + other.string() + " was fitted on another machine")) << out.text;
  EXPECT_TRUE(has(out.text, "cpu.model differs: model 'Some Other CPU 9000'")) << out.text;
}

TEST(CliPredict, CasesOfAConfigTheModelNeverSawAreLeftOutWithANote) {
  const auto& f = fixture();
  auto mixed = write(f.dir, "mixed.yaml", "ops: [gemm, relu]\nimpls: [onednn, opmeter]\nthreads: 1\nbatch: [1]\nseq: [4]\n"
                                          "hidden: [64]\nshapes: [{name: custom, shapes: [[100, 100, 100]]}]\n");
  auto out = cli("predict " + f.model.string() + " " + mixed.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "| gemm/onednn/fp32/M=100,N=100,K=100/threads=1 |")) << out.text;
  EXPECT_TRUE(has(out.text, "cpu/relu/opmeter/fp32, a group the model never saw: left out")) << out.text;
  auto only = write(f.dir, "only.yaml", "ops: [relu]\nimpls: [opmeter]\nthreads: 1\nbatch: [1]\nseq: [4]\nhidden: [64]\n");
  auto none = cli("predict " + f.model.string() + " " + only.string());
  EXPECT_EQ(none.code, 2) << none.text;
  EXPECT_TRUE(has(none.text, "never saw op relu")) << none.text;
}

// Issue 27 item 11: predict refuses the case strings run refuses.
TEST(CliPredict, CaseStringsRunRefusesAreRefused) {
  const auto& f = fixture();
  for (const char* kase : {"gemm/onednn/fp32/M=0,N=8,K=8/threads=1", "gemm/onednn/fp32/M=-5,N=8,K=8/threads=1"}) {
    auto out = cli("predict " + f.model.string() + " " + kase);
    EXPECT_EQ(out.code, 2) << kase << "\n" << out.text;
    EXPECT_TRUE(has(out.text, "out of range: expected 1..1048576")) << kase << "\n" << out.text;
  }
}

// Issue 27 item 11: a case far outside the training data says so, per parameter, with the range.
TEST(CliPredict, ACaseOutsideTheTrainingDataIsFlaggedExtrapolated) {
  const auto& f = fixture();
  auto out = cli("predict " + f.model.string() + " gemm/onednn/fp32/M=900,N=8,K=8/threads=4");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "M=900 is outside the training range 8..128: extrapolated")) << out.text;
  EXPECT_TRUE(has(out.text, "threads=4 is outside the training data, which has only threads=1: extrapolated")) << out.text;
  EXPECT_TRUE(has(out.text, "(extrapolated) |")) << out.text;
  EXPECT_FALSE(has(out.text, "N=8 is outside")) << out.text;
  auto inside = cli("predict " + f.model.string() + " gemm/onednn/fp32/M=20,N=20,K=20/threads=1");
  ASSERT_EQ(inside.code, 0) << inside.text;
  EXPECT_FALSE(has(inside.text, "extrapolated")) << inside.text;
}

// Issue 27 item 11: a truncated or tampered model is a one-line exit-2 message, never a stack trace.
TEST(CliPredict, ATruncatedOrDamagedModelIsAOneLineError) {
  const auto& f = fixture();
  const std::string text = slurp(f.model);
  auto truncated = write(f.dir, "truncated.json", text.substr(0, text.size() / 2));
  auto out = cli("predict " + truncated.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_TRUE(has(out.text, "invalid JSON at byte")) << out.text;
  EXPECT_FALSE(has(out.text, "results file")) << out.text;

  // Trees that no longer fit the group's features (an edited feature count).
  auto j = nlohmann::json::parse(text);
  bool tampered = false;
  for (auto& g : j["groups"])
    if (g["boosted"].is_object()) {
      g["boosted"]["xgboost"]["learner"]["learner_model_param"]["num_feature"] = "3";
      tampered = true;
    }
  ASSERT_TRUE(tampered);
  auto damaged = f.dir / "damaged.json";
  std::ofstream(damaged) << j.dump();
  auto bad = cli("predict " + damaged.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1");
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_TRUE(has(bad.text, "model file " + damaged.string() + " is damaged: ") ||
              has(bad.text, "model " + damaged.string() + ": "))
      << bad.text;
  EXPECT_EQ(std::count(bad.text.begin(), bad.text.end(), '\n'), 1) << bad.text;  // one line, no stack trace

  // A tree xgboost refuses (its message carries a stack trace), and ones it would read out of
  // bounds with (a split on a feature the rows do not have, a child past the tree) or loop in (a
  // child pointing back at the root).
  auto tree_of = [](nlohmann::json& m) -> nlohmann::json& {
    for (auto& g : m["groups"])
      if (g["boosted"].is_object()) return g["boosted"]["xgboost"]["learner"]["gradient_booster"]["model"]["trees"][0];
    throw std::runtime_error("no boosted group");
  };
  auto cut = nlohmann::json::parse(text);
  tree_of(cut)["left_children"] = nlohmann::json::array({1});
  auto split = nlohmann::json::parse(text);
  for (auto& f : tree_of(split)["split_indices"]) f = 999999;
  auto past = nlohmann::json::parse(text), back = nlohmann::json::parse(text);
  for (auto& c : tree_of(past)["left_children"]) c = 99999;
  for (auto& c : tree_of(back)["left_children"]) c = 0;
  auto nodes = tree_of(back)["left_children"].size();
  ASSERT_GT(nodes, 1u) << "the fixture's first tree is a single leaf";
  for (auto& [name, edited, expect] :
       {std::tuple{"cut.json", cut, std::string("tree 0 has no matching left_children and right_children")},
        std::tuple{"split.json", split, std::string("splits on feature 999999 of ")},
        std::tuple{"past.json", past, std::string("tree 0 node 0: children 99999 and ")},
        std::tuple{"back.json", back, std::string("tree 0 node 0: children 0 and ")}}) {
    auto path = f.dir / name;
    std::ofstream(path) << edited.dump();
    auto out = cli("predict " + path.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1");
    EXPECT_EQ(out.code, 2) << name << "\n" << out.text;
    EXPECT_TRUE(has(out.text, expect)) << name << "\n" << out.text;
    EXPECT_EQ(std::count(out.text.begin(), out.text.end(), '\n'), 1) << name << "\n" << out.text;
  }

  // Values no fit makes: negative ratios, folds out of range, a zero efficiency, a huge overhead.
  auto edit = [&](const std::function<void(nlohmann::json&)>& change) {
    auto m = nlohmann::json::parse(text);
    change(m);
    return m;
  };
  for (auto& [name, edited, expect] : std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"ratio.json", edit([](auto& m) { m["groups"][0]["cv"]["analytic"]["median_ratio"] = -5; }),
            "'median_ratio' must be a positive ratio, got -5"},
           {"interval.json", edit([](auto& m) { m["groups"][0]["cv"]["analytic"]["lo"] = 1e9; }), "is above hi"},
           {"folds.json", edit([](auto& m) { m["folds"] = -3; }), "folds -3: a fitted model's cross-validation"},
           {"eff.json", edit([](auto& m) { m["groups"][0]["analytic"]["constants"]["compute_eff"] = 0; }),
            "'compute_eff' must be above 0"},
           {"overhead.json", edit([](auto& m) { m["groups"][0]["analytic"]["constants"]["overhead_s"] = 1e308; }),
            "'overhead_s' 1e+308 is more than 1000 s a call"}}) {
    auto path = f.dir / name;
    std::ofstream(path) << edited.dump();
    auto out = cli("predict " + path.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1");
    EXPECT_EQ(out.code, 2) << name << "\n" << out.text;
    EXPECT_TRUE(has(out.text, expect)) << name << "\n" << out.text;
  }
}

// A model or a config is one file read: an output named results.json beside it is not one.
TEST(CliPredict, AnOutputBesideTheModelIsNotAnInput) {
  const auto& f = fixture();
  const auto out = f.model.parent_path() / "results.json";
  std::filesystem::remove(out);
  auto r = cli("predict " + f.model.string() + " gemm/onednn/fp32/M=8,N=8,K=8/threads=1 -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_TRUE(std::filesystem::exists(out));
  std::filesystem::remove(out);
}

// Issue 27 item 11: a budget no case fits in is refused, not written as `cases: []`; a budget is a
// decimal number and a unit.
TEST(CliPredict, PlanRefusesABudgetTooSmallOrNotDecimal) {
  const auto& f = fixture();
  auto cfg = write(f.dir, "tiny.yaml", "ops: [gemm]\nimpls: [onednn]\nthreads: 1\nstopping: {samples: 3, warmup: 1}\n"
                                       "shapes: [{name: pow2, min_power: 3, max_power: 5}]\n");
  auto plan = f.dir / "tiny-plan.yaml";
  auto out = cli("predict plan " + f.model.string() + " " + cfg.string() + " --budget 1e-9s -o " + plan.string());
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_TRUE(has(out.text, "--budget '1e-9s' is too small for even the cheapest case")) << out.text;
  EXPECT_FALSE(fs::exists(plan));
  auto hex = cli("predict plan " + f.model.string() + " " + cfg.string() + " --budget 0x10s -o " + plan.string());
  EXPECT_EQ(hex.code, 2) << hex.text;
  EXPECT_TRUE(has(hex.text, "--budget '0x10s': not a decimal number")) << hex.text;
  EXPECT_FALSE(fs::exists(plan));
  // Nothing left to measure is said, not written as an empty plan either.
  auto done = cli("predict plan " + f.model.string() + " " + (f.dir / "sweep.yaml").string() + " --budget 60s -o " +
                  plan.string());
  EXPECT_EQ(done.code, 2) << done.text;
  EXPECT_TRUE(has(done.text, "every case of the config is already in the model")) << done.text;
  EXPECT_FALSE(fs::exists(plan));
}

TEST(CliMerge, KeepsThePipelinesTotalsOfTheRunsItJoins) {
  const Fixture& f = fixture();
  const fs::path merged = f.dir / ("merged_" + std::to_string(getpid()));
  auto out = cli("merge " + f.results.string() + " -o " + merged.string());
  ASSERT_EQ(out.code, 0) << out.text;
  ASSERT_TRUE(fs::exists(merged / "pipelines.json")) << out.text;
  auto j = nlohmann::json::parse(slurp(merged / "pipelines.json"));
  auto original = nlohmann::json::parse(slurp(f.results / "pipelines.json"));
  ASSERT_EQ(j["pipelines"].size(), 1u);
  EXPECT_EQ(j["pipelines"][0]["name"], "mlp");
  EXPECT_EQ(j["pipelines"][0]["latency_s"], original["pipelines"][0]["latency_s"]);
  EXPECT_TRUE(fs::exists(merged / "summary.csv"));
  EXPECT_NE(slurp(merged / "report.md").find("mlp"), std::string::npos);
}

// The same pipeline from two machines stays two: each named by its machine in the report, the
// CSVs and the logs.
TEST(CliMerge, NamesEachPipelinesMachine) {
  const Fixture& f = fixture();
  const fs::path tree = f.dir / ("two_machines_" + std::to_string(getpid()));
  for (auto name : {"hostA", "hostB"}) {
    fs::create_directories(tree / name);
    fs::copy(f.results, tree / name, fs::copy_options::recursive);
  }
  const fs::path merged = f.dir / ("merged_two_" + std::to_string(getpid()));
  auto out = cli("merge " + tree.string() + " -o " + merged.string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto j = nlohmann::json::parse(slurp(merged / "pipelines.json"));
  ASSERT_EQ(j["pipelines"].size(), 2u);
  EXPECT_EQ(j["pipelines"][0]["machine"], "hostA");
  EXPECT_EQ(j["pipelines"][1]["machine"], "hostB");
  const auto report = slurp(merged / "report.md");
  EXPECT_NE(report.find("on hostA"), std::string::npos) << report;
  EXPECT_NE(report.find("on hostB"), std::string::npos) << report;
  const auto summary = slurp(merged / "summary.csv");
  EXPECT_NE(summary.find(",machine\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find(",hostB\n"), std::string::npos) << summary;
  EXPECT_NE(slurp(merged / "pipeline_layers.csv").find(",hostA\n"), std::string::npos);
  EXPECT_TRUE(fs::exists(merged / "pipeline-mlp-cpu-hostA.log"));
  EXPECT_TRUE(fs::exists(merged / "pipeline-mlp-cpu-hostB.log"));
  // A run's own files have no machine column.
  EXPECT_EQ(slurp(f.results / "summary.csv").find("machine"), std::string::npos);
}
