// The model op: a built-in pipeline's model run end to end by PyTorch in the worker (impls
// `torch`, `torch_compile`), beside the sum of its layers measured one by one. Its work is the
// pipeline's: 2 x its MACs, its weights read once, the input read and the output written.
// A pipeline whose model is part of its pass (OPT-66B: one decoder layer of 64) says so in its
// PipelineDef::end_to_end_scale. The op registers how pipelines run their model end to end.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/pipeline.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"
#include "ops/model/model_spec.hpp"

namespace opmeter::model {
namespace {

const pipeline::PipelineDef& pipeline_def(const std::string& name) {
  const pipeline::PipelineDef* def = pipeline::Registry::global().find(name);
  if (!def) {
    std::vector<std::string> known;
    for (const auto* d : pipeline::Registry::global().all()) known.push_back(d->name);
    throw CaseError(fmt::format("model name='{}' is not a built-in pipeline; known: {}", name, fmt::join(known, ", ")));
  }
  return *def;
}

// The model's cost: the pipeline's pass over the scale its model declares (OPT: one layer of 64).
ModelCost cost(const Case& c) {
  const auto p = model_pipeline(c);
  const double part = 1 / pipeline_def(p.name).end_to_end_scale;
  return {p.total_params() * part, p.total_macs() * part};
}

Work work(const Case& c) {
  const ModelCost m = cost(c);
  ModelSpec tensors;  // what the worker's model reads and writes besides its weights
  tensors.bind(c);
  double input_bytes = 0;
  for (auto& in : tensors.inputs()) input_bytes += double(in.bytes());
  return {2 * m.macs, m.params * double(size_of(c.dtype)) + input_bytes, double(tensors.output().bytes())};
}

void validate(const Case& c) {
  tensor::check_range(c, "batch", 1, 1 << 16);
  tensor::check_range(c, "image", 1, 1 << 14);
  tensor::check_range(c, "seq", 1, 1 << 20);
  tensor::check_range(c, "kv", 0, 1 << 24);
  model_pipeline(c);
}

OpDef def() {
  OpDef op = tensor::shaped_op(
      "model", "a built-in pipeline's model end to end in PyTorch (worker impls; OPT-66B: one decoder layer)",
      {{"name", "resnet18"}, {"batch", "1"}, {"image", "224"}, {"seq", "128"}, {"kv", "0"}},
      {{"name", "resnet18"}, {"batch", "1"}, {"image", "32"}, {"seq", "8"}, {"kv", "0"}}, work, validate);
  op.model_cost = cost;
  op.spec = [] { return std::make_unique<ModelSpec>(); };  // the worker checks the values
  op.check_shapes = {op.example};  // a whole model: its smallest form only
  return op;
}
const OpRegistrar reg(def());

// A built-in pipeline end to end: this op in PyTorch with the pipeline's values.
Case end_to_end(const pipeline::Pipeline& p, const Case& like) {
  Case m = like;
  m.op = "model";
  m.impl = "torch";
  m.dtype = p.dtype;
  m.label = p.name + ": end to end (PyTorch)";
  drop_launch_batching(m);  // a whole model is no small kernel: timed as PyTorch runs it
  for (const auto& [key, value] : Registry::global().op("model")->defaults) {
    auto given = std::find_if(p.params.begin(), p.params.end(), [&](const auto& kv) { return kv.first == key; });
    m.params.emplace_back(key, key == "name" ? p.name : given != p.params.end() ? given->second : value);
  }
  return m;
}
const pipeline::EndToEndRegistrar end_to_end_reg(end_to_end);

}  // namespace

// Built from the parameters the pipeline takes (batch, image, seq, kv; kv=0: its default).
pipeline::Pipeline model_pipeline(const Case& c) {
  const auto& def = pipeline_def(c.get("name"));
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& [key, value] : def.defaults)
    if (c.has(key) && !(key == "kv" && c.get(key) == "0")) given.emplace_back(key, c.get(key));
  return pipeline::build(def.name, given, c.dtype);
}

}  // namespace opmeter::model
