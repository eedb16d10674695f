// transformer_block's training step checked against fp64: y on the forward check's sampled rows
// (TransformerBlockOp::reference_rows, its metric and tolerance), and every element of every
// gradient against the whole block's backward in fp64 (transformer_train_reference.hpp) while
// that fits kWholeBudget; above it the four weight gradients on kSampledRows sampled rows each
// (first and last among them) and the rest whole while that fits kBackwardBudget; above that the
// gradients are left unchecked. The detail says which.
// Metric: |got - ref| / mag, mag the sum of |terms| that made the value.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "opmeter/buffer.hpp"
#include "opmeter/shapes.hpp"
#include "ops/transformer/transformer_train.hpp"
#include "ops/transformer/transformer_train_reference.hpp"

namespace opmeter::transformer {
namespace {
// fp64 operations of the backward reference (values and magnitudes) a check may spend: whole,
// or with the weight gradients sampled.
constexpr double kWholeBudget = double(std::int64_t{1} << 34);
constexpr double kBackwardBudget = double(std::int64_t{1} << 37);
constexpr std::size_t kSampledRows = 16;

struct Worst {
  double err = -1, got = 0, ref = 0;
  std::size_t i = 0;
  void take(double g, double r, double mag, std::size_t index) {
    double e = g == r ? 0.0 : std::fabs(g - r) / (mag > 0 ? mag : 1.0);
    if (!(e <= err)) *this = {e, g, r, index};
  }
};
}  // namespace

double train_gradient_tolerance(const Case& c) {
  const auto s = shape_of(c);
  // The longest reduction (over rows for dW, over hidden, mlp or seq elsewhere) as for linear's
  // step; 16-bit storage rounds each stage's output (u |value| <= u |terms|), nine stages deep at
  // most between dy and a gradient's last sum: dy -> da, du, dxhat2, dh, do, then P or dS (the
  // attention backward's products read them rounded to 16 bits, as FlashAttention's does), dqkv,
  // dxhat1, dx.
  const double n = double(std::max({s.rows(), s.hidden, s.mlp, s.seq}));
  const double storage = c.dtype == DType::bf16 ? 0x1p-8 : c.dtype == DType::fp16 ? 0x1p-11 : 0x1p-23;
  return 9 * storage + (64 + 8 * std::sqrt(n)) * 0x1p-24;
}

Check TransformerBlockOp::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  if (!training(case_)) return TensorOp::check(in, out, seed);
  return check_train(in, out, seed, kWholeBudget);
}

Check TransformerBlockOp::check_train(const HostTensors& in, const HostTensor& out, std::uint64_t seed,
                                      double whole_budget) const {
  const auto s = shape_of(case_);
  const TrainLayout l = train_layout(s);
  Check check;
  for (std::size_t i = 0; i < l.total; ++i) {
    if (!std::isnan(out[i])) continue;
    check.max_error = std::numeric_limits<double>::infinity();
    check.detail = fmt::format("training output {}[{}] (element {} of the step's output) was not written (still poisoned) or is NaN",
                               l.name_at(i), l.index_in(i), i);
    return check;
  }
  // y: the forward's rows, metric and tolerance.
  const std::size_t h = s.hidden;
  const auto rows = check_rows(seed);
  std::vector<Worst> row_worst(rows.size());
  reference_rows(in, rows, [&](std::size_t p, const double* ref, const double* mag) {
    for (std::size_t c = 0; c < h; ++c) row_worst[p].take(out[rows[p] * h + c], ref[c], mag[c], rows[p] * h + c);
  });
  Worst y;
  for (auto& w : row_worst)
    if (!(w.err <= y.err)) y = w;
  const double y_tol = tolerance();

  const double grad_tol = train_gradient_tolerance(case_);
  const bool whole = train_reference_cost(s) <= whole_budget;
  const bool affordable = whole || train_reference_cost(s, kSampledRows) <= kBackwardBudget;
  WeightRows picks;
  if (!whole)
    picks = {sample_indices_with_edges(3 * h, kSampledRows, seed ^ 0x9c7), sample_indices_with_edges(h, kSampledRows, seed ^ 0x90),
             sample_indices_with_edges(s.mlp, kSampledRows, seed ^ 0x71), sample_indices_with_edges(h, kSampledRows, seed ^ 0x72)};
  Worst g;
  if (affordable) {
    const TrainReference ref(s, in, act(), grad_tol, y_tol, picks);
    for (std::size_t i = l.grad[0]; i < l.total; ++i)
      if (!std::isnan(ref.value(i - l.grad[0]))) g.take(out[i], ref.value(i - l.grad[0]), ref.mag(i - l.grad[0]), i);
  }
  const std::string grads =
      whole        ? "every gradient of every input whole"
      : affordable ? fmt::format("dwqkv, dwo, dw1, dw2 on {} sampled rows each (first and last among them), the other "
                                 "gradients whole (fp64 backward whole above the check's budget)",
                                 kSampledRows)
                   : "gradients unchecked at this size (fp64 backward above the check's budget)";
  // Each part against its own tolerance: the worst of both as a share of it, in y's units.
  const double y_share = y.err / y_tol, g_share = affordable ? g.err / grad_tol : -1;
  const bool grad_worse = g_share > y_share;
  const Worst& w = grad_worse ? g : y;
  check.tolerance = grad_worse ? grad_tol : y_tol;
  check.max_error = w.err;
  check.ok = y.err <= y_tol && (!affordable || g.err <= grad_tol);
  check.detail = fmt::format(
      "training step: max scaled error {:.3g} in {}[{}] (got {:.7g}, expected {:.7g}); y over {} rows (tolerance {:.3g}), "
      "{} (tolerance {:.3g})",
      w.err, l.name_at(w.i), l.index_in(w.i), w.got, w.ref, rows.size(), y_tol,
      grads, grad_tol);
  return check;
}

}  // namespace opmeter::transformer
