// The quantized linear layer's spec: Gaussian weights, the recipe's exact fp64 output (the gate)
// and what the recipe costs: its product x W^T against the unquantized one (sqnr_db, max_abs_error).
#include "ops/linear/quant_linear.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/norm/layernorm_reference.hpp"

namespace opmeter::linear {
namespace {

// A content hash of tensors (weights, activations): identical inputs share their quantization.
std::uint64_t content_hash(const HostTensors& in, std::initializer_list<std::size_t> which) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i : which) {
    if (i >= in.size()) continue;
    const auto* p = static_cast<const unsigned char*>(in[i].data());
    const std::size_t n = in[i].bytes(), words = n / 8;
    for (std::size_t w = 0; w < words; ++w) {
      std::uint64_t v;
      std::memcpy(&v, p + 8 * w, 8);
      h = (h ^ v) * 0x100000001b3ull;
      h ^= h >> 29;
    }
    for (std::size_t b = words * 8; b < n; ++b) h = (h ^ p[b]) * 0x100000001b3ull;
    h = (h ^ n) * 0x9e3779b97f4a7c15ull;
  }
  return h;
}

// The layer's input row in fp64: x, or LayerNorm(x) computed in fp64.
std::vector<double> normalized_row(const HostTensors& in, const Shape& s, std::size_t row, std::size_t kx, const float* gamma,
                                   const float* beta) {
  std::vector<double> x(s.hidden);
  for (std::size_t k = 0; k < s.hidden; ++k) x[k] = in[kx][row * s.hidden + k];
  if (!s.layernorm) return x;
  norm::layernorm_row(x.data(), s.hidden, x.data());
  for (std::size_t k = 0; k < s.hidden; ++k) x[k] = x[k] * gamma[k] + beta[k];
  return x;
}

}  // namespace

std::uint64_t inputs_hash(const HostTensors& in, std::initializer_list<std::size_t> which) { return content_hash(in, which); }

std::vector<TensorDesc> QuantLinearOp::inputs() const {
  auto v = LinearOp::inputs();
  const double sd = 1 / std::sqrt(double(shape_of(case_).hidden));
  v[kW].lo = -sd;
  v[kW].hi = sd;
  v[kW].normal = true;
  return v;
}

quant::Recipe QuantLinearOp::recipe() const {
  auto r = quant::parse_recipe(recipe_of(case_));
  if (!r) throw std::runtime_error(fmt::format("unknown quantization recipe '{}'", recipe_of(case_)));
  return *r;
}

std::string QuantLinearOp::held_as(std::size_t input) const {
  if (input == kW) return quant::weights_held_as(recipe());
  return input == kX ? quant::activations_held_as(recipe()) : "";
}

double QuantLinearOp::tolerance() const {
  // A kernel computes LayerNorm (or its activations' scale) in fp32: where the fp64 value lies
  // within rounding of a code boundary it may pick the neighbouring code. Allow a couple of such
  // flips per row: one costs about (amax / code range) * |w_k| against mag ~ hidden * E|x w|.
  const auto r = recipe();
  const double h = double(shape_of(case_).hidden);
  double flips = 0;
  if (r.activations == quant::ActivationFormat::int8_per_token) flips = 2 * 20.0 / (quant::kInt8Max * h);
  if (r.activations == quant::ActivationFormat::fp8_per_row || r.activations == quant::ActivationFormat::fp8_per_tensor)
    flips = 2 * 20.0 / (16 * h);
  return LinearOp::tolerance() + flips;
}

const quant::QuantizedWeights& QuantLinearOp::quantized_weights(const HostTensors& in) const {
  const auto h = content_hash(in, {kW});
  std::lock_guard lock(mutex_);
  if (weights_ && weights_hash_ == h) return *weights_;
  const auto s = shape_of(case_);
  const std::size_t n = s.out * s.hidden;
  std::vector<float> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = static_cast<float>(in[kW][i]);
  weights_ = std::make_shared<quant::QuantizedWeights>(quant::quantize_weights(recipe(), w.data(), s.out, s.hidden, scale_elem()));
  weights_hash_ = h;
  return *weights_;
}

std::vector<double> QuantLinearOp::activation_row(const HostTensors& in, std::size_t row) const {
  const auto s = shape_of(case_);
  const float* gamma = s.layernorm ? vec(in, kGamma) : nullptr;
  const float* beta = s.layernorm ? vec(in, kBeta) : nullptr;
  std::vector<double> x = normalized_row(in, s, row, kX, gamma, beta);
  const auto r = recipe();
  if (!r.dynamic()) return x;
  // The kernels quantize fp32 activations: so does the reference (the same codes and scale).
  std::vector<float> xf(x.begin(), x.end());
  std::vector<std::uint8_t> codes(s.hidden);
  float scale = 1;
  if (r.activations == quant::ActivationFormat::fp8_per_tensor) {
    // One scale over every row: quantize the whole tensor once per distinct input.
    const auto h = content_hash(in, {kX, kGamma, kBeta});
    std::lock_guard lock(mutex_);
    if (tensor_scale_hash_ != h || tensor_codes_.size() != s.rows * s.hidden) {
      std::vector<float> all(s.rows * s.hidden);
      for (std::size_t i = 0; i < s.rows; ++i) {
        auto xi = normalized_row(in, s, i, kX, gamma, beta);
        for (std::size_t k = 0; k < s.hidden; ++k) all[i * s.hidden + k] = static_cast<float>(xi[k]);
      }
      tensor_codes_.assign(all.size(), 0);
      quant::quantize_activations(r, all.data(), s.rows, s.hidden, tensor_codes_.data(), &tensor_scale_);
      tensor_scale_hash_ = h;
    }
    std::memcpy(codes.data(), tensor_codes_.data() + row * s.hidden, s.hidden);
    scale = tensor_scale_;
  } else {
    quant::quantize_activations(r, xf.data(), 1, s.hidden, codes.data(), &scale);
  }
  for (std::size_t k = 0; k < s.hidden; ++k) x[k] = quant::activation_code_value(r, codes[k]) * double(scale);
  return x;
}

void QuantLinearOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  const auto s = shape_of(case_);
  const auto r = recipe();
  if (r.baseline()) return LinearOp::reference_row(in, row, ref, mag);
  const auto& qw = quantized_weights(in);
  const std::vector<double> x = activation_row(in, row);
  std::vector<double> w(s.hidden);
  for (std::size_t j = 0; j < s.out; ++j) {
    for (std::size_t k = 0; k < s.hidden; ++k) w[k] = qw.weight(j, k);
    double z = vec(in, kBias)[j], m = std::fabs(z);
    for (std::size_t k = 0; k < s.hidden; ++k) {
      const double p = x[k] * w[k];
      z += p;
      m += std::fabs(p);
    }
    ref[j] = activation::reference(s.act, z);
    mag[j] = 1.2 * m + 1e-6;
  }
}

void QuantLinearOp::product_row(const HostTensors& in, std::size_t row, double* exact, double* quantized) const {
  const auto s = shape_of(case_);
  const float* gamma = s.layernorm ? vec(in, kGamma) : nullptr;
  const float* beta = s.layernorm ? vec(in, kBeta) : nullptr;
  const std::vector<double> x = normalized_row(in, s, row, kX, gamma, beta);
  const std::vector<double> xq = activation_row(in, row);
  const quant::QuantizedWeights* qw = recipe().baseline() ? nullptr : &quantized_weights(in);
  for (std::size_t j = 0; j < s.out; ++j) {
    double z = 0, zq = 0;
    for (std::size_t k = 0; k < s.hidden; ++k) {
      const double w = in[kW][j * s.hidden + k];
      z += x[k] * w;
      zq += xq[k] * (qw ? qw->weight(j, k) : w);
    }
    exact[j] = z;
    quantized[j] = zq;
  }
}

Check QuantLinearOp::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  if (training(case_)) return LinearOp::check(in, out, seed);  // the step's gradients (linear_train_check.cpp)
  Check gate = TensorOp::check(in, out, seed);
  if (std::isinf(gate.max_error) && !gate.ok) return gate;  // unwritten or NaN output: nothing to measure
  // The recipe's cost: its product x W^T against the unquantized one over the same rows.
  const auto rows = check_rows(seed);
  const std::size_t cols = out_cols();
  std::vector<quant::Sqnr> parts(rows.size());
#pragma omp parallel
  {
    std::vector<double> exact(cols), quantized(cols);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t p = 0; p < rows.size(); ++p) {
      product_row(in, rows[p], exact.data(), quantized.data());
      for (std::size_t c = 0; c < cols; ++c) parts[p].add(quantized[c], exact[c]);
    }
  }
  quant::Sqnr total;
  for (auto& p : parts) total.merge(p);
  gate.metrics["sqnr_db"] = Metric{total.db(), "dB", Better::higher, MetricFormat::number};
  gate.metrics["max_abs_error"] = Metric{total.max_abs_error, "", Better::lower, MetricFormat::number};
  return gate;
}

}  // namespace opmeter::linear
