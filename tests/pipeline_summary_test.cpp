// summarize(): totals, idle accounting, pipeline parallelism, incomplete pipelines, missing energy,
// and the PyTorch model beside the sum of layers. Every expected number is worked out by hand.
#include <gtest/gtest.h>

#include <limits>

#include "pipeline/present/pipeline_summary.hpp"
#include "tests/pipeline_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::pipeline;
using opmeter::fixtures::hand_result;
using opmeter::fixtures::hand_run;

TEST(PipelineSummary, TotalsOfACompletePipeline) {
  auto h = hand_run();
  auto s = summarize(h.run);
  EXPECT_EQ(s.name, "toy");
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.dtype, "fp32");
  EXPECT_EQ(s.param("batch"), "8");
  EXPECT_EQ(s.param("nope"), "");
  EXPECT_TRUE(s.complete);
  EXPECT_TRUE(s.missing.empty());
  // Params 100 + 50 x 2 + 0 + 7 extra; MACs 1000 + 500 x 2.
  EXPECT_DOUBLE_EQ(s.total_params, 207);
  EXPECT_DOUBLE_EQ(s.total_macs, 2000);
  // Latency 1 + 2 x 2 + 0.5 x 4 = 7 ms; 8 images per pass.
  ASSERT_TRUE(s.latency_s);
  EXPECT_NEAR(*s.latency_s, 7e-3, 1e-12);
  EXPECT_NEAR(*s.throughput, 8 / 7e-3, 1e-6);
  // Energy 0.1 + 0.15 x 2 + 0.02 x 4 = 0.48 J; per image 0.06 J.
  ASSERT_TRUE(s.energy_j);
  EXPECT_NEAR(*s.energy_j, 0.48, 1e-12);
  EXPECT_NEAR(*s.energy_per_sample_j, 0.06, 1e-12);
  EXPECT_EQ(s.energy_reason, "");
  ASSERT_EQ(s.layers.size(), 3u);
  auto& b = s.layers[1];
  EXPECT_EQ(b.label, "block.fc");
  EXPECT_EQ(b.op, "linear");
  EXPECT_EQ(b.impl, "opmeter");
  EXPECT_EQ(b.status, "ok");
  EXPECT_EQ(b.count, 2u);
  EXPECT_NEAR(*b.total_s, 4e-3, 1e-12);
  EXPECT_NEAR(*b.total_energy_j, 0.3, 1e-12);
  EXPECT_NEAR(*b.power_w, 75, 1e-9);
  EXPECT_DOUBLE_EQ(*b.flops, 1e6);
  EXPECT_DOUBLE_EQ(*b.bytes, 4e5);
  EXPECT_DOUBLE_EQ(*b.pct_roofline, 50);
  EXPECT_DOUBLE_EQ(b.params, 50);
  EXPECT_DOUBLE_EQ(b.macs, 500);
}

TEST(PipelineSummary, IdleEnergyIsIdlePowerTimesLatency) {
  auto h = hand_run();
  auto s = summarize(h.run);
  // Idle 10 W: a 0.01, b 0.02, c 0.005 J per call; dynamic a 0.09, b 0.13, c 0.015.
  EXPECT_NEAR(*s.layers[0].idle_energy_j, 0.01, 1e-12);
  EXPECT_NEAR(*s.layers[1].idle_energy_j, 0.02, 1e-12);
  EXPECT_NEAR(*s.layers[2].idle_energy_j, 0.005, 1e-12);
  EXPECT_NEAR(*s.layers[1].dynamic_energy_j, 0.13, 1e-12);
  // Without idle: 0.09 + 0.13 x 2 + 0.015 x 4 = 0.41 J, 0.05125 J per image.
  ASSERT_TRUE(s.dynamic_energy_j);
  EXPECT_NEAR(*s.dynamic_energy_j, 0.41, 1e-12);
  EXPECT_NEAR(*s.dynamic_energy_per_sample_j, 0.41 / 8, 1e-12);
  EXPECT_EQ(*s.idle_power_w, 10);
}

// The energy window's calls run hot and back to back, shorter than the cold median: a layer's
// energy per call is the window's power over the median, so energy and latency describe one pass.
TEST(PipelineSummary, LayerEnergyIsWindowPowerTimesMedian) {
  auto h = hand_run();
  Result& b = h.results[1];  // median 2 ms, 0.15 J a call in its window
  b.avg_power_w = 100;       // so the window's calls took 1.5 ms each
  auto s = summarize(h.run);
  EXPECT_NEAR(*s.layers[1].energy_j, 100 * 2e-3, 1e-12);
  EXPECT_NEAR(*s.layers[1].total_energy_j, 2 * 100 * 2e-3, 1e-12);
  EXPECT_NEAR(*s.layers[1].idle_energy_j, 10 * 2e-3, 1e-12);
  EXPECT_NEAR(*s.layers[1].dynamic_energy_j, 90 * 2e-3, 1e-12);
  EXPECT_DOUBLE_EQ(*b.energy_j, 0.15);  // the case's own measurement stays as it was
  b.avg_power_w = 10;                   // the idle draw: no dynamic energy, however long the window's calls
  s = summarize(h.run);
  EXPECT_NEAR(*s.layers[1].dynamic_energy_j, 0, 1e-12);
  b.avg_power_w.reset();  // no window power: no energy for the median's call, and why
  s = summarize(h.run);
  EXPECT_FALSE(s.layers[1].energy_j);
  EXPECT_EQ(s.layers[1].energy_reason, "the energy window has no average power");
  EXPECT_FALSE(s.energy_j);
  // The model end to end likewise: 100 W over its 5 ms median, not its window's 0.4 J a call.
  Result model = hand_result("model", 5e-3, 0.4);
  model.avg_power_w = 100;
  h.run.end_to_end = &model;
  EXPECT_NEAR(*summarize(h.run).end_to_end_energy_j, 0.5, 1e-12);
}

// The probe's pipeline (fake RAPL): fc1 27.36 us x 3 at 79.1 W, act 2.19 us at 77.5 W, res
// 1.99 us x 2 at 73.5 W, idle 19.6 W, 4 images a pass. The windows' energies per call (596.7,
// 106.0, 75.3 uJ) summed to 2.047 mJ, 23 W over the 88.25 us pass. Totals worked out in Python.
TEST(PipelineSummary, PassEnergyOverLatencyIsTheLayersPower) {
  fixtures::HandRun h;
  auto& p = h.run.pipeline;
  p.name = "tiny";
  p.samples = 4;
  p.layers = {fixtures::hand_layer("fc1", "linear", 3, 0, 0), fixtures::hand_layer("act", "relu", 1, 0, 0),
              fixtures::hand_layer("res", "add", 2, 0, 0)};
  const double median[] = {27.36e-6, 2.19e-6, 1.99e-6}, watts[] = {79.1, 77.5, 73.5},
               window_j[] = {596.749e-6, 105.985e-6, 75.298e-6};
  for (int i = 0; i < 3; ++i) {
    h.results.push_back(hand_result(p.layers[i].kase.op, median[i], window_j[i]));
    h.results.back().avg_power_w = watts[i];
  }
  for (auto& r : h.results) h.run.layer_results.push_back(&r);
  h.run.device = "cpu";
  h.run.idle_power_w = 19.6;
  auto s = summarize(h.run);
  ASSERT_TRUE(s.energy_j && s.latency_s);
  EXPECT_NEAR(*s.latency_s, 88.25e-6, 1e-12);
  EXPECT_NEAR(*s.energy_j, 6.954783e-3, 1e-12);
  const double implied_w = *s.energy_j / *s.latency_s;  // 78.8 W: within the layers' 73.5..79.1 W
  EXPECT_GT(implied_w, 73.5);
  EXPECT_LT(implied_w, 79.1);
  EXPECT_NEAR(*s.energy_per_sample_j, 1.73869575e-3, 1e-12);
  EXPECT_NEAR(*s.dynamic_energy_j, 5.225083e-3, 1e-12);
  EXPECT_NEAR(*s.dynamic_energy_per_sample_j, 1.30627075e-3, 1e-12);
  // Period 82.08 us (fc1); the other stages idle 79.89 + 78.10 us at 19.6 W.
  EXPECT_NEAR(*s.pipeline_parallel_energy_j, 10.051387e-3, 1e-12);
}

TEST(PipelineSummary, PipelineParallelEnergyByHand) {
  auto h = hand_run();
  auto s = summarize(h.run);
  // Stages: a 1 ms, b 4 ms, c 2 ms. Period T = 4 ms; 8 images per period.
  ASSERT_TRUE(s.period_s);
  EXPECT_NEAR(*s.period_s, 4e-3, 1e-12);
  EXPECT_NEAR(*s.pipeline_parallel_throughput, 2000, 1e-9);
  // 0.48 J + 10 W x ((4 - 1) + (4 - 4) + (4 - 2)) ms = 0.48 + 0.05 = 0.53 J.
  ASSERT_TRUE(s.pipeline_parallel_energy_j);
  EXPECT_NEAR(*s.pipeline_parallel_energy_j, 0.53, 1e-12);
}

TEST(PipelineSummary, TopLayersByTimeAndEnergy) {
  auto h = hand_run();
  auto s = summarize(h.run);
  ASSERT_EQ(s.top_by_time.size(), 3u);
  EXPECT_EQ(s.top_by_time[0].layer, 1u);  // b: 4 ms of 7
  EXPECT_EQ(s.top_by_time[1].layer, 2u);  // c: 2 ms
  EXPECT_EQ(s.top_by_time[2].layer, 0u);  // a: 1 ms
  EXPECT_NEAR(s.top_by_time[0].value, 4e-3, 1e-12);
  EXPECT_NEAR(*s.top_by_time[0].share, 4.0 / 7, 1e-12);
  ASSERT_EQ(s.top_by_energy.size(), 3u);
  EXPECT_EQ(s.top_by_energy[0].layer, 1u);  // b: 0.3 J
  EXPECT_EQ(s.top_by_energy[1].layer, 0u);  // a: 0.1 J
  EXPECT_EQ(s.top_by_energy[2].layer, 2u);  // c: 0.08 J
  EXPECT_NEAR(*s.top_by_energy[1].share, 0.1 / 0.48, 1e-12);
  // At most five, largest first.
  auto many = fixtures::many_layer_summary(12);
  ASSERT_EQ(many.top_by_time.size(), kTopLayers);
  EXPECT_EQ(many.top_by_time[0].layer, 11u);
  EXPECT_EQ(many.top_by_time[4].layer, 7u);
}

TEST(PipelineSummary, IncompletePipelineHasNoTotals) {
  auto h = hand_run();
  Result skipped = fixtures::hand_result("linear", 0, std::nullopt);
  skipped.status = Status::skipped;
  skipped.reason = "would not fit in memory";
  skipped.samples.clear();
  h.run.layer_results[1] = &skipped;
  h.run.layer_results[2] = nullptr;
  auto s = summarize(h.run);
  EXPECT_FALSE(s.complete);
  ASSERT_EQ(s.missing.size(), 2u);
  EXPECT_EQ(s.missing[0], "block.fc (linear): skipped: would not fit in memory");
  EXPECT_EQ(s.missing[1].rfind("block.act (relu): not-measured", 0), 0u) << s.missing[1];
  EXPECT_EQ(s.layers[1].status, "skipped");
  EXPECT_EQ(s.layers[2].status, kNotMeasured);
  EXPECT_FALSE(s.layers[1].measured());
  // Nothing summed from what is left, energy included.
  EXPECT_FALSE(s.latency_s);
  EXPECT_FALSE(s.throughput);
  EXPECT_FALSE(s.energy_j);
  EXPECT_FALSE(s.dynamic_energy_j);
  EXPECT_FALSE(s.period_s);
  EXPECT_FALSE(s.pipeline_parallel_energy_j);
  EXPECT_NE(s.energy_reason.find("incomplete: 2 of 3 layers"), std::string::npos) << s.energy_reason;
  // The measured layer is still ranked, without a share of a total that does not exist.
  ASSERT_EQ(s.top_by_time.size(), 1u);
  EXPECT_EQ(s.top_by_time[0].layer, 0u);
  EXPECT_FALSE(s.top_by_time[0].share);
  // Params and MACs come from the pipeline, measured or not.
  EXPECT_DOUBLE_EQ(s.total_params, 207);
  // A result list shorter than the layers: the rest are not measured.
  h.run.layer_results.resize(1);
  EXPECT_EQ(summarize(h.run).missing.size(), 2u);
}

TEST(PipelineSummary, MissingEnergyLeavesEnergyEmptyWithTheReason) {
  auto h = hand_run();
  h.results[1].energy_j.reset();
  h.results[1].avg_power_w.reset();
  h.results[1].energy_reason = "RAPL is not readable here";
  h.results[2].energy_j.reset();  // no reason of its own
  auto s = summarize(h.run);
  EXPECT_TRUE(s.complete);
  EXPECT_TRUE(s.latency_s);
  EXPECT_TRUE(s.period_s);  // time does not need energy
  EXPECT_FALSE(s.energy_j);
  EXPECT_FALSE(s.dynamic_energy_j);
  EXPECT_FALSE(s.energy_per_sample_j);
  EXPECT_FALSE(s.pipeline_parallel_energy_j);
  EXPECT_EQ(s.energy_reason, "layer block.fc: RAPL is not readable here");  // the first layer's reason
  EXPECT_FALSE(s.layers[1].energy_j);
  EXPECT_FALSE(s.layers[1].idle_energy_j);
  EXPECT_EQ(s.layers[2].energy_reason, "no energy reading on cpu");
  // Only the layer that has energy is ranked by it, without a share.
  ASSERT_EQ(s.top_by_energy.size(), 1u);
  EXPECT_FALSE(s.top_by_energy[0].share);
}

TEST(PipelineSummary, UnknownIdlePowerKeepsTotalEnergyOnly) {
  auto h = hand_run();
  h.run.idle_power_w.reset();
  auto s = summarize(h.run);
  EXPECT_NEAR(*s.energy_j, 0.48, 1e-12);
  EXPECT_FALSE(s.dynamic_energy_j);
  EXPECT_FALSE(s.pipeline_parallel_energy_j);
  EXPECT_FALSE(s.layers[0].idle_energy_j);
  EXPECT_NE(s.energy_reason.find("idle power of cpu is unknown"), std::string::npos) << s.energy_reason;
}

TEST(PipelineSummary, EndToEndBesideTheSumOfLayers) {
  auto h = hand_run();
  Result model = hand_result("model", 5e-3, 0.4);
  h.run.end_to_end = &model;
  auto s = summarize(h.run);
  EXPECT_EQ(s.end_to_end_case, model.case_string);
  EXPECT_EQ(s.end_to_end_status, "ok");
  EXPECT_NEAR(*s.end_to_end_s, 5e-3, 1e-12);
  EXPECT_NEAR(*s.end_to_end_ratio, 7.0 / 5, 1e-12);
  EXPECT_NEAR(*s.end_to_end_energy_ratio, 0.48 / 0.4, 1e-12);
  // OPT: one decoder layer run end to end stands for 64.
  h.run.end_to_end_scale = 64;
  Result layer = hand_result("model", 0.1e-3, 0.01);
  h.run.end_to_end = &layer;
  s = summarize(h.run);
  EXPECT_NEAR(*s.end_to_end_s, 6.4e-3, 1e-12);
  EXPECT_NEAR(*s.end_to_end_energy_j, 0.64, 1e-12);
  EXPECT_DOUBLE_EQ(s.end_to_end_scale, 64);
  // A model that did not run: its status and reason, no figure.
  Result failed = hand_result("model", 0, std::nullopt);
  failed.status = Status::error;
  failed.reason = "the worker has no torch";
  h.run.end_to_end = &failed;
  s = summarize(h.run);
  EXPECT_EQ(s.end_to_end_status, "error");
  EXPECT_EQ(s.end_to_end_reason, "the worker has no torch");
  EXPECT_FALSE(s.end_to_end_s);
  EXPECT_FALSE(s.end_to_end_ratio);
}

TEST(PipelineSummary, AnOkResultWithoutTimingIsNotMeasured) {
  auto h = hand_run();
  h.results[0].summary.median = 0;
  auto s = summarize(h.run);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.layers[0].status, kNotMeasured);
  EXPECT_EQ(s.missing[0], "stem.conv (conv2d): not-measured: the result holds no timing");
}

TEST(PipelineSummary, EmptyPipelineIsIncomplete) {
  pipeline::PipelineRun run;
  run.pipeline.name = "empty";
  auto s = summarize(run);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.missing, std::vector<std::string>{"the pipeline has no layers"});
  EXPECT_FALSE(s.latency_s);
}

TEST(PipelineSummary, EndToEndRatioCarriesItsIntervalOrIsRefusedWhenLoose) {
  auto h = hand_run();  // 7 ms a pass: conv 1 ms x 1, linear 2 ms x 2, relu 0.5 ms x 4
  h.results[0].summary.precision = 0.02;
  h.results[1].summary.precision = 0.01;
  h.results[2].summary.precision = 0.04;
  Result model = hand_result("model", 5e-3, 0.4);
  model.summary.precision = 0.05;
  h.run.end_to_end = &model;
  auto s = summarize(h.run);
  // (1 ms x 2% + 4 ms x 1% + 2 ms x 4%) / 7 ms = 0.14 / 7 = 2%.
  ASSERT_TRUE(s.latency_precision);
  EXPECT_NEAR(*s.latency_precision, 0.02, 1e-12);
  ASSERT_TRUE(s.end_to_end_ratio);
  EXPECT_NEAR(*s.end_to_end_ratio, 1.4, 1e-12);
  EXPECT_NEAR(*s.end_to_end_ratio_low, 1.4 * 0.98 / 1.05, 1e-12);
  EXPECT_NEAR(*s.end_to_end_ratio_high, 1.4 * 1.02 / 0.95, 1e-12);
  EXPECT_EQ(ratio_text(s), "1.40 [1.31, 1.50]");
  EXPECT_TRUE(s.end_to_end_ratio_note.empty());
  // The end to end figure known to ±49.7% (a loaded machine): 1.4 would be anywhere in
  // [0.92, 2.84]; no ratio, and the reason.
  model.summary.precision = 0.497;
  s = summarize(h.run);
  EXPECT_FALSE(s.end_to_end_ratio);
  EXPECT_EQ(ratio_text(s), "—");
  EXPECT_NE(s.end_to_end_ratio_note.find("±49.7%"), std::string::npos) << s.end_to_end_ratio_note;
  EXPECT_NE(s.end_to_end_ratio_note.find("0.92 to 2.84"), std::string::npos) << s.end_to_end_ratio_note;
  EXPECT_TRUE(s.end_to_end_s);  // the figure itself is still shown
  // 5 samples of the model: no interval at all, said in words.
  model.summary.precision = std::numeric_limits<double>::infinity();
  s = summarize(h.run);
  EXPECT_FALSE(s.end_to_end_ratio);
  EXPECT_NE(s.end_to_end_ratio_note.find("the end to end time of unknown precision (a median of fewer than 6 samples)"),
            std::string::npos)
      << s.end_to_end_ratio_note;
  EXPECT_EQ(s.end_to_end_ratio_note.find("inf"), std::string::npos) << s.end_to_end_ratio_note;
}
