// decode_attention's spec: inputs and the fp64 reference.
#include "ops/decode_attention/decode_attention.hpp"

#include <algorithm>
#include <cmath>

namespace opmeter::decode_attention {

float Shape::scale() const { return 1.0f / std::sqrt(float(d)); }

Shape shape_of(const Case& c) {
  using tensor::param;
  return {param(c, "batch") * param(c, "heads"), param(c, "kv"), param(c, "head_dim")};
}

std::vector<TensorDesc> DecodeAttentionOp::inputs() const {
  auto s = shape_of(case_);
  return {{"q", act(), s.bh * s.d}, {"k", act(), s.bh * s.kv * s.d}, {"v", act(), s.bh * s.kv * s.d}};
}

double DecodeAttentionOp::fp32_tolerance() const {
  auto s = shape_of(case_);
  return (64 + 8 * std::sqrt(double(s.kv + s.d))) * 0x1p-24;
}

double DecodeAttentionOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return 4.0 * double(s.kv) * double(s.d);
}

void DecodeAttentionOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  auto s = shape_of(case_);
  const double scale = s.scale();
  const std::size_t q0 = row * s.d, kv0 = row * s.kv * s.d;
  std::vector<double> p(s.kv);
  double mx = -INFINITY;
  for (std::size_t j = 0; j < s.kv; ++j) {
    double dot = 0;
    for (std::size_t c = 0; c < s.d; ++c) dot += in[kQ][q0 + c] * in[kK][kv0 + j * s.d + c];
    p[j] = dot * scale;
    mx = std::max(mx, p[j]);
  }
  double sum = 0;
  for (auto& v : p) sum += v = std::exp(v - mx);
  for (std::size_t c = 0; c < s.d; ++c) {
    double o = 0, m = 0;
    for (std::size_t j = 0; j < s.kv; ++j) {
      const double v = in[kV][kv0 + j * s.d + c];
      o += p[j] * v;
      m += p[j] * std::fabs(v);
    }
    ref[c] = o / sum;
    mag[c] = m / sum + 0x1p-20;
  }
}

}  // namespace opmeter::decode_attention
