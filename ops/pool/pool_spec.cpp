// pool2d's spec: shape, inputs and the fp64 reference every impl is checked against.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/pool/pool.hpp"

namespace opmeter::pool {

std::optional<Kind> parse_kind(const std::string& s) {
  if (s == "max") return Kind::max;
  if (s == "avg") return Kind::avg;
  return std::nullopt;
}

Shape shape_of(const Case& c) {
  using tensor::param;
  Shape s{param(c, "batch"), param(c, "channels"), param(c, "image"), param(c, "kernel"), param(c, "stride"),
          param(c, "padding"), 0, parse_kind(c.get("kind")).value_or(Kind::max)};
  s.oh = (s.h + 2 * s.pad - s.k) / s.stride + 1;
  return s;
}

std::vector<TensorDesc> PoolOp::inputs() const {
  auto s = shape_of(case_);
  return {{"x", act(), s.planes() * s.h * s.h}};
}

std::size_t PoolOp::out_rows() const {
  auto s = shape_of(case_);
  return s.planes() * s.oh;
}

double PoolOp::fp32_tolerance() const {
  auto s = shape_of(case_);
  // max picks an input: exact. avg sums k^2 terms in fp32 (in any order) and scales once.
  return s.kind == Kind::max ? 0.0 : (64 + 8 * double(s.k)) * 0x1p-24;
}

double PoolOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return double(s.oh) * double(s.k * s.k);
}

void PoolOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  auto s = shape_of(case_);
  const std::size_t i = row % s.oh, plane = row / s.oh;
  const std::size_t base = plane * s.h * s.h;
  const auto h = std::int64_t(s.h), pad = std::int64_t(s.pad);
  const double area = double(s.k * s.k);
  for (std::size_t j = 0; j < s.oh; ++j) {
    double acc = s.kind == Kind::max ? -std::numeric_limits<double>::infinity() : 0.0, sum_abs = 0;
    for (std::size_t r = 0; r < s.k; ++r) {
      const auto ih = std::int64_t(i * s.stride + r) - pad;
      if (ih < 0 || ih >= h) continue;
      for (std::size_t q = 0; q < s.k; ++q) {
        const auto iw = std::int64_t(j * s.stride + q) - pad;
        if (iw < 0 || iw >= h) continue;
        const double v = in[kX][base + std::size_t(ih * h + iw)];
        acc = s.kind == Kind::max ? std::max(acc, v) : acc + v;
        sum_abs += std::fabs(v);
      }
    }
    if (s.kind == Kind::max) {
      ref[j] = acc;
      mag[j] = std::fabs(acc);
    } else {
      ref[j] = acc / area;
      mag[j] = sum_abs / area;
    }
  }
}

}  // namespace opmeter::pool
