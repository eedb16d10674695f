// squeeze_excite's spec: inputs, the fp64 reference (gates once per sample) and its error scale.
#include "ops/squeeze_excite/squeeze_excite.hpp"

#include <algorithm>
#include <cmath>

namespace opmeter::squeeze_excite {

Shape shape_of(const Case& c) {
  using tensor::param;
  const std::size_t image = param(c, "image");
  return {param(c, "batch"), param(c, "channels"), image * image, param(c, "reduced"),
          c.get("act") == "silu" ? Act::silu : Act::relu, c.get("gate") == "sigmoid" ? Gate::sigmoid : Gate::hardsigmoid};
}

double act_ref(Act a, double z) { return a == Act::relu ? std::max(z, 0.0) : z / (1 + std::exp(-z)); }
double gate_ref(Gate g, double z) {
  return g == Gate::sigmoid ? 1 / (1 + std::exp(-z)) : std::clamp(z + 3, 0.0, 6.0) / 6;
}

std::vector<TensorDesc> SqueezeExciteOp::inputs() const {
  auto s = shape_of(case_);
  // x has a positive mean so that the channel means matter; weights as a default init scales
  // them (+-1/sqrt(fan_in), doubled), so that the gates stay away from saturation.
  const double w1 = 2 / std::sqrt(double(s.c)), w2 = 2 / std::sqrt(double(s.r));
  return {{"x", act(), s.planes() * s.hw, -1, 2},
          {"w1", Elem::f32, s.r * s.c, -w1, w1},
          {"b1", Elem::f32, s.r, -0.5, 0.5},
          {"w2", Elem::f32, s.c * s.r, -w2, w2},
          {"b2", Elem::f32, s.c, -0.5, 0.5}};
}

double SqueezeExciteOp::fp32_tolerance() const {
  auto s = shape_of(case_);
  return (64 + 8 * std::sqrt(double(s.hw + s.c + s.r))) * 0x1p-24;
}

double SqueezeExciteOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return 3.0 * double(s.hw) + 2.0 * double(s.r);  // the sample's means and FCs shared by its C rows
}

void SqueezeExciteOp::sample_gates(const HostTensors& in, std::size_t n, double* g, double* zmag) const {
  auto s = shape_of(case_);
  std::vector<double> mean(s.c), mean_abs(s.c), a(s.r), amag(s.r);
  for (std::size_t c = 0; c < s.c; ++c) {
    double sum = 0, sum_abs = 0;
    for (std::size_t i = 0, base = (n * s.c + c) * s.hw; i < s.hw; ++i) {
      sum += in[kX][base + i];
      sum_abs += std::fabs(in[kX][base + i]);
    }
    mean[c] = sum / double(s.hw);
    mean_abs[c] = sum_abs / double(s.hw);
  }
  const float *w1 = vec(in, kW1), *b1 = vec(in, kB1), *w2 = vec(in, kW2), *b2 = vec(in, kB2);
  for (std::size_t k = 0; k < s.r; ++k) {
    double z = b1[k], m = std::fabs(b1[k]);
    for (std::size_t c = 0; c < s.c; ++c) {
      z += double(w1[k * s.c + c]) * mean[c];
      m += std::fabs(w1[k * s.c + c]) * mean_abs[c];
    }
    a[k] = act_ref(s.act, z);
    amag[k] = 1.1 * m;  // silu's slope is below 1.1
  }
  for (std::size_t c = 0; c < s.c; ++c) {
    double z = b2[c], m = std::fabs(b2[c]);
    for (std::size_t k = 0; k < s.r; ++k) {
      z += double(w2[c * s.r + k]) * a[k];
      m += std::fabs(w2[c * s.r + k]) * amag[k];
    }
    g[c] = gate_ref(s.gate, z);
    zmag[c] = m;
  }
}

void SqueezeExciteOp::row_from_gate(const HostTensors& in, std::size_t row, double g, double zmag, double* ref,
                                    double* mag) const {
  const std::size_t hw = shape_of(case_).hw;
  for (std::size_t i = 0; i < hw; ++i) {
    const double x = in[kX][row * hw + i];
    ref[i] = x * g;
    mag[i] = std::fabs(x) * (g + 0.25 * zmag) + 1e-30;
  }
}

void SqueezeExciteOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  auto s = shape_of(case_);
  std::vector<double> g(s.c), zmag(s.c);
  sample_gates(in, row / s.c, g.data(), zmag.data());
  row_from_gate(in, row, g[row % s.c], zmag[row % s.c], ref, mag);
}

void SqueezeExciteOp::reference_rows(const HostTensors& in, const std::vector<std::size_t>& rows,
                                     const RowSink& each) const {
  auto s = shape_of(case_);
  std::vector<std::size_t> slot(s.n, s.n), samples;  // slot[n]: where sample n's gates are
  for (std::size_t r : rows)
    if (slot[r / s.c] == s.n) {
      slot[r / s.c] = samples.size();
      samples.push_back(r / s.c);
    }
  std::vector<double> g(samples.size() * s.c), zmag(samples.size() * s.c);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t i = 0; i < samples.size(); ++i) sample_gates(in, samples[i], &g[i * s.c], &zmag[i * s.c]);
#pragma omp parallel
  {
    std::vector<double> ref(s.hw), mag(s.hw);
#pragma omp for schedule(dynamic, 16)
    for (std::size_t p = 0; p < rows.size(); ++p) {
      const std::size_t at = slot[rows[p] / s.c] * s.c + rows[p] % s.c;
      row_from_gate(in, rows[p], g[at], zmag[at], ref.data(), mag.data());
      each(p, ref.data(), mag.data());
    }
  }
}

}  // namespace opmeter::squeeze_excite
