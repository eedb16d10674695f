// The training table: a layer's forward, backward and whole-step cases joined into one row with
// their % of peak, the phases' sum against the step, and the speedup over the baseline's step.
#include <gtest/gtest.h>

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
  EXPECT_NE(md.find("| linear " + kShape + " | bf16 | cpu x2 | baseline | onednn_train | 2.000 ms (60%) | 4.000 ms (55%) | 6.301 ms (50%) | 0.95 | onednn_train | 1.00x |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("float8dq-row fast_accum=0"), std::string::npos) << md;
  EXPECT_EQ(training_markdown({}), "");
}
