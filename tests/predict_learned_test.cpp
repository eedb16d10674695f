// Gradient-boosted trees and random forests (libxgboost): they learn, they are reproducible, and
// they survive a trip through JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <thread>

#include <xgboost/c_api.h>

#include "opmeter/errors.hpp"
#include "predict/learned.hpp"

namespace opmeter::predict {
namespace {

// Rows of three features spread log-uniformly over [1, 1000]; the target is log(x0 * x1), so the
// third feature is noise the trees must learn to ignore.
struct Data {
  Matrix x;
  std::vector<float> y;
};

Data make_data(std::size_t rows, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> log_value(0, std::log(1000.0));
  Data d;
  d.x.cols = 3;
  for (std::size_t i = 0; i < rows; ++i) {
    std::vector<float> row;
    for (int c = 0; c < 3; ++c) row.push_back(static_cast<float>(std::exp(log_value(rng))));
    d.y.push_back(static_cast<float>(std::log(static_cast<double>(row[0]) * row[1])));
    d.x.add_row(row);
  }
  return d;
}

double rmse(const std::vector<double>& predicted, const std::vector<float>& y) {
  double sum = 0;
  for (std::size_t i = 0; i < y.size(); ++i) sum += (predicted[i] - y[i]) * (predicted[i] - y[i]);
  return std::sqrt(sum / static_cast<double>(y.size()));
}

// The error of predicting the training targets' mean for every held-out row.
double mean_rmse(const std::vector<float>& train_y, const std::vector<float>& test_y) {
  double mean = 0;
  for (float v : train_y) mean += v;
  mean /= static_cast<double>(train_y.size());
  return rmse(std::vector<double>(test_y.size(), mean), test_y);
}

TreeSettings boosted_settings() {
  TreeSettings s;
  s.kind = TreeKind::boosted;
  s.rounds = 150;
  s.max_depth = 4;
  return s;
}

TreeSettings forest_settings() {
  TreeSettings s;
  s.kind = TreeKind::forest;
  s.trees = 100;
  s.max_depth = 8;
  return s;
}

TEST(PredictMatrix, AddRowSetsAndChecksTheWidth) {
  Matrix m;
  EXPECT_EQ(m.rows(), 0u);
  m.add_row({1, 2, 3});
  EXPECT_EQ(m.cols, 3u);
  m.add_row({4, 5, 6});
  EXPECT_EQ(m.rows(), 2u);
  EXPECT_EQ(m.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(m.add_row({1, 2}), std::invalid_argument);
  EXPECT_THROW(m.add_row({1, 2, 3, 4}), std::invalid_argument);
  EXPECT_EQ(m.rows(), 2u);
  Matrix fixed;
  fixed.cols = 2;
  EXPECT_THROW(fixed.add_row({1, 2, 3}), std::invalid_argument);
  Matrix empty;
  EXPECT_THROW(empty.add_row({}), std::invalid_argument);
}

TEST(PredictTrees, BothKindsLearnAFunctionOnHeldOutRows) {
  const Data train = make_data(400, 1), test = make_data(100, 2);
  const double baseline = mean_rmse(train.y, test.y);
  ASSERT_GT(baseline, 1.0);  // log(x0 x1) spreads over about 0..13.8
  const auto boosted = TreeModel::train(train.x, train.y, boosted_settings());
  const auto forest = TreeModel::train(train.x, train.y, forest_settings());
  EXPECT_EQ(boosted.kind(), TreeKind::boosted);
  EXPECT_EQ(forest.kind(), TreeKind::forest);
  const double boosted_error = rmse(boosted.predict(test.x), test.y);
  const double forest_error = rmse(forest.predict(test.x), test.y);
  EXPECT_LT(boosted_error, 0.15 * baseline) << "boosted " << boosted_error << " vs the mean's " << baseline;
  EXPECT_LT(forest_error, 0.25 * baseline) << "forest " << forest_error << " vs the mean's " << baseline;
  EXPECT_LT(boosted_error, 0.7) << "held-out RMSE in log time";
  std::printf("held-out RMSE: mean %.3f, boosted %.3f, forest %.3f\n", baseline, boosted_error, forest_error);
}

TEST(PredictTrees, KindsGiveDifferentModels) {
  const Data d = make_data(200, 3);
  const auto boosted = TreeModel::train(d.x, d.y, boosted_settings());
  const auto forest = TreeModel::train(d.x, d.y, forest_settings());
  EXPECT_NE(boosted.predict(d.x), forest.predict(d.x));
  EXPECT_EQ(boosted.to_json().at("kind"), "boosted");
  EXPECT_EQ(forest.to_json().at("kind"), "forest");
  // The forest is one round of parallel trees; the boosted model one tree per round.
  const auto forest_json = forest.to_json(), boosted_json = boosted.to_json();
  const auto trees = [](const nlohmann::json& j) {
    return j.at("xgboost").at("learner").at("gradient_booster").at("model").at("trees").size();
  };
  EXPECT_EQ(trees(forest_json), 100u);
  EXPECT_EQ(trees(boosted_json), 150u);
}

TEST(PredictTrees, SameDataAndSettingsGiveBitIdenticalPredictions) {
  const Data d = make_data(300, 4), test = make_data(50, 5);
  for (const auto& settings : {boosted_settings(), forest_settings()}) {
    const auto a = TreeModel::train(d.x, d.y, settings).predict(test.x);
    const auto b = TreeModel::train(d.x, d.y, settings).predict(test.x);
    EXPECT_EQ(a, b);
    auto other_seed = settings;
    other_seed.seed = 99;
    EXPECT_NE(a, TreeModel::train(d.x, d.y, other_seed).predict(test.x)) << "subsampling follows the seed";
  }
}

TEST(PredictTrees, AnySeedIsAccepted) {
  const Data d = make_data(100, 14);
  auto settings = forest_settings();
  settings.seed = ~std::uint64_t{0};
  const auto a = TreeModel::train(d.x, d.y, settings).predict(d.x);
  EXPECT_EQ(a, TreeModel::train(d.x, d.y, settings).predict(d.x));
}

TEST(PredictTrees, MoreThreadsStillDeterministic) {
  const Data d = make_data(300, 6);
  auto settings = boosted_settings();
  settings.threads = 2;
  EXPECT_EQ(TreeModel::train(d.x, d.y, settings).predict(d.x), TreeModel::train(d.x, d.y, settings).predict(d.x));
}

TEST(PredictTrees, JsonRoundTripGivesIdenticalPredictions) {
  const Data d = make_data(300, 7), test = make_data(80, 8);
  for (const auto& settings : {boosted_settings(), forest_settings()}) {
    const auto model = TreeModel::train(d.x, d.y, settings);
    // Through text, as a model file is written and read.
    const auto loaded = TreeModel::from_json(nlohmann::json::parse(model.to_json().dump()));
    EXPECT_EQ(loaded.kind(), settings.kind);
    EXPECT_EQ(loaded.predict(test.x), model.predict(test.x));
    EXPECT_EQ(loaded.to_json(), model.to_json());
  }
}

TEST(PredictTrees, MissingFeaturesAreAllowed) {
  const Data d = make_data(200, 9);
  const auto model = TreeModel::train(d.x, d.y, boosted_settings());
  Matrix x;
  x.add_row({NAN, 10, 10});
  const auto p = model.predict(x);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(std::isfinite(p[0]));
}

TEST(PredictTrees, MalformedJsonIsAUsageError) {
  using nlohmann::json;
  EXPECT_THROW(TreeModel::from_json(json::array()), UsageError);
  EXPECT_THROW(TreeModel::from_json(json{{"kind", "boosted"}}), UsageError);
  EXPECT_THROW(TreeModel::from_json(json{{"kind", "bagged"}, {"xgboost", json::object()}}), UsageError);
  EXPECT_THROW(TreeModel::from_json(json{{"kind", "forest"}, {"xgboost", {{"learner", 3}}}}), UsageError);
  // A real model with its trees cut away.
  const Data d = make_data(50, 10);
  auto j = TreeModel::train(d.x, d.y, boosted_settings()).to_json();
  j["xgboost"]["learner"]["gradient_booster"]["model"].erase("trees");
  EXPECT_THROW(TreeModel::from_json(j), UsageError);
}

TEST(PredictTrees, WidthMismatchIsAnInvalidArgument) {
  const Data d = make_data(100, 11);
  const auto model = TreeModel::train(d.x, d.y, boosted_settings());
  Matrix narrow;
  narrow.add_row({1, 2});
  EXPECT_THROW(model.predict(narrow), std::invalid_argument);
  const auto loaded = TreeModel::from_json(model.to_json());
  EXPECT_THROW(loaded.predict(narrow), std::invalid_argument);
}

TEST(PredictTrees, InvalidTrainingInput) {
  const Data d = make_data(20, 12);
  auto fewer = d.y;
  fewer.pop_back();
  EXPECT_THROW(TreeModel::train(d.x, fewer, boosted_settings()), std::invalid_argument);
  EXPECT_THROW(TreeModel::train(Matrix{}, {}, boosted_settings()), std::invalid_argument);
  auto no_rounds = boosted_settings();
  no_rounds.rounds = 0;
  EXPECT_THROW(TreeModel::train(d.x, d.y, no_rounds), std::invalid_argument);
  // xgboost's own refusal (a NaN label) arrives as a runtime_error with its message.
  auto bad = d.y;
  bad[3] = NAN;
  try {
    TreeModel::train(d.x, bad, boosted_settings());
    FAIL() << "a NaN label must be refused";
  } catch (const std::invalid_argument&) {
    FAIL() << "xgboost's refusal is not an argument check";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("xgboost"), std::string::npos) << e.what();
  }
}

// xgboost logs to stderr at its thread's verbosity; training and loading silence it on whichever
// thread they run, so a fit prints only opmeter's own output.
TEST(PredictTrees, XgboostStaysSilent) {
  const Data d = make_data(100, 13);
  std::thread worker([&] {
    ASSERT_EQ(XGBSetGlobalConfig(R"({"verbosity": 3})"), 0);
    testing::internal::CaptureStderr();
    const auto model = TreeModel::train(d.x, d.y, forest_settings());
    TreeModel::from_json(model.to_json()).predict(d.x);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  });
  worker.join();
}

TEST(PredictTrees, UntrainedModelRefusesToPredict) {
  TreeModel m;
  Matrix x;
  x.add_row({1});
  EXPECT_THROW(m.predict(x), std::logic_error);
}

}  // namespace
}  // namespace opmeter::predict
