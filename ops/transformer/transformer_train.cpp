// transformer_block's training step: output layout, work models, parameters.
#include "ops/transformer/transformer_train.hpp"

#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/train_params.hpp"
#include "ops/linear/quant/recipe.hpp"
#include "opmeter/errors.hpp"

namespace opmeter::transformer {
namespace {
const char* const kGradNames[kBlockInputs] = {"dx",   "dln1_gamma", "dln1_beta", "dwqkv", "dbqkv", "dwo", "dbo",
                                              "dln2_gamma", "dln2_beta", "dw1", "db1", "dw2", "db2"};
}

bool training(const Case& c) { return linear::training(c); }

std::array<std::size_t, kBlockInputs> input_counts(const Shape& s) {
  const std::size_t r = s.rows(), h = s.hidden, m = s.mlp;
  return {r * h, h, h, 3 * h * h, 3 * h, h * h, h, h, h, m * h, m, h * m, h};
}

TrainLayout train_layout(const Shape& s) {
  TrainLayout l;
  std::size_t at = s.rows() * s.hidden;
  auto counts = input_counts(s);
  for (std::size_t i = 0; i < kBlockInputs; ++i) {
    l.grad[i] = at;
    at += counts[i];
  }
  l.total = at;
  return l;
}

std::string TrainLayout::name_at(std::size_t element) const {
  std::string name = "y";
  for (std::size_t i = 0; i < kBlockInputs; ++i)
    if (element >= grad[i]) name = kGradNames[i];
  return name;
}

std::size_t TrainLayout::index_in(std::size_t element) const {
  std::size_t start = y;
  for (std::size_t i = 0; i < kBlockInputs; ++i)
    if (element >= grad[i]) start = grad[i];
  return element - start;
}

// The inference forward, and what it keeps for the backward (train_backward_work reads them back):
// LN1(x), qkv, o, h, LN2(h), u and act(u).
Work train_forward_work(const Case& c) {
  Case inference = c;
  std::erase_if(inference.params, [](auto& kv) { return kv.first == linear::kMode || kv.first == linear::kPhase; });
  Work w = fused_work(inference);
  const auto s = shape_of(c);
  const double r = double(s.rows()), h = double(s.hidden), m = double(s.mlp), e = double(size_of(c.dtype));
  w.bytes_written += (7 * r * h + 2 * r * m) * e;
  return w;
}

Work train_backward_work(const Case& c) {
  const auto s = shape_of(c);
  const double r = double(s.rows()), h = double(s.hidden), m = double(s.mlp), e = double(size_of(c.dtype));
  const double bh = double(s.batch * s.heads), n = double(s.seq), d = double(s.head_dim());
  Work w;
  const double gemms = 2 * r * h * (3 * h) + 2 * r * h * h + 4 * r * h * m;
  w.flops = 2 * gemms                                     // dA and dW of the four projections
            + bh * (8 * n * n * d + 3 * n * n + 2 * n * d)  // attention: four products, softmax' (causal as square)
            + 2 * 12 * r * h                              // two LayerNorms' backward
            + r * (3 * h + h + m + h)                     // bias gradients
            + 2 * r * m                                   // act'(u) and its product
            + 2 * r * h;                                  // residual gradients added
  // The fp32 vectors: LayerNorms' gamma and beta (2 x 2h), bqkv (3h), bo (h), b1 (mlp), b2 (h).
  const double weights = h * (4 * h + 2 * m), vectors = 2 * 2 * h + 3 * h + h + m + h;
  // Read: dy, the weights, the forward's saved tensors (x, LN1(x), qkv (3 rh), o, h, LN2(h), u,
  // act(u)) and the gammas (the backward reads no bias or beta). Written: the gradients of x, of
  // the weights and of the fp32 vectors.
  w.bytes_read = r * h * e + weights * e + (8 * r * h + 2 * r * m) * e + 2 * h * 4;
  w.bytes_written = r * h * e + weights * e + vectors * 4;
  return w;
}

Work train_work(const Case& c) {
  switch (linear::phase_of(c)) {
    case linear::Phase::forward: return train_forward_work(c);
    case linear::Phase::backward: return train_backward_work(c);
    case linear::Phase::step: break;
  }
  Work f = train_forward_work(c), b = train_backward_work(c);
  return {f.flops + b.flops, f.bytes_read + b.bytes_read, f.bytes_written + b.bytes_written};
}

std::vector<OptionalParam> train_params() {
  std::vector<OptionalParam> out = {{.key = linear::kMode, .config_key = "mode", .absent = "inference",
                                     .help = "inference, or train: forward + backward of the whole block",
                                     .values = {"inference", linear::kTrain}}};
  for (auto& p : linear::training_params())
    if (p.key == linear::kPhase) out.push_back(p);
  return out;
}

void validate_train(const Case& c) {
  linear::validate_training_params(c);
  if (training(c) && linear::recipe_of(c) != quant::kBaseline)
    throw CaseError(fmt::format("{}={} has no training step on transformer_block: {}={} runs the block unquantized",
                                linear::kQuant, linear::recipe_of(c), linear::kMode, linear::kTrain));
}

}  // namespace opmeter::transformer
