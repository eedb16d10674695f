#pragma once
// A pipeline's predicted time: each layer's case predicted by the model, times its count, summed.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/pipeline.hpp"
#include "pipeline/present/pipeline_summary.hpp"
#include "predict/model.hpp"

namespace opmeter::predict {

// `resnet50:batch=1,image=224,dtype=bf16,device=cpu,threads=2`: a built-in pipeline, its params,
// and where it runs (dtype, device, threads are not pipeline params). nullopt when the name
// before ':' is no built-in pipeline; CaseError for a malformed parameter list.
struct PipelineSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;
  DType dtype = DType::fp32;
  std::string device = kHostDevice;
  std::optional<int> threads;
};
std::optional<PipelineSpec> parse_pipeline_spec(const std::string& text);

struct LayerPrediction {
  std::string label;
  std::size_t count = 1;
  Prediction prediction;  // of one call
  bool in_training = false;  // its case is one of the model's training points
};

struct PipelinePrediction {
  std::string name, dtype, device;
  std::vector<std::pair<std::string, std::string>> params;
  std::optional<int> threads;  // on the host: the threads its layers are predicted at
  std::vector<LayerPrediction> layers;
  // Sums of time x count. The interval adds the layers' bounds: it assumes their errors go the
  // same way (one machine, one library), the cautious choice.
  double total_s = 0, lo_s = 0, hi_s = 0;
  std::size_t distinct_cases = 0, cases_in_training = 0;
  std::optional<double> measured_s;  // the measured total (pipelines.json), when given
  std::vector<std::string> notes;    // layers predicted by a fallback, and what to do about it
};

// Threads the model's training points ran with on `device`: the most common count (ties: the
// smaller), or 1 when it has none.
int usual_threads(const PredictModel& m, const std::string& device);

// Threads to predict pipeline `p` at on `device` when none is asked for: the most common count
// among the training points of the groups of the pipeline's own ops (a GEMM sweep at threads=1
// does not outvote the pipeline run at threads=2 its layers were fitted on); usual_threads when
// the model has none of them.
int threads_for_pipeline(const PredictModel& m, const pipeline::Pipeline& p, const std::string& device);

// Each layer runs on the first impl of its candidates (pipeline::plan_pipeline's order) that
// runs it on the device and for which the model has a group. A layer whose group predict fit
// left out (fewer cases than its folds) is predicted by the device's roofline alone, with a note
// saying how to fit it. UsageError when a layer has neither: it names the layer and what the
// model never saw.
PipelinePrediction predict_pipeline(const PredictModel& m, const pipeline::Pipeline& p, const Case& like);

// The measured total of the same pipeline (name, params, dtype, device, threads) among `measured`,
// when it is complete. Otherwise nothing, with a note in p.notes saying why: no pipeline results
// at all, none of these parameters, incomplete, or measured at other threads (not like with like).
std::optional<double> measured_total(PipelinePrediction& p, const std::vector<pipeline::PipelineSummary>& measured);

}  // namespace opmeter::predict
