// The model op: a built-in pipeline's model run end to end by PyTorch in the worker (impls
// `torch`, `torch_compile`), beside the sum of its layers measured one by one. Its work is the
// pipeline's: 2 x its MACs, its weights read once, the input read and the output written.
// OPT-66B's pipelines are one decoder layer counted 64 times; the model is that one layer.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "opmeter/pipeline.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"
#include "ops/model/model_spec.hpp"

namespace opmeter::model {
namespace {

// The pipeline this case's model is, built from the parameters it takes (batch, image, seq, kv).
pipeline::Pipeline pipeline_of(const Case& c) {
  const auto& name = c.get("name");
  const pipeline::PipelineDef* def = pipeline::Registry::global().find(name);
  if (!def) {
    std::vector<std::string> known;
    for (const auto* d : pipeline::Registry::global().all()) known.push_back(d->name);
    throw CaseError(fmt::format("model name='{}' is not a built-in pipeline; known: {}", name, fmt::join(known, ", ")));
  }
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& [key, value] : def->defaults)
    if (c.has(key) && !(key == "kv" && c.get(key) == "0")) given.emplace_back(key, c.get(key));
  return pipeline::build(name, given, c.dtype);
}

Work work(const Case& c) {
  const auto p = pipeline_of(c);
  const double per_layer = p.name.starts_with("opt_66b") ? 1.0 / 64 : 1.0;
  const double weights = p.total_params() * per_layer * double(size_of(c.dtype));
  return {2 * p.total_macs() * per_layer, weights, 0};
}

void validate(const Case& c) {
  tensor::check_range(c, "batch", 1, 1 << 16);
  tensor::check_range(c, "image", 1, 1 << 14);
  tensor::check_range(c, "seq", 1, 1 << 20);
  tensor::check_range(c, "kv", 0, 1 << 24);
  pipeline_of(c);
}

OpDef def() {
  OpDef op = tensor::shaped_op(
      "model", "a built-in pipeline's model end to end in PyTorch (worker impls; OPT-66B: one decoder layer)",
      {{"name", "resnet18"}, {"batch", "1"}, {"image", "224"}, {"seq", "128"}, {"kv", "0"}},
      {{"name", "resnet18"}, {"batch", "1"}, {"image", "32"}, {"seq", "8"}, {"kv", "0"}}, work, validate);
  op.model_cost = [](const Case& c) {
    const auto p = pipeline_of(c);
    const double per_layer = p.name.starts_with("opt_66b") ? 1.0 / 64 : 1.0;
    return ModelCost{p.total_params() * per_layer, p.total_macs() * per_layer};
  };
  op.spec = [] { return std::make_unique<ModelSpec>(); };  // the worker checks the values
  op.check_shapes = {op.example};  // a whole model: its smallest form only
  return op;
}
const OpRegistrar reg(def());

}  // namespace
}  // namespace opmeter::model
