// Pipelines predicted layer by layer: the spec, the impl each layer takes, totals and intervals.
#include <gtest/gtest.h>

#include "opmeter/errors.hpp"
#include "opmeter/pipeline.hpp"
#include "predict/analytic.hpp"
#include "predict/pipeline_prediction.hpp"
#include "tests/predict_model_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::predict;
namespace fx = opmeter::predict::fixtures;

namespace {

const PredictModel& model_of(const std::string& impl) {
  // Never destroyed: at exit, libxgboost's own statics may go before ours (freeing a booster crashes).
  static auto& models = *new std::map<std::string, PredictModel>;
  auto it = models.find(impl);
  if (it == models.end())
    it = models.emplace(impl, fit_model(fx::gemm_samples(20, impl), fx::ceilings_map(), {}, FitSettings{})).first;
  return it->second;
}

pipeline::Pipeline two_gemms() {
  pipeline::Pipeline p;
  p.name = "mlp";
  p.layers.push_back(pipeline::make_layer("fc1", "gemm", {{"M", "8"}, {"N", "64"}, {"K", "32"}}, DType::fp32));
  p.layers.push_back(pipeline::make_layer("fc2", "gemm", {{"M", "8"}, {"N", "32"}, {"K", "64"}}, DType::fp32, 3));
  return p;
}

}  // namespace

TEST(PredictPipeline, SpecsNameABuiltInPipelineWithParamsAndWhereItRuns) {
  auto s = parse_pipeline_spec("resnet50:batch=4,dtype=bf16,threads=2");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "resnet50");
  ASSERT_EQ(s->params.size(), 1u);
  EXPECT_EQ(s->params[0], std::make_pair(std::string("batch"), std::string("4")));
  EXPECT_EQ(s->dtype, DType::bf16);
  EXPECT_EQ(s->threads, 2);
  EXPECT_EQ(s->device, "cpu");
  EXPECT_TRUE(parse_pipeline_spec("resnet18"));
  EXPECT_FALSE(parse_pipeline_spec("resnet"));
  EXPECT_THROW(parse_pipeline_spec("resnet50:batch"), CaseError);
  EXPECT_THROW(parse_pipeline_spec("resnet50:dtype=fp7"), CaseError);
  EXPECT_THROW(parse_pipeline_spec("resnet50:threads=0"), CaseError);
  EXPECT_THROW(parse_pipeline_spec("resnet50:batch=1,batch=2"), CaseError);  // not silently the last
}

TEST(PredictPipeline, EachLayerTakesTheFirstImplTheModelKnows) {
  Case like;
  like.threads = 1;
  for (const char* impl : {"onednn", "openblas"}) {
    const auto& m = model_of(impl);
    auto p = predict_pipeline(m, two_gemms(), like);
    ASSERT_EQ(p.layers.size(), 2u);
    EXPECT_EQ(p.layers[0].prediction.case_string, fmt::format("gemm/{}/fp32/M=8,N=64,K=32/threads=1", impl));
    EXPECT_EQ(p.layers[1].count, 3u);
    const double total = p.layers[0].prediction.time_s + 3 * p.layers[1].prediction.time_s;
    EXPECT_NEAR(p.total_s, total, total * 1e-12);
    EXPECT_LE(p.lo_s, p.total_s);
    EXPECT_GE(p.hi_s, p.total_s);
    EXPECT_EQ(p.distinct_cases, 2u);
    EXPECT_EQ(p.cases_in_training, 0u);
  }
}

TEST(PredictPipeline, CountsTheLayerCasesInTheTrainingData) {
  auto samples = fx::gemm_samples(20, "onednn");
  auto layer = fx::gemm_sample(8, 64, 32, "onednn");
  layer.time_s = 2e-6;
  samples.push_back(layer);
  auto m = fit_model(samples, fx::ceilings_map(), {}, FitSettings{});
  Case like;
  auto p = predict_pipeline(m, two_gemms(), like);
  EXPECT_EQ(p.cases_in_training, 1u);
  EXPECT_TRUE(p.layers[0].in_training);
  EXPECT_FALSE(p.layers[1].in_training);
}

TEST(PredictPipeline, ALayerNoKnownImplRunsNamesTheLayerAndWhatTheModelNeverSaw) {
  auto p = two_gemms();
  p.layers.push_back(pipeline::make_layer("act", "relu", {{"batch", "1"}, {"seq", "8"}, {"hidden", "64"}}, DType::fp32));
  try {
    predict_pipeline(model_of("onednn"), p, Case{});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'act'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("never saw op relu"), std::string::npos) << e.what();
  }
}

TEST(PredictPipeline, UsualThreadsAreTheTrainingPointsMostCommonCount) {
  EXPECT_EQ(usual_threads(model_of("onednn"), "cpu"), 1);
  EXPECT_EQ(usual_threads(model_of("onednn"), "cuda:0"), 1);
  PredictModel m = model_of("onednn");
  for (std::size_t i = 0; i < 15; ++i) {
    Case c = parse_case(m.groups[0].points[i].case_string);
    c.threads = 4;
    m.groups[0].points[i].case_string = c.to_string();
  }
  EXPECT_EQ(usual_threads(m, "cpu"), 4);
}

TEST(PredictPipeline, TheMeasuredTotalIsTheSamePipelinesWhenComplete) {
  PipelinePrediction p;
  p.name = "resnet18";
  p.dtype = "fp32";
  p.device = "cpu";
  p.params = {{"batch", "1"}};
  pipeline::PipelineSummary s;
  s.name = "resnet18";
  s.dtype = "fp32";
  s.device = "cpu";
  s.params = {{"batch", "1"}, {"image", "224"}};
  s.complete = true;
  s.latency_s = 0.02;
  EXPECT_EQ(measured_total(p, {s}), 0.02);
  auto other_batch = s;
  other_batch.params = {{"batch", "8"}, {"image", "224"}};
  EXPECT_FALSE(measured_total(p, {other_batch}));
  auto incomplete = s;
  incomplete.complete = false;
  incomplete.latency_s.reset();
  EXPECT_FALSE(measured_total(p, {incomplete}));
  auto bf16 = s;
  bf16.dtype = "bf16";
  EXPECT_FALSE(measured_total(p, {bf16}));
}

// Issue 27 item 11: a layer whose group predict fit left out (too few cases for its folds, as a
// pipeline's one-off shape is) is predicted by the roofline with a note saying what to do, not an error.
TEST(PredictPipeline, ALayerWhoseGroupFitLeftOutFallsBackToTheRooflineWithANote) {
  auto samples = fx::gemm_samples(20, "onednn");
  Sample relu = sample_of(parse_case("relu/opmeter/fp32/batch=1,seq=8,hidden=64/threads=1"));
  relu.time_s = 1e-6;
  samples.push_back(relu);
  static auto& m = *new PredictModel(fit_model(samples, fx::ceilings_map(), {}, FitSettings{}));  // see model_of
  ASSERT_EQ(m.left_out.count("cpu/relu/opmeter/fp32"), 1u);
  auto reread = model_from_json(to_json(m));
  EXPECT_EQ(reread.left_out, m.left_out);

  auto p = two_gemms();
  p.layers.push_back(pipeline::make_layer("act", "relu", {{"batch", "1"}, {"seq", "8"}, {"hidden", "64"}}, DType::fp32));
  Case like;
  like.threads = 1;
  auto out = predict_pipeline(m, p, like);
  ASSERT_EQ(out.layers.size(), 3u);
  const auto& act = out.layers[2].prediction;
  EXPECT_EQ(act.case_string, "relu/opmeter/fp32/batch=1,seq=8,hidden=64/threads=1");
  EXPECT_EQ(act.model, ModelKind::roofline);
  EXPECT_DOUBLE_EQ(act.time_s, roofline_time(sample_of(parse_case(act.case_string)), fx::cpu_ceilings()));
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_NE(out.notes[0].find("layer 'act'"), std::string::npos) << out.notes[0];
  EXPECT_NE(out.notes[0].find("Measure more shapes of it (a group needs at least 2 cases)"), std::string::npos) << out.notes[0];
  const double total = out.layers[0].prediction.time_s + 3 * out.layers[1].prediction.time_s + act.time_s;
  EXPECT_NEAR(out.total_s, total, total * 1e-12);
}

namespace {

// A pipeline run's summary at `threads`, one measured layer, its total `latency_s`.
pipeline::PipelineSummary measured_at(int threads, double latency_s) {
  pipeline::PipelineSummary s;
  s.name = "resnet18";
  s.dtype = "fp32";
  s.device = "cpu";
  s.params = {{"batch", "1"}, {"image", "32"}};
  s.complete = true;
  s.latency_s = latency_s;
  pipeline::LayerSummary l;
  l.case_string = fmt::format("add/opmeter/fp32/batch=1,seq=16,hidden=64/threads={}", threads);
  l.latency_s = latency_s;
  s.layers.push_back(l);
  return s;
}

PipelinePrediction predicted_at(int threads) {
  PipelinePrediction p;
  p.name = "resnet18";
  p.dtype = "fp32";
  p.device = "cpu";
  p.params = {{"batch", "1"}, {"image", "32"}};
  p.threads = threads;
  return p;
}

std::vector<Sample> relu_samples(int count, int threads) {
  std::vector<Sample> out;
  for (int i = 0; i < count; ++i) {
    auto s = sample_of(
        parse_case(fmt::format("relu/opmeter/fp32/batch=1,seq={},hidden=64/threads={}", 8 * (i + 1), threads)));
    s.time_s = 1e-6 * (i + 1);
    out.push_back(s);
  }
  return out;
}

}  // namespace

// The probe: a model fitted on a threads=2 pipeline run plus a larger threads=1 GEMM sweep chose
// threads=1 for the pipeline (the sweep outvoted it) and extrapolated every layer.
TEST(PredictPipeline, ThreadsForAPipelineComeFromItsOwnOpsGroups) {
  auto samples = fx::gemm_samples(20, "onednn");  // threads=1
  auto relu = relu_samples(6, 2);
  samples.insert(samples.end(), relu.begin(), relu.end());
  static auto& m = *new PredictModel(fit_model(samples, fx::ceilings_map(), {}, FitSettings{}));  // see model_of
  EXPECT_EQ(usual_threads(m, "cpu"), 1);  // 20 points at 1, 6 at 2
  pipeline::Pipeline acts;
  acts.name = "acts";
  acts.layers.push_back(
      pipeline::make_layer("act", "relu", {{"batch", "1"}, {"seq", "8"}, {"hidden", "64"}}, DType::fp32));
  EXPECT_EQ(threads_for_pipeline(m, acts, "cpu"), 2);
  EXPECT_EQ(threads_for_pipeline(m, two_gemms(), "cpu"), 1);
  acts.layers.push_back(two_gemms().layers[0]);  // 6 relu points at 2 against 20 GEMM points at 1
  EXPECT_EQ(threads_for_pipeline(m, acts, "cpu"), 1);
  pipeline::Pipeline unknown;
  unknown.layers.push_back(
      pipeline::make_layer("res", "add", {{"batch", "1"}, {"seq", "8"}, {"hidden", "64"}}, DType::fp32));
  EXPECT_EQ(threads_for_pipeline(m, unknown, "cpu"), usual_threads(m, "cpu"));
  // Predicted at those threads, the layer is no extrapolation in threads.
  Case like;
  like.threads = threads_for_pipeline(m, acts, "cpu");
  auto p = predict_pipeline(m, two_gemms(), like);
  EXPECT_EQ(p.threads, 1);
}

// Like with like: a measured total at other threads is not compared, and the note says so; with
// runs at both, the one at the prediction's threads is taken.
TEST(PredictPipeline, TheMeasuredTotalIsComparedOnlyAtTheSameThreads) {
  auto p = predicted_at(2);
  EXPECT_FALSE(measured_total(p, {measured_at(1, 0.03)}));
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("threads=1, this prediction is at threads=2: not compared"), std::string::npos)
      << p.notes[0];
  EXPECT_NE(p.notes[0].find("predict resnet18:batch=1,image=32,threads=1"), std::string::npos) << p.notes[0];
  auto mine = predicted_at(2);  // a config's pipeline: no spec to give
  mine.name = "mlp";
  auto measured_mine = measured_at(1, 0.03);
  measured_mine.name = "mlp";
  EXPECT_FALSE(measured_total(mine, {measured_mine}));
  ASSERT_EQ(mine.notes.size(), 1u);
  EXPECT_NE(mine.notes[0].find("set threads: 1 in its config"), std::string::npos) << mine.notes[0];
  auto both = predicted_at(2);
  EXPECT_EQ(measured_total(both, {measured_at(1, 0.03), measured_at(2, 0.02)}), 0.02);
  EXPECT_TRUE(both.notes.empty());
  auto one = predicted_at(1);
  EXPECT_EQ(measured_total(one, {measured_at(1, 0.03), measured_at(2, 0.02)}), 0.03);
}

TEST(PredictPipeline, MeasuredResultsWithoutPipelinesOrWithoutThisOneSaySo) {
  auto p = predicted_at(1);
  EXPECT_FALSE(measured_total(p, {}));
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("hold no pipeline results (no pipelines.json"), std::string::npos) << p.notes[0];
  auto q = predicted_at(1);
  auto other = measured_at(1, 0.02);
  other.params = {{"batch", "8"}, {"image", "32"}};
  EXPECT_FALSE(measured_total(q, {other}));
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_NE(q.notes[0].find("hold no resnet18 fp32 cpu with these parameters (they hold resnet18 fp32 cpu batch=8"),
            std::string::npos)
      << q.notes[0];
}
