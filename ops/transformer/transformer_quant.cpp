// transformer_block with a weight-only recipe: Gaussian weights, the fp64 gate with the recipe's
// stored weights, and SQNR of the block's update against the unquantized block.
#include "ops/transformer/transformer_quant.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/linear/quant_linear.hpp"

namespace opmeter::transformer {

bool quantized(const Case& c) { return linear::recipe_of(c) != quant::kBaseline; }

quant::Recipe recipe_of_case(const Case& c) {
  auto r = quant::parse_recipe(linear::recipe_of(c));
  if (!r) throw std::runtime_error(fmt::format("unknown quantization recipe '{}'", linear::recipe_of(c)));
  return *r;
}

std::string recipe_problem(const Case& c) {
  auto r = quant::parse_recipe(linear::recipe_of(c));
  if (!r) return fmt::format("unknown: expected one of {}", fmt::join(quant::recipe_names(), ", "));
  if (r->baseline() || linear::training(c)) return "";  // a training step's recipe: transformer_train.cpp says
  if (r->dynamic())
    return "transformer_block takes weight-only recipes (int8wo, float8wo, int4wo-G, hqq-int4-G): its activations "
           "stay in the case's dtype";
  const auto s = shape_of(c);
  if (auto why = quant::recipe_problem(*r, s.hidden); !why.empty()) return why;
  if (auto why = quant::recipe_problem(*r, s.mlp, "mlp"); !why.empty()) return why;  // W2's inputs
  return "";
}

double quantized_weight_bytes(const Case& c) {
  const auto s = shape_of(c);
  const auto r = recipe_of_case(c);
  const double scale = size_of(c.dtype) == 2 ? 2 : 4, h = double(s.hidden), m = double(s.mlp);
  // (out, in) of Wqkv, Wo, W1, W2.
  const double shapes[4][2] = {{3 * h, h}, {h, h}, {m, h}, {h, m}};
  double bytes = 0;
  for (auto& [out, in] : shapes) {
    const double n = out * in;
    if (r.weights == quant::WeightFormat::int4)
      bytes += n / 2 + 2 * scale * n / double(r.group);
    else
      bytes += n + scale * out;
  }
  return bytes;
}

std::vector<TensorDesc> QuantTransformerBlockOp::inputs() const {
  auto v = TransformerBlockOp::inputs();
  // Normal, mean 0 and standard deviation 1/sqrt(fan_in): the uniform's bound (lo, hi) kept.
  for (std::size_t k : kWeights) v[k].normal = true;
  return v;
}

const quant::QuantizedWeights& QuantTransformerBlockOp::quantized_weights(const HostTensors& in, std::size_t which) const {
  const auto h = linear::inputs_hash(in, {which});
  std::lock_guard lock(mutex_);
  auto& slot = weights_[which];
  if (slot.second && slot.first == h) return *slot.second;
  const auto s = shape_of(case_);
  const std::size_t out = which == kWqkv ? 3 * s.hidden : which == kW1 ? s.mlp : s.hidden;
  const std::size_t fan_in = which == kW2 ? s.mlp : s.hidden;
  std::vector<float> w(out * fan_in);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(in[which][i]);
  slot = {h, std::make_shared<quant::QuantizedWeights>(quant::quantize_weights(recipe_of_case(case_), w.data(), out, fan_in,
                                                                              scale_elem()))};
  return *slot.second;
}

std::vector<double> QuantTransformerBlockOp::weight_values(const HostTensors& in, std::size_t which) const {
  const auto& q = quantized_weights(in, which);
  std::vector<double> v(q.out * q.hidden);
  for (std::size_t j = 0; j < q.out; ++j)
    for (std::size_t k = 0; k < q.hidden; ++k) v[j * q.hidden + k] = q.weight(j, k);
  return v;
}

Check QuantTransformerBlockOp::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  Check gate = TensorOp::check(in, out, seed);
  if (std::isinf(gate.max_error) && !gate.ok) return gate;  // unwritten or NaN output: nothing to measure
  const auto rows = check_rows(seed);
  const std::size_t h = shape_of(case_).hidden;
  // The reference calls back from several threads: keep each row's values, then sum in order.
  std::vector<double> refs(rows.size() * h);
  reference_rows_of(in, rows, [&](std::size_t i, const double* ref, const double*) {
    std::copy(ref, ref + h, refs.begin() + static_cast<std::ptrdiff_t>(i * h));
  }, false);
  quant::Sqnr update, total;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t c = 0; c < h; ++c) {
      const double x = in[kX][rows[i] * h + c], got = out[rows[i] * h + c], ref = refs[i * h + c];
      update.add(got - x, ref - x);
      total.add(got, ref);
    }
  gate.metrics["sqnr_db"] = Metric{update.db(), "dB", Better::higher, MetricFormat::number};
  gate.metrics["max_abs_error"] = Metric{total.max_abs_error, "", Better::lower, MetricFormat::number};
  return gate;
}

}  // namespace opmeter::transformer
