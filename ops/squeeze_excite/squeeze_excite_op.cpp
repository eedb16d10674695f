// The squeeze_excite op: y = x * gate(W2 act(W1 mean_hw(x) + b1) + b2) per (sample, channel),
// NCHW; W1 is reduced x channels, W2 channels x reduced. Parameters, validation, work model and
// model cost; registers the spec (squeeze_excite.hpp) and its fp64 reference impl with it.
#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"
#include "ops/squeeze_excite/squeeze_excite.hpp"

namespace opmeter::squeeze_excite {
namespace {

using tensor::check_range;
using tensor::param;

// The mean (1 add per element), the scale (1 multiply per element) and the two small FCs; x read
// once and y written (the ideal: the mean pass may read x twice).
Work work(const Case& c) {
  const double n = double(param(c, "batch")), ch = double(param(c, "channels")), r = double(param(c, "reduced"));
  const double elems = n * ch * double(param(c, "image") * param(c, "image")), e = double(size_of(c.dtype));
  const double weights = 2 * ch * r + r + ch;
  return {2 * elems + 4 * n * ch * r, elems * e + weights * 4, elems * e};
}

void validate(const Case& c) {
  check_range(c, "batch", 1, 1 << 16);
  check_range(c, "channels", 1, 1 << 16);
  check_range(c, "image", 1, 1 << 14);
  check_range(c, "reduced", 1, 1 << 16);
  const auto& act = c.get("act");
  if (act != "relu" && act != "silu") throw CaseError(fmt::format("squeeze_excite act='{}' unknown: expected relu or silu", act));
  const auto& gate = c.get("gate");
  if (gate != "sigmoid" && gate != "hardsigmoid")
    throw CaseError(fmt::format("squeeze_excite gate='{}' unknown: expected sigmoid or hardsigmoid", gate));
}

OpDef def() {
  OpDef op = tensor::shaped_op(
      "squeeze_excite", "squeeze-and-excitation: channel means, two small FCs, a gate scaling each channel (NCHW)",
      {{"batch", "1"}, {"channels", "96"}, {"image", "14"}, {"reduced", "24"}, {"act", "relu"}, {"gate", "hardsigmoid"}},
      {{"batch", "2"}, {"channels", "6"}, {"image", "5"}, {"reduced", "3"}, {"act", "silu"}, {"gate", "sigmoid"}}, work,
      validate);
  op.model_cost = [](const Case& c) {
    const double ch = double(param(c, "channels")), r = double(param(c, "reduced"));
    return ModelCost{2 * ch * r + r + ch, 2 * double(param(c, "batch")) * ch * r};
  };
  // `opmeter check`: odd channels and planes, both gates and acts, one element.
  auto se = [](int batch, int channels, int image, int reduced, const char* act, const char* gate) -> Params {
    return {{"batch", std::to_string(batch)}, {"channels", std::to_string(channels)}, {"image", std::to_string(image)},
            {"reduced", std::to_string(reduced)}, {"act", act}, {"gate", gate}};
  };
  op.check_shapes = {op.example, se(1, 97, 7, 13, "relu", "hardsigmoid"), se(3, 17, 3, 5, "silu", "hardsigmoid"),
                     se(1, 1, 1, 1, "relu", "sigmoid")};
  return op;
}
// The op, then its spec: set_spec needs the op registered (same file: no order across files).
const bool registered = [] {
  Registry::global().add(def());
  tensor::register_reference<SqueezeExciteOp>("squeeze_excite", {DType::fp32, DType::bf16}, [](const Case& c) {
    const Shape s = shape_of(c);
    return 3.0 * double(s.planes()) * double(s.hw) + 4.0 * double(s.n) * double(s.c) * double(s.r);
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::squeeze_excite
