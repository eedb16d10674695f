// The training table: a layer's forward, backward and whole-step cases joined into one row with
// their % of peak, the phases' sum against the step, and the speedup over the baseline's step.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "analysis/training.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;
using fixtures::measured;

namespace {
const std::string kShape = "batch=1,seq=512,hidden=256,out=512,act=none";

Result phase(const std::string& impl, const std::string& extra, double s, double pct) {
  Result r = measured("linear/" + impl + "/bf16/" + kShape + extra + "/threads=2", s);
  r.pct_peak = pct;
  return r;
}
}  // namespace

TEST(TrainingReport, PhasesJoinIntoOneRowBesideTheBaselineStep) {
  std::vector<Result> results = {
      measured("linear/onednn/bf16/" + kShape + "/threads=2", 1e-3),  // inference: not a training row
      phase("onednn_train", ",mode=train,phase=forward", 2e-3, 60),
      phase("onednn_train", ",mode=train,phase=backward", 4e-3, 55),
      phase("onednn_train", ",mode=train", 6.3e-3, 50),
      phase("fp8", ",quant=float8dq-row,mode=train,fast_accum=0", 4.2e-3, 40),
  };
  auto rows = training_rows(results);
  ASSERT_EQ(rows.size(), 2u);
  const TrainingRow& base = rows[0];
  EXPECT_EQ(base.shape, kShape);
  EXPECT_EQ(base.recipe, "baseline");
  EXPECT_NEAR(*base.fwd_s, 2e-3, 1e-6);
  EXPECT_NEAR(*base.bwd_s, 4e-3, 1e-6);
  EXPECT_NEAR(*base.total_s, 6.3e-3, 1e-6);
  EXPECT_DOUBLE_EQ(*base.bwd_pct_peak, 55);
  EXPECT_NEAR(*base.phases_over_total(), (*base.fwd_s + *base.bwd_s) / *base.total_s, 1e-12);
  EXPECT_NEAR(*base.phases_over_total(), 6.0 / 6.3, 1e-3);
  EXPECT_NEAR(*base.speedup, 1.0, 1e-12);
  const TrainingRow& fp8 = rows[1];
  EXPECT_EQ(fp8.recipe, "float8dq-row");
  EXPECT_EQ(fp8.knobs, "fast_accum=0");
  EXPECT_EQ(fp8.baseline_impl, "onednn_train");
  EXPECT_NEAR(*fp8.speedup, *base.total_s / *fp8.total_s, 1e-12);
  EXPECT_NEAR(*fp8.speedup, 1.5, 1e-3);
  EXPECT_FALSE(fp8.fwd_s);
  EXPECT_FALSE(fp8.phases_over_total());  // phases not measured: no sum
  auto md = training_markdown(rows);
  EXPECT_NE(md.find("| linear " + kShape + " | bf16 | cpu x2 | baseline | onednn_train | 2.000 ms (60%) | 4.000 ms (55%) | 6.301 ms (50%) | 0.95 | onednn_train | 1.00x | - |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("float8dq-row fast_accum=0"), std::string::npos) << md;
  // Phases not measured read "-", not an empty cell.
  EXPECT_NE(md.find("| fp8 | - | - | 4.200 ms (40%) | - | onednn_train | 1.50x | - |"), std::string::npos) << md;
  EXPECT_EQ(training_markdown({}), "");
}

// A phase measured while others took the CPUs, or short of its target, marks its row; the rows
// go to results.json and training.csv with the same numbers, null / empty where not measured.
TEST(TrainingReport, FlagsMarkTheRowAndTheRowsGoToJsonAndCsv) {
  Result bwd = phase("onednn_train", ",mode=train,phase=backward", 4e-3, 55);
  bwd.add_flag("contended");
  bwd.add_flag("faster-than-peak");  // its % of peak reads too high: a slowed ceiling
  bwd.add_flag("unchecked");         // not about its time: the results' own table's
  Result step = phase("onednn_train", ",mode=train", 6e-3, 50);
  step.add_flag("unconverged");
  auto rows = training_rows({bwd, step});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].flags, (std::vector<std::string>{"bwd:contended", "bwd:faster-than-peak", "total:unconverged"}));
  EXPECT_NE(training_markdown(rows).find("| bwd:contended, bwd:faster-than-peak, total:unconverged |"),
            std::string::npos)
      << training_markdown(rows);
  auto j = training_json(rows);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_TRUE(j[0]["fwd_s"].is_null());
  EXPECT_DOUBLE_EQ(j[0]["bwd_s"].get<double>(), bwd.summary.median);
  EXPECT_DOUBLE_EQ(j[0]["total_pct_peak"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(j[0]["speedup"].get<double>(), 1.0);
  EXPECT_EQ(j[0]["flags"].size(), 3u);
  auto csv = training_csv(rows);
  EXPECT_EQ(
      csv.substr(0, csv.find('\n')),
      "device,op,shape,dtype,threads,recipe,knobs,impl,fwd_s,bwd_s,total_s,fwd_pct_peak,bwd_pct_peak,total_pct_peak,"
      "phases_over_total,baseline_impl,baseline_total_s,speedup,flags,run");
  const std::string b = fmt::format("{:.6g}", bwd.summary.median), t = fmt::format("{:.6g}", step.summary.median);
  EXPECT_NE(csv.find(",onednn_train,," + b + "," + t + ",,55,50,,onednn_train," + t +
                     ",1,bwd:contended bwd:faster-than-peak total:unconverged,threads=2\n"),
            std::string::npos)
      << csv;
}

// A hot step and a cold one of the same layer are two rows, each against the baseline that ran
// the same way: a cold step is not compared with a hot one, nor either with itself.
TEST(TrainingReport, HotAndColdStepsAreRowsOfTheirOwn) {
  std::vector<Result> results = {
      measured("linear/onednn_train/bf16/" + kShape + ",mode=train/threads=2", 8e-3),
      measured("linear/onednn_train/bf16/" + kShape + ",mode=train/threads=2,hot", 5e-3),
      measured("linear/fp8/bf16/" + kShape + ",quant=float8dq-row,mode=train/threads=2", 4e-3),
      measured("linear/fp8/bf16/" + kShape + ",quant=float8dq-row,mode=train/threads=2,hot", 4e-3),
  };
  auto rows = training_rows(results);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].where, "cpu x2");
  EXPECT_EQ(rows[1].where, "cpu x2, hot");
  EXPECT_EQ(rows[1].run, "threads=2,hot");
  EXPECT_NEAR(*rows[0].speedup, 1.0, 1e-12);  // its own cold baseline, not the faster hot step
  EXPECT_NEAR(*rows[2].speedup, 8.0 / 4.0, 1e-9);
  EXPECT_NEAR(*rows[3].speedup, 5.0 / 4.0, 1e-9);
  EXPECT_NE(training_markdown(rows).find("| bf16 | cpu x2, hot | baseline |"), std::string::npos)
      << training_markdown(rows);
}

// A phase below 10% of peak keeps two figures; a row without its own step has no baseline to
// miss: "-", not "none measured".
TEST(TrainingReport, SlowPhasesKeepTwoFiguresAndAStepLessRowHasNoBaselineCell) {
  auto md = training_markdown(training_rows({phase("onednn_train", ",mode=train,phase=forward", 2e-3, 0.42),
                                             phase("onednn_train", ",mode=train,phase=backward", 4e-3, 7)}));
  EXPECT_NE(md.find("| 2.000 ms (0.42%) | 4.000 ms (7%) | - | - | - | - | - |"), std::string::npos) << md;
  EXPECT_EQ(md.find("none measured"), std::string::npos) << md;
  EXPECT_NE(md.find("(plateau)"), std::string::npos) << md;
}

// The baseline is the fastest step of the same shape, dtype and threads, wherever it comes in the
// results: not the first seen, nor a faster one in another dtype or at other threads.
TEST(TrainingReport, TheBaselineIsTheFastestStepRunTheSameWay) {
  std::vector<Result> results = {
      measured("linear/onednn_train/bf16/" + kShape + ",mode=train/threads=2", 8e-3),
      measured("linear/fp8/bf16/" + kShape + ",quant=float8dq-row,mode=train/threads=2", 4e-3),
      measured("linear/torch/bf16/" + kShape + ",mode=train/threads=2", 6e-3),
      measured("linear/onednn_train/fp32/" + kShape + ",mode=train/threads=2", 1e-3),
      measured("linear/onednn_train/bf16/" + kShape + ",mode=train/threads=4", 1e-3),
      measured("linear/reference/bf16/" + kShape + ",mode=train/threads=2", 1e-3),
  };
  auto rows = training_rows(results);
  auto fp8 = std::find_if(rows.begin(), rows.end(), [](const TrainingRow& r) { return r.recipe == "float8dq-row"; });
  ASSERT_NE(fp8, rows.end());
  EXPECT_EQ(fp8->baseline_impl, "torch");
  EXPECT_NEAR(*fp8->speedup, 6.0 / 4.0, 1e-9);
  EXPECT_NEAR(*rows[0].speedup, 6.0 / 8.0, 1e-9);  // onednn_train against the faster torch step
}

// A merged run's machines are rows of their own, each step against its own machine's baseline.
TEST(TrainingReport, EachMachineOfAMergedRunHasItsOwnRows) {
  Result a = measured("linear/onednn_train/bf16/" + kShape + ",mode=train/threads=2", 8e-3);
  Result b = measured("linear/onednn_train/bf16/" + kShape + ",mode=train/threads=2", 2e-3);
  Result fp8 = measured("linear/fp8/bf16/" + kShape + ",quant=float8dq-row,mode=train/threads=2", 4e-3);
  a.details[kMachineDetail] = "rank000-of-2-a";
  b.details[kMachineDetail] = "rank001-of-2-b";
  fp8.details[kMachineDetail] = "rank000-of-2-a";
  auto rows = training_rows({a, b, fp8});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].where, "cpu x2, on rank000-of-2-a");
  EXPECT_EQ(rows[1].run, "threads=2 on rank001-of-2-b");
  EXPECT_NEAR(*rows[0].speedup, 1.0, 1e-12);  // not against b's faster step
  EXPECT_NEAR(*rows[2].speedup, 8.0 / 4.0, 1e-9);
}
