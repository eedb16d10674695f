// The sweep planner: budgets, measuring cost, and which cases it picks first.
#include <gtest/gtest.h>

#include <array>
#include <set>

#include "opmeter/errors.hpp"
#include "predict/planner.hpp"
#include "tests/predict_model_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::predict;
namespace fx = opmeter::predict::fixtures;

namespace {

// Trained on small shapes only (16..128).
const PredictModel& small_shapes_model() {
  // Never destroyed: at exit, libxgboost's own statics may go before ours (freeing a booster crashes).
  static PredictModel& m = *new PredictModel(fit_model(fx::gemm_samples(30, "reference", "fp32", 3, 16, 128), fx::ceilings_map(), {}, {}));
  return m;
}

std::vector<Sample> sweep_of(const std::vector<std::array<int, 3>>& shapes, const std::string& impl = "reference") {
  std::vector<Sample> out;
  for (auto& s : shapes) out.push_back(fx::gemm_sample(s[0], s[1], s[2], impl));
  return out;
}

}  // namespace

TEST(PredictPlanner, BudgetsParseWithUnits) {
  EXPECT_EQ(parse_budget("90"), 90);
  EXPECT_EQ(parse_budget("60s"), 60);
  EXPECT_EQ(parse_budget("5m"), 300);
  EXPECT_EQ(parse_budget("1h"), 3600);
  EXPECT_EQ(parse_budget("1.5h"), 5400);
  for (const char* bad : {"", "abc", "5x", "-3", "0", "10 s", " 5", "nan", "inf", "0x10s", "0x10", "+5", "1e400s"}) {
    try {
      parse_budget(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--budget"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("5m"), std::string::npos) << e.what();
    }
  }
}

TEST(PredictPlanner, MeasuringCostFollowsTheStoppingSettings) {
  Stopping s;  // 10 samples, 0.5 s, 15 s timeout, 0.05 s warm-up, 1 ms per sample
  // A short call: overhead + warm-up + the minimum time.
  EXPECT_NEAR(measuring_cost(1e-6, s), kCaseOverheadS + 2e-6 + 0.05 + 0.5, 1e-9);
  // A 1 s call: 10 samples of 1 s, then the overhead's two checked calls and one warm-up call.
  EXPECT_NEAR(measuring_cost(1.0, s), kCaseOverheadS + 2 + 1 + 10, 1e-9);
  // A 10 s call: sampling stops at the timeout.
  EXPECT_NEAR(measuring_cost(10.0, s), kCaseOverheadS + 20 + 10 + 15, 1e-9);
  s.fixed_samples = 3;
  s.warmup_calls = 2;
  EXPECT_NEAR(measuring_cost(0.1, s), kCaseOverheadS + 0.2 + 0.2 + 0.3, 1e-9);
  EXPECT_LT(measuring_cost(1e-6, Stopping{}), measuring_cost(1e-2, Stopping{}) + 1e-12);
}

TEST(PredictPlanner, StaysWithinTheBudgetAndLeavesMeasuredCasesOut) {
  const auto& m = small_shapes_model();
  std::vector<Sample> sweep;
  for (int i = 0; i < 40; ++i) sweep.push_back(fx::gemm_sample(16 + 8 * i, 64 + 4 * i, 256 - 4 * i));
  const Case trained = parse_case(m.groups[0].points[0].case_string);  // already measured
  sweep.push_back(fx::gemm_sample(int(trained.get_int("M")), int(trained.get_int("N")), int(trained.get_int("K"))));
  auto plan = plan_sweep(m, sweep, Stopping{}, 10.0);
  EXPECT_EQ(plan.sweep_cases, 41u);
  EXPECT_EQ(plan.measured, 1u);
  EXPECT_EQ(plan.candidates, 40u);
  ASSERT_FALSE(plan.chosen.empty());
  double total = 0;
  std::set<std::string> names;
  for (auto& c : plan.chosen) {
    total += c.cost_s;
    EXPECT_GT(c.cost_s, 0);
    EXPECT_NE(c.case_string, m.groups[0].points[0].case_string);
    EXPECT_TRUE(names.insert(c.case_string).second) << "chosen twice: " << c.case_string;
  }
  EXPECT_LE(total, 10.0);
  EXPECT_NEAR(plan.cost_s, total, 1e-9);
  EXPECT_LT(plan.chosen.size(), 40u);
  // A budget larger than the whole sweep takes every candidate.
  EXPECT_EQ(plan_sweep(m, sweep, Stopping{}, 1e6).chosen.size(), 40u);
}

TEST(PredictPlanner, PrefersShapesFarFromTheTrainingData) {
  const auto& m = small_shapes_model();
  // Near the training range first in the sweep; far ones after it.
  auto sweep = sweep_of({{40, 40, 40}, {48, 64, 32}, {100, 90, 80}, {1024, 1024, 1024}, {2048, 16, 2048}});
  auto plan = plan_sweep(m, sweep, Stopping{}, 1e6);
  ASSERT_EQ(plan.chosen.size(), 5u);
  std::set<std::string> first_two = {plan.chosen[0].case_string, plan.chosen[1].case_string};
  EXPECT_TRUE(first_two.count(sweep[3].case_string)) << plan.chosen[0].case_string << " " << plan.chosen[1].case_string;
  EXPECT_TRUE(first_two.count(sweep[4].case_string)) << plan.chosen[0].case_string << " " << plan.chosen[1].case_string;
  EXPECT_GE(plan.chosen[0].uncertainty, plan.chosen[4].uncertainty);
}

TEST(PredictPlanner, GroupsTheModelNeverSawComeFirstSpreadOverTheirShapes) {
  const auto& m = small_shapes_model();
  auto sweep = sweep_of({{40, 40, 40}, {1024, 1024, 1024}, {100, 90, 80}});
  auto unseen = sweep_of({{32, 32, 32}, {33, 32, 32}, {512, 512, 16}}, "onednn");
  sweep.insert(sweep.end(), unseen.begin(), unseen.end());
  auto plan = plan_sweep(m, sweep, Stopping{}, 1e6);
  ASSERT_EQ(plan.chosen.size(), 6u);
  EXPECT_TRUE(plan.chosen[0].unseen_group);
  EXPECT_TRUE(plan.chosen[1].unseen_group);
  EXPECT_EQ(plan.chosen[0].group, "cpu/gemm/onednn/fp32");
  // Space filling: after one of the two near-identical shapes, the distant one comes before the other.
  std::set<std::string> first_two = {plan.chosen[0].case_string, plan.chosen[1].case_string};
  EXPECT_TRUE(first_two.count(unseen[2].case_string));
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes[0].find("never saw"), std::string::npos);
}

TEST(PredictPlanner, TheSameInputsGiveTheSamePlan) {
  const auto& m = small_shapes_model();
  std::vector<Sample> sweep;
  for (int i = 0; i < 30; ++i) sweep.push_back(fx::gemm_sample(16 + 16 * i, 512 - 8 * i, 16 + 4 * i));
  auto a = plan_sweep(m, sweep, Stopping{}, 8), b = plan_sweep(m, sweep, Stopping{}, 8);
  ASSERT_EQ(a.chosen.size(), b.chosen.size());
  for (std::size_t i = 0; i < a.chosen.size(); ++i) EXPECT_EQ(a.chosen[i].case_string, b.chosen[i].case_string);
}

TEST(PredictPlanner, ABudgetSmallerThanAnyCaseChoosesNoneAndSaysWhy) {
  auto plan = plan_sweep(small_shapes_model(), sweep_of({{40, 40, 40}}), Stopping{}, 0.01);
  EXPECT_TRUE(plan.chosen.empty());
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes.back().find("no case fits"), std::string::npos) << plan.notes.back();
}
