#pragma once
// A three-layer pipeline with results made by hand, whose totals are worked out in
// pipeline_summary_test.cpp; and a summary with many layers for the report's charts.
#include <deque>

#include <fmt/format.h>

#include "opmeter/pipeline.hpp"
#include "opmeter/result.hpp"
#include "pipeline/present/pipeline_summary.hpp"

namespace opmeter::fixtures {

inline pipeline::Layer hand_layer(const std::string& label, const std::string& op, std::size_t count, double params,
                                  double macs) {
  pipeline::Layer l;
  l.label = label;
  l.kase.op = op;
  l.kase.params = {{"n", "8"}};
  l.count = count;
  l.cost = {params, macs};
  return l;
}

inline Result hand_result(const std::string& op, double median_s, std::optional<double> energy_j,
                          std::string device = "cpu") {
  Result r;
  r.kase.op = op;
  r.kase.impl = "opmeter";
  r.kase.device = device;
  r.kase.params = {{"n", "8"}};
  r.case_string = fmt::format("{}/opmeter/fp32/n=8/threads=2", op);
  r.status = Status::ok;
  r.samples = {median_s, median_s, median_s};
  r.summary.median = median_s;
  r.summary.count = 3;
  r.work = {1e6, 3e5, 1e5};
  r.energy_j = energy_j;
  if (energy_j) r.avg_power_w = *energy_j / median_s;
  r.efficiency = 0.5;
  return r;
}

// Layers a (1 ms x 1, 0.1 J), b (2 ms x 2, 0.15 J per call), c (0.5 ms x 4, 0.02 J per call);
// 8 samples per pass, idle power 10 W.
struct HandRun {
  std::deque<Result> results;  // stable addresses for the run's pointers
  pipeline::PipelineRun run;
};

inline HandRun hand_run() {
  HandRun h;
  auto& p = h.run.pipeline;
  p.name = "toy";
  p.params = {{"batch", "8"}, {"image", "32"}};
  p.samples = 8;
  p.sample_unit = "img";
  p.extra_params = 7;
  p.layers = {hand_layer("stem.conv", "conv2d", 1, 100, 1000), hand_layer("block.fc", "linear", 2, 50, 500),
              hand_layer("block.act", "relu", 4, 0, 0)};
  h.results.push_back(hand_result("conv2d", 1e-3, 0.1));
  h.results.push_back(hand_result("linear", 2e-3, 0.15));
  h.results.push_back(hand_result("relu", 0.5e-3, 0.02));
  for (auto& r : h.results) h.run.layer_results.push_back(&r);
  h.run.device = "cpu";
  h.run.idle_power_w = 10;
  return h;
}

// A pipeline of `n` measured layers over three ops, with energy; the last and largest one has an
// escaping hazard for a label.
inline pipeline::PipelineSummary many_layer_summary(std::size_t n, const std::string& name = "deep") {
  HandRun h;
  auto& p = h.run.pipeline;
  p.name = name;
  p.params = {{"batch", "1"}};
  const char* ops[] = {"conv2d", "relu", "add"};
  for (std::size_t i = 0; i < n; ++i) {
    std::string label = i + 1 == n ? "<b>head</b> & \"x\"" : fmt::format("layer{}", i);
    p.layers.push_back(hand_layer(label, ops[i % 3], 1, 10, 100));
    h.results.push_back(hand_result(ops[i % 3], 1e-4 * double(i + 1), 1e-3 * double(i + 1)));
  }
  for (auto& r : h.results) h.run.layer_results.push_back(&r);
  h.run.device = "cpu";
  h.run.idle_power_w = 1;
  return pipeline::summarize(h.run);
}

}  // namespace opmeter::fixtures
