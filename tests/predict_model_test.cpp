// fit_model, the model file and predict_case on synthetic GEMM samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "opmeter/errors.hpp"
#include "predict/model.hpp"
#include "tests/predict_model_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::predict;
namespace fx = opmeter::predict::fixtures;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

const PredictModel& fitted() {
  // Never destroyed: at exit, libxgboost's own statics may go before ours, and freeing a booster
  // after them crashes.
  static PredictModel& m = *new PredictModel([] {
    auto samples = fx::gemm_samples(40);
    auto few = fx::gemm_samples(3, "onednn", "fp32", 9);  // too few for 5 folds
    samples.insert(samples.end(), few.begin(), few.end());
    return fit_model(samples, fx::ceilings_map(), {{"cpu", {{"model", "test cpu"}}}}, FitSettings{});
  }());
  return m;
}

}  // namespace

TEST(PredictModel, FitsFourModelsWithHeldOutErrorAndPicksTheBest) {
  const auto& m = fitted();
  ASSERT_EQ(m.groups.size(), 1u);
  const GroupModel& g = m.groups[0];
  EXPECT_EQ(g.key, "cpu/gemm/reference/fp32");
  EXPECT_EQ(g.points.size(), 40u);
  ASSERT_EQ(g.cv.size(), 4u);
  for (ModelKind k : kModelKinds) {
    ASSERT_TRUE(g.cv.count(k)) << to_string(k);
    EXPECT_EQ(g.cv.at(k).n, 40u);
    EXPECT_GE(g.cv.at(k).p90_ape, g.cv.at(k).median_ape);
  }
  for (auto& [k, s] : g.cv) EXPECT_LE(g.cv.at(g.best).median_ape, s.median_ape) << to_string(k);
  // The synthetic times are the roofline at 20-80% efficiency: the fitted models must beat it.
  EXPECT_LT(g.cv.at(g.best).median_ape, g.cv.at(ModelKind::roofline).median_ape);
  EXPECT_TRUE(g.boosted && g.forest);
  for (auto& p : g.points) {
    EXPECT_EQ(p.predicted_s.size(), 4u);
    EXPECT_GE(p.fold, 0);
    EXPECT_LT(p.fold, 5);
  }
  EXPECT_EQ(m.folds, 5);
  EXPECT_EQ(m.context["cpu"]["model"], "test cpu");
}

// Held out means held out: each case's cross-validated analytic prediction is that of the model
// fitted again here on the other folds' cases only (the same fit, given only them), and not that
// of the model fitted on every case, which has seen it.
TEST(PredictModel, CrossValidatedPredictionsComeFromModelsFittedWithoutTheirFold) {
  const auto& m = fitted();
  const GroupModel& g = m.groups[0];
  const auto samples = fx::gemm_samples(40);  // the group's cases, in the order the fit saw them
  ASSERT_EQ(g.points.size(), samples.size());
  std::map<int, std::size_t> fold_sizes;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    ASSERT_EQ(g.points[i].case_string, samples[i].case_string);
    ++fold_sizes[g.points[i].fold];
  }
  ASSERT_EQ(fold_sizes.size(), 5u);
  for (auto [fold, size] : fold_sizes) EXPECT_EQ(size, 8u) << fold;  // 40 cases in 5 equal folds
  const Ceilings c = fx::cpu_ceilings();
  std::size_t unlike_in_sample = 0;
  for (int fold = 0; fold < 5; ++fold) {
    std::vector<Sample> others;
    for (std::size_t i = 0; i < samples.size(); ++i)
      if (g.points[i].fold != fold) others.push_back(samples[i]);
    const AnalyticModel without = AnalyticModel::fit(others, c);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (g.points[i].fold != fold) continue;
      const double held_out = g.points[i].predicted_s.at(ModelKind::analytic);
      EXPECT_NEAR(held_out, without.predict(samples[i], c), 1e-12 * held_out) << samples[i].case_string;
      EXPECT_NEAR(g.points[i].predicted_s.at(ModelKind::roofline), roofline_time(samples[i], c), 1e-12 * held_out);
      unlike_in_sample += std::fabs(held_out - g.analytic.predict(samples[i], c)) > 1e-6 * held_out;
    }
  }
  // A fit on all 40 cases (a leak) predicts differently: most cases tell the two apart.
  EXPECT_GT(unlike_in_sample, 20u);
}

TEST(PredictModel, GroupsTooSmallForTheFoldsAreLeftOutWithANote) {
  const auto& m = fitted();
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes[0].find("cpu/gemm/onednn/fp32: 3 cases"), std::string::npos) << m.notes[0];
  EXPECT_NE(m.notes[0].find("5"), std::string::npos) << m.notes[0];
  EXPECT_EQ(m.group("cpu/gemm/onednn/fp32"), nullptr);
}

TEST(PredictModel, NoGroupWithEnoughCasesIsAUsageErrorWithTheCounts) {
  auto samples = fx::gemm_samples(3);
  auto other = fx::gemm_samples(4, "onednn");
  samples.insert(samples.end(), other.begin(), other.end());
  auto msg = message_of([&] { fit_model(samples, fx::ceilings_map(), {}, FitSettings{}); });
  EXPECT_NE(msg.find("cpu/gemm/reference/fp32 (3 cases)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu/gemm/onednn/fp32 (4 cases)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("5-fold"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--folds"), std::string::npos) << msg;
  EXPECT_NE(message_of([&] { fit_model({}, fx::ceilings_map(), {}, FitSettings{}); }), "(no UsageError)");
}

TEST(PredictModel, AGroupWithoutCeilingsNamesTheDeviceAndHowToGiveThem) {
  auto msg = message_of([&] { fit_model(fx::gemm_samples(12), {}, {}, FitSettings{}); });
  EXPECT_NE(msg.find("device cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--calibration"), std::string::npos) << msg;
  EXPECT_NE(msg.find("peak and bandwidth"), std::string::npos) << msg;
}

TEST(PredictModel, SmallGroupsKeepRooflineAndAnalyticOnly) {
  FitSettings s;
  s.folds = 3;
  auto m = fit_model(fx::gemm_samples(6), fx::ceilings_map(), {}, s);
  ASSERT_EQ(m.groups.size(), 1u);
  const auto& g = m.groups[0];
  EXPECT_EQ(g.cv.size(), 2u);
  EXPECT_TRUE(g.cv.count(ModelKind::roofline) && g.cv.count(ModelKind::analytic));
  EXPECT_FALSE(g.boosted || g.forest);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes.back().find("roofline and analytic only"), std::string::npos);
  auto p = predict_case(m, fx::gemm_sample(100, 100, 100));
  EXPECT_EQ(p.by_model.size(), 2u);
  EXPECT_GT(p.time_s, 0);
}

TEST(PredictModel, FittingIsDeterministic) {
  FitSettings s;
  auto a = fit_model(fx::gemm_samples(20), fx::ceilings_map(), {}, s);
  auto b = fit_model(fx::gemm_samples(20), fx::ceilings_map(), {}, s);
  auto ja = to_json(a), jb = to_json(b);
  ja.erase("created");
  jb.erase("created");
  EXPECT_EQ(ja, jb);
}

TEST(PredictModel, JsonRoundTripPredictsTheSame) {
  const auto& m = fitted();
  auto text = to_json(m).dump();
  PredictModel back = model_from_json(nlohmann::json::parse(text));
  ASSERT_EQ(back.groups.size(), m.groups.size());
  EXPECT_EQ(back.groups[0].best, m.groups[0].best);
  EXPECT_EQ(back.groups[0].points.size(), m.groups[0].points.size());
  EXPECT_EQ(back.notes, m.notes);
  for (auto& s : {fx::gemm_sample(64, 64, 64), fx::gemm_sample(300, 20, 500), fx::gemm_sample(1024, 1024, 8)}) {
    auto a = predict_case(m, s), b = predict_case(back, s);
    EXPECT_EQ(a.model, b.model);
    ASSERT_EQ(a.by_model.size(), b.by_model.size());
    for (auto& [k, v] : a.by_model) EXPECT_NEAR(b.by_model.at(k), v, v * 1e-6) << to_string(k);
    EXPECT_NEAR(a.lo_s, b.lo_s, a.lo_s * 1e-6);
    EXPECT_NEAR(a.hi_s, b.hi_s, a.hi_s * 1e-6);
  }
}

TEST(PredictModel, PredictionHasTheBestModelAndItsInterval) {
  const auto& m = fitted();
  auto p = predict_case(m, fx::gemm_sample(128, 256, 64));
  EXPECT_EQ(p.group, "cpu/gemm/reference/fp32");
  EXPECT_EQ(p.model, m.groups[0].best);
  // The best model's own prediction, corrected by its held-out median ratio.
  EXPECT_NEAR(p.time_s, p.by_model.at(p.model) * m.groups[0].cv.at(p.model).median_ratio, p.time_s * 1e-12);
  EXPECT_EQ(p.by_model.size(), 4u);
  EXPECT_LE(p.lo_s, p.time_s);
  EXPECT_GE(p.hi_s, p.time_s);
  EXPECT_FALSE(p.measured_s);
  auto measured = fx::gemm_sample(128, 256, 64, "reference", "fp32", 1e-4);
  EXPECT_EQ(predict_case(m, measured).measured_s, 1e-4);
}

TEST(PredictModel, ACaseOfAGroupItNeverSawNamesWhatAndListsTheGroups) {
  const auto& m = fitted();
  auto dtype = message_of([&] { predict_case(m, fx::gemm_sample(64, 64, 64, "reference", "bf16")); });
  EXPECT_NE(dtype.find("dtype bf16"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("it knows cpu/gemm/reference/fp32"), std::string::npos) << dtype;
  auto impl = message_of([&] { predict_case(m, fx::gemm_sample(64, 64, 64, "onednn")); });
  EXPECT_NE(impl.find("impl onednn"), std::string::npos) << impl;
  Sample add;
  add.case_string = "add/opmeter/fp32/n=1024/threads=1";
  add.kase = parse_case(add.case_string);
  auto op = message_of([&] { predict_case(m, add); });
  EXPECT_NE(op.find("op add"), std::string::npos) << op;
  Sample gpu = fx::gemm_sample(64, 64, 64);
  gpu.kase.device = "cuda:0";
  auto device = message_of([&] { predict_case(m, gpu); });
  EXPECT_NE(device.find("device cuda:0"), std::string::npos) << device;
}

TEST(PredictModel, OtherFilesAreNotModels) {
  auto calib = message_of([] { model_from_json({{"schema", "opmeter-calibration/1"}}); });
  EXPECT_NE(calib.find("calibration profile"), std::string::npos) << calib;
  auto other = message_of([] { model_from_json({{"schema", "opmeter-pipelines/1"}}); });
  EXPECT_NE(other.find("opmeter-pipelines/1"), std::string::npos) << other;
  EXPECT_NE(other.find(kPredictModelSchema), std::string::npos) << other;
  // A model of the schema before cache-mode groups: refused, saying to fit it again.
  auto old = to_json(fitted());
  old["schema"] = "opmeter-predict-model/1";
  auto older = message_of([&] { model_from_json(old); });
  EXPECT_NE(older.find("a model of an older opmeter (opmeter-predict-model/1), whose groups mixed hot and cold "
                       "cases: fit it again with opmeter predict fit"),
            std::string::npos)
      << older;
  auto none = message_of([] { model_from_json(nlohmann::json::array()); });
  EXPECT_NE(none.find("not a model"), std::string::npos) << none;
  auto broken = to_json(fitted());
  broken["groups"][0].erase("analytic");
  auto malformed = message_of([&] { model_from_json(broken); });
  EXPECT_NE(malformed.find("malformed"), std::string::npos) << malformed;
  auto missing = message_of([] { read_model("/nonexistent/model.json"); });
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
}

namespace {

// The roofline of the fixtures' machine, computed here: 100 GFLOP/s fp32, 20 GB/s, one thread.
double roofline_of(const Sample& s) { return std::max(s.flops / 100e9, s.bytes / 20e9); }

// Times 20 to 60 times the roofline: a roofline that underestimates every case (as it does a
// pool or a small layer, whose cost is mostly per call).
std::vector<Sample> far_above_the_roofline() {
  auto samples = fx::gemm_samples(20);
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i].time_s = roofline_of(samples[i]) * (20 + 2.0 * i);
  return samples;
}

}  // namespace

TEST(PredictModel, TheRooflineIsNeverTheBestModelEvenWithTheLowestError) {
  std::map<ModelKind, ErrorStats> cv;
  cv[ModelKind::roofline].median_ape = 0.05;
  cv[ModelKind::analytic].median_ape = 0.30;
  cv[ModelKind::boosted].median_ape = 0.20;
  cv[ModelKind::forest].median_ape = 0.25;
  EXPECT_EQ(best_model(cv), ModelKind::boosted);
  cv.erase(ModelKind::boosted);
  cv.erase(ModelKind::forest);
  EXPECT_EQ(best_model(cv), ModelKind::analytic);
}

// The probe's "Predicted total: 5.104 ms (interval 16.671 ms .. 3.618 s)": a point outside its own
// interval. Every prediction lies inside; a model file whose best is the roofline (fitted before
// it was ruled out) has its point moved by the held-out median ratio, computed here from the data.
TEST(PredictModel, APredictionLiesInsideItsIntervalWhenTheRooflineUnderestimates) {
  static auto& m = *new PredictModel(fit_model(far_above_the_roofline(), fx::ceilings_map(), {}, FitSettings{}));
  auto& g = m.groups.at(0);
  EXPECT_NE(g.best, ModelKind::roofline);
  EXPECT_GT(g.cv.at(ModelKind::roofline).lo, 1);  // the roofline's interval lies wholly above its prediction
  std::vector<Sample> cases = {fx::gemm_sample(64, 64, 64), fx::gemm_sample(300, 20, 500),
                               fx::gemm_sample(16, 512, 16)};
  for (auto& s : cases) {
    auto p = predict_case(m, s);
    EXPECT_LE(p.lo_s, p.time_s) << s.case_string;
    EXPECT_GE(p.hi_s, p.time_s) << s.case_string;
  }
  std::vector<double> ratios;
  for (auto& s : far_above_the_roofline()) ratios.push_back(s.time_s / roofline_of(s));
  std::sort(ratios.begin(), ratios.end());
  const double median = (ratios[9] + ratios[10]) / 2;  // 20 ratios 20, 22, ..., 58: 39
  EXPECT_NEAR(median, 39, 1e-9);
  auto old = m;
  old.groups[0].best = ModelKind::roofline;
  for (auto& s : cases) {
    auto p = predict_case(old, s);
    EXPECT_EQ(p.model, ModelKind::roofline);
    EXPECT_NEAR(p.by_model.at(ModelKind::roofline), roofline_of(s), roofline_of(s) * 1e-12);
    EXPECT_NEAR(p.time_s, roofline_of(s) * median, p.time_s * 1e-9) << s.case_string;
    EXPECT_LE(p.lo_s, p.time_s);
    EXPECT_GE(p.hi_s, p.time_s);
    EXPECT_GT(p.lo_s, roofline_of(s));  // the interval is the roofline's x [lo, hi], above the bound
  }
}

// Contended results are left out of the training data, unconverged ones kept; the notes say how
// many of each, in the model file too.
TEST(PredictModel, ContendedResultsAreLeftOutAndUnconvergedOnesCounted) {
  auto samples = fx::gemm_samples(12);
  auto contended = fx::gemm_samples(3, "reference", "fp32", 11);
  for (auto& s : contended) {
    s.contended = true;
    s.time_s *= 3;  // others took the CPUs
  }
  samples.insert(samples.end(), contended.begin(), contended.end());
  samples[0].unconverged = samples[1].unconverged = true;
  FitSettings few;
  few.folds = 3;
  auto m = fit_model(samples, fx::ceilings_map(), {}, few);
  ASSERT_EQ(m.groups.size(), 1u);
  EXPECT_EQ(m.groups[0].points.size(), 12u);
  for (auto& p : m.groups[0].points)
    for (auto& c : contended) EXPECT_NE(p.case_string, c.case_string);
  auto notes = to_json(model_from_json(to_json(m)))["notes"].dump();
  EXPECT_NE(notes.find("3 results flagged contended"), std::string::npos) << notes;
  EXPECT_NE(notes.find("left out of the training data"), std::string::npos) << notes;
  EXPECT_NE(notes.find("2 training cases flagged unconverged"), std::string::npos) << notes;
  // Only contended results: the error says so.
  auto msg = message_of([&] { fit_model(contended, fx::ceilings_map(), {}, few); });
  EXPECT_NE(msg.find("all 3 were contended"), std::string::npos) << msg;
}

// Hot and cold cases of one op are two groups (a warm cache can take a third of the cold time:
// one model of both fitted neither), and a case of a cache mode the model never saw is refused
// with what it lacks, not predicted from the other mode.
TEST(PredictModel, HotAndColdAreGroupsOfTheirOwn) {
  auto cold = fx::gemm_samples(12, "onednn", "fp32", 3);
  auto hot = fx::gemm_samples(12, "onednn", "fp32", 4);
  for (auto& s : hot) {
    s.kase.hot = true;
    s.case_string = s.kase.to_string();
    s.time_s /= 3;
  }
  FitSettings few;
  few.folds = 3;
  auto both = cold;
  both.insert(both.end(), hot.begin(), hot.end());
  auto m = fit_model(both, fx::ceilings_map(), {}, few);
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].key, "cpu/gemm/onednn/fp32");
  EXPECT_EQ(m.groups[1].key, "cpu/gemm/onednn/fp32/hot");
  EXPECT_EQ(m.groups[0].points.size(), 12u);
  EXPECT_EQ(m.groups[1].points.size(), 12u);

  auto cold_only = fit_model(cold, fx::ceilings_map(), {}, few);
  auto msg = message_of([&] { predict_case(cold_only, hot[0]); });
  EXPECT_NE(msg.find("the model never saw hot (warm-cache) cases of gemm/onednn/fp32 on cpu (it has no group "
                     "cpu/gemm/onednn/fp32/hot)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(message_of([&] { predict_case(cold_only, cold[0]); }), "(no UsageError)");
}
