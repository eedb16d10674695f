#pragma once
// Model pipelines: a model as a named list of layers, each an op case measured on its own and
// counted as often as the model runs it. Built-in pipelines are generated from each architecture's
// definition (see src/pipeline/builtin_*.cpp); users write theirs in YAML (pipeline_yaml.cpp).
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::pipeline {

struct Layer {
  std::string label;     // where it sits in the model: "layer3.0.conv2", "decoder.fc1"
  Case kase;             // op, dtype and parameters; impl and device are chosen when the pipeline runs
  std::size_t count = 1; // times one forward pass runs it (OPT's 64 identical decoder layers)
  ModelCost cost;        // per call (OpDef::model_cost of the case, plus what make_layer was given)
};

struct Pipeline {
  std::string name;                              // "resnet18", or the user's name
  std::vector<std::pair<std::string, std::string>> params;  // the values it was built with (batch=1, image=224)
  DType dtype = DType::fp32;
  std::vector<Layer> layers;
  // Parameters the model holds outside any measured layer (ViT's class token and position table).
  double extra_params = 0;
  // What one forward pass processes, for throughput: `samples` of `sample_unit` ("img", "token").
  double samples = 1;
  std::string sample_unit = "img";
  // What its model reads and writes when run whole (op `model`), in elements per forward pass: a
  // vision model's image batch in and logits out, OPT's hidden states of its new tokens.
  struct ModelTensor {
    std::string name;
    double elements = 0;
  };
  ModelTensor model_input, model_output;

  double total_params() const;  // sum of layer params x count, plus extra_params
  double total_macs() const;    // sum of layer MACs x count
};

// A layer of op `op` with `params` (the op's defaults fill the rest) in `dtype`; its cost is the
// op's model_cost plus `extra_params` per call. Throws CaseError for an unknown op or a bad value.
Layer make_layer(std::string label, const std::string& op, std::vector<std::pair<std::string, std::string>> params,
                 DType dtype, std::size_t count = 1, double extra_params = 0);

// Values a pipeline is built from (batch, image, seq, kv, ...), as given or defaulted.
class Args {
 public:
  Args(std::vector<std::pair<std::string, std::string>> values) : values_(std::move(values)) {}
  std::int64_t integer(const std::string& key) const;  // throws CaseError when absent or not a positive integer
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// A built-in pipeline: its parameters with defaults, and how to build it from them.
struct PipelineDef {
  std::string name;
  std::string summary;  // "ResNet-18 (He et al. 2015), torchvision layout"
  std::vector<std::pair<std::string, std::string>> defaults;  // e.g. {"batch", "1"}, {"image", "224"}
  std::function<Pipeline(const Args&, DType)> build;
  // The architecture's published size at its default parameters per sample, and where it is from
  // (docs and tests compare the generated totals with them).
  double published_params = 0, published_macs = 0;
  std::string source;
  // The model run end to end is 1/end_to_end_scale of a pipeline's pass: OPT-66B's pipelines
  // count one decoder layer 64 times, and its end-to-end model is that one layer (64).
  double end_to_end_scale = 1;
};

// A built-in pipeline's model run whole, beside the sum of its layers: the case that runs the
// pipeline `p` end to end where `like` says. The op that runs models registers it (ops/model:
// PyTorch in the worker), so pipelines name no op of their own.
using EndToEndCase = std::function<Case(const Pipeline& p, const Case& like)>;

class Registry {
 public:
  static Registry& global();
  void add(PipelineDef def);
  const PipelineDef* find(const std::string& name) const;
  std::vector<const PipelineDef*> all() const;  // by name
  void set_end_to_end(EndToEndCase make) { end_to_end_ = std::move(make); }
  const EndToEndCase& end_to_end() const { return end_to_end_; }  // empty when no op registered one

 private:
  std::map<std::string, PipelineDef> defs_;
  EndToEndCase end_to_end_;
};

struct Registrar {
  explicit Registrar(PipelineDef def) { Registry::global().add(std::move(def)); }
};
struct EndToEndRegistrar {
  explicit EndToEndRegistrar(EndToEndCase make) { Registry::global().set_end_to_end(std::move(make)); }
};

// Builds built-in pipeline `name` with `given` values over its defaults. Throws CaseError for an
// unknown pipeline (naming the known ones) or an unknown or bad parameter.
Pipeline build(const std::string& name, const std::vector<std::pair<std::string, std::string>>& given, DType dtype);

}  // namespace opmeter::pipeline
