#include "ops/model/model_spec.hpp"

#include "opmeter/tensor_op.hpp"

namespace opmeter::model {

bool ModelSpec::opt() const { return case_.get("name").starts_with("opt_"); }

std::size_t ModelSpec::tokens() const {
  return case_.get("name") == "opt_66b_decode" ? 1 : tensor::param(case_, "seq");
}

Elem ModelSpec::act() const {
  return case_.dtype == DType::bf16 ? Elem::bf16 : case_.dtype == DType::fp16 ? Elem::f16 : Elem::f32;
}

std::vector<TensorDesc> ModelSpec::inputs() const {
  const std::size_t batch = tensor::param(case_, "batch");
  if (opt()) return {{"hidden", act(), batch * tokens() * kOptHidden}};
  const std::size_t image = tensor::param(case_, "image");
  return {{"image", act(), batch * 3 * image * image}};
}

TensorDesc ModelSpec::output() const {
  const std::size_t batch = tensor::param(case_, "batch");
  if (opt()) return {"hidden_out", act(), batch * tokens() * kOptHidden};
  return {"logits", act(), batch * kClasses};
}

double ModelSpec::tolerance() const {
  return case_.dtype == DType::bf16 ? 5e-2 : case_.dtype == DType::fp16 ? 1e-2 : 1e-4;
}

}  // namespace opmeter::model
