#include "ops/model/model_spec.hpp"

namespace opmeter::model {

void ModelSpec::bind(const Case& c) {
  case_ = c;
  const auto p = model_pipeline(c);
  in_ = p.model_input;
  out_ = p.model_output;
}

Elem ModelSpec::act() const {
  return case_.dtype == DType::bf16 ? Elem::bf16 : case_.dtype == DType::fp16 ? Elem::f16 : Elem::f32;
}

std::vector<TensorDesc> ModelSpec::inputs() const { return {{in_.name, act(), std::size_t(in_.elements)}}; }

TensorDesc ModelSpec::output() const { return {out_.name, act(), std::size_t(out_.elements)}; }

double ModelSpec::tolerance() const {
  return case_.dtype == DType::bf16 ? 5e-2 : case_.dtype == DType::fp16 ? 1e-2 : 1e-4;
}

}  // namespace opmeter::model
