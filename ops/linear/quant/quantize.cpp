// Weight and activation quantization for the recipes, and the exact read-back the fp64 reference
// uses. Rows are independent and each is quantized by one thread, so results never depend on the
// thread count.
#include "ops/linear/quant/quantize.hpp"

#include <algorithm>
#include <cmath>

#include "opmeter/dtype.hpp"
#include "ops/linear/fp8_scale.hpp"

namespace opmeter::quant {
namespace {

// v rounded to the scales' stored type.
float round_to(Elem e, float v) {
  if (e == Elem::bf16) return from_bf16(to_bf16(v));
  if (e == Elem::f16) return from_fp16(to_fp16(v));
  return v;
}

// v rounded to the nearest integer, ties to even (std::nearbyint's rounding) for |v| <= 2^22:
// 1.5 x 2^23 + v lies where float's spacing is 1. Inline: std::nearbyint is a libm call that
// saves and restores the FP environment, and the per-token quantization of int8dq's activations
// runs it for every element of every call.
inline float round_even(float v) {
  constexpr float kMagic = 0x1.8p23f;
  return (v + kMagic) - kMagic;
}

// Codes are clamped before they are rounded (the same codes as rounding first: the clamp's ends
// are integers), which also keeps round_even in its range.
std::uint8_t int8_code(float v) {
  return static_cast<std::uint8_t>(static_cast<std::int8_t>(round_even(std::clamp(v, -127.f, 127.f))));
}

int int4_code(float w, float scale, float zero) {
  return static_cast<int>(round_even(std::clamp(w / scale + zero, 0.f, 15.f)));
}

// Squared error of a group quantized with (scale, zero).
double group_error(const float* w, std::size_t n, ScaleZero sz) {
  double e = 0;
  for (std::size_t k = 0; k < n; ++k) {
    double r = (int4_code(w[k], sz.scale, sz.zero) - double(sz.zero)) * sz.scale;
    e += (w[k] - r) * (w[k] - r);
  }
  return e;
}

float amax_of(const float* x, std::size_t n) {
  float a = 0;
  for (std::size_t i = 0; i < n; ++i) a = std::max(a, std::fabs(x[i]));
  return a;
}

std::uint8_t code_8bit(bool fp8, float v) { return fp8 ? to_fp8_e4m3(v) : int8_code(v); }

}  // namespace

double QuantizedWeights::weight(std::size_t j, std::size_t k) const {
  const std::size_t i = j * hidden + k;
  switch (recipe.weights) {
    case WeightFormat::int8: return double(static_cast<std::int8_t>(codes[i])) * double(scales[j]);
    case WeightFormat::fp8: return double(from_fp8_e4m3(codes[i])) * double(scales[scales.size() == 1 ? 0 : j]);
    case WeightFormat::int4: {
      const std::size_t g = j * groups_per_row() + k / recipe.group;
      const double q = (codes[i / 2] >> (4 * (i % 2))) & 15;
      return (q - double(zeros[g])) * double(scales[g]);
    }
    case WeightFormat::full: break;
  }
  return 0;
}

std::size_t QuantizedWeights::bytes(Elem scale_elem) const {
  return codes.size() + (scales.size() + zeros.size()) * elem_bytes(scale_elem);
}

ScaleZero rtn_int4(const float* w, std::size_t n) {
  const float lo = *std::min_element(w, w + n), hi = *std::max_element(w, w + n);
  const float scale = hi > lo ? (hi - lo) / 15 : 1.f;
  return {scale, round_even(std::clamp(-lo / scale, 0.f, 15.f))};
}

namespace {
// The zero point of half-quadratic quantization (Badri & Shaji, 2023): it minimises an lp error
// (p < 1: a few large errors cost less than many small ones) through an auxiliary error W_e,
// alternating a generalised soft-threshold of W_e with a closed-form zero; the scale stays. We
// measure in code units (w / scale), so the threshold does not depend on the weights' magnitude.
ScaleZero hqq_zero(const float* w, std::size_t n, ScaleZero sz) {
  constexpr double kP = 0.7, kKappa = 1.01;
  double beta = 10;
  // The threshold's power in float (powf): a heuristic's step, several times cheaper than pow, and
  // each candidate zero is judged afterwards by its exact squared error.
  constexpr float kPower = static_cast<float>(kP - 1);
  for (int it = 0; it < 20; ++it) {
    const double inv_beta = 1 / beta;
    double zsum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const int q = int4_code(w[k], sz.scale, sz.zero);
      const double u = w[k] / sz.scale, e = u - (q - sz.zero), a = std::fabs(e);
      const double we = a > 0 ? std::copysign(std::max(0.0, a - std::pow(static_cast<float>(a), kPower) * inv_beta), e) : 0;
      zsum += q - (u - we);
    }
    sz.zero = static_cast<float>(zsum / double(n));
    beta *= kKappa;
  }
  return sz;
}

// Least-squares refinement: with the codes fixed, scale and zero are a line through (code,
// weight); re-round and repeat while the squared error falls (Lloyd's iteration on a uniform grid).
// One pass a candidate gives its squared error (as group_error counts it) and the sums the next fit
// needs: the line's covariance and variance come from sum q, sum q^2 and sum q w, and w's mean mw.
ScaleZero refine(const float* w, std::size_t n, double mw, ScaleZero sz, double& error) {
  struct Pass {
    double error = 0, q = 0, qq = 0, qw = 0;
  };
  auto pass = [&](ScaleZero c) {
    double e[4] = {0, 0, 0, 0};  // partial sums: one chain of dependent adds was most of the time
    Pass p;
    for (std::size_t k = 0; k < n; ++k) {
      const int q = int4_code(w[k], c.scale, c.zero);
      const double r = (q - double(c.zero)) * c.scale;
      e[k % 4] += (w[k] - r) * (w[k] - r);
      p.q += q, p.qq += q * q, p.qw += q * double(w[k]);
    }
    p.error = (e[0] + e[1]) + (e[2] + e[3]);
    return p;
  };
  Pass p = pass(sz);
  error = p.error;
  for (int it = 0; it < 20; ++it) {
    const double mq = p.q / double(n);
    const double cov = p.qw - double(n) * mq * mw, var = p.qq - double(n) * mq * mq;
    if (!(var > 0 && cov > 0)) break;
    const double scale = cov / var;
    const ScaleZero next{static_cast<float>(scale), static_cast<float>(mq - mw / scale)};
    const Pass np = pass(next);
    if (!(np.error < error)) break;
    error = np.error, sz = next, p = np;
  }
  return sz;
}
}  // namespace

// HQQ's lp zero alone barely moves the squared error on Gaussian weights (its aim is outliers),
// so the group's scale and zero are the best, in squared error, of: round-to-nearest, HQQ's zero
// from it, and least-squares refinements started from ranges with each end pulled in toward the
// mean by 0, 10 or 20% (a Gaussian's extremes stretch min-max; 30% as well added 0.003 dB on
// Gaussian groups of 64 for 16 starts instead of 9).
ScaleZero hqq_int4(const float* w, std::size_t n) {
  const ScaleZero rtn = rtn_int4(w, n);
  ScaleZero best = rtn;
  double best_error = group_error(w, n, rtn);
  auto consider = [&](ScaleZero sz, double e) {
    if (e < best_error && sz.scale > 0) best_error = e, best = sz;
  };
  const ScaleZero zero = hqq_zero(w, n, rtn);
  consider(zero, group_error(w, n, zero));
  const float lo = *std::min_element(w, w + n), hi = *std::max_element(w, w + n);
  double mean = 0;
  for (std::size_t k = 0; k < n; ++k) mean += w[k];
  mean /= double(n);
  constexpr float kPull[] = {0.f, 0.1f, 0.2f};
  for (float pl : kPull)
    for (float ph : kPull) {
      const double a = lo + (mean - lo) * pl, b = hi - (hi - mean) * ph;
      if (!(b > a)) continue;
      const ScaleZero start{static_cast<float>((b - a) / 15), static_cast<float>(-a * 15 / (b - a))};
      double e = 0;
      const ScaleZero sz = refine(w, n, mean, start, e);
      consider(sz, e);
    }
  return best;
}

QuantizedWeights quantize_weights(const Recipe& r, const float* w, std::size_t out, std::size_t hidden, Elem se) {
  QuantizedWeights q;
  q.recipe = r;
  q.out = out;
  q.hidden = hidden;
  const auto rows = static_cast<std::int64_t>(out);
  if (r.weights == WeightFormat::int4) {
    const std::size_t groups = hidden / r.group;
    q.codes.assign(out * hidden / 2 + (out * hidden) % 2, 0);
    q.scales.resize(out * groups);
    q.zeros.resize(out * groups);
#pragma omp parallel for schedule(dynamic, 16)
    for (std::int64_t jj = 0; jj < rows; ++jj) {
      const auto j = static_cast<std::size_t>(jj);
      for (std::size_t g = 0; g < groups; ++g) {
        const float* p = w + j * hidden + g * r.group;
        ScaleZero sz = r.hqq ? hqq_int4(p, r.group) : rtn_int4(p, r.group);
        // Stored values, and the codes computed from them so that weight() is exact.
        sz.scale = round_to(se, sz.scale);
        if (!(sz.scale > 0)) sz.scale = round_to(se, 1e-8f);
        sz.zero = round_to(se, sz.zero);
        q.scales[j * groups + g] = sz.scale;
        q.zeros[j * groups + g] = sz.zero;
        for (std::size_t k = 0; k < r.group; ++k) {
          const std::size_t i = j * hidden + g * r.group + k;  // even k of an even start: low nibble
          q.codes[i / 2] |= static_cast<std::uint8_t>(int4_code(p[k], sz.scale, sz.zero) << (4 * (i % 2)));
        }
      }
    }
    return q;
  }
  const bool fp8 = r.fp8(), tensor = r.activations == ActivationFormat::fp8_per_tensor;
  const auto code_max = static_cast<float>(fp8 ? kFp8Max : kInt8Max);  // exact as floats
  q.codes.resize(out * hidden);
  q.scales.resize(tensor ? 1 : out);
  if (tensor) q.scales[0] = round_to(se, linear::scale_from_amax(amax_of(w, out * hidden), code_max));
#pragma omp parallel for schedule(static)
  for (std::int64_t jj = 0; jj < rows; ++jj) {
    const auto j = static_cast<std::size_t>(jj);
    const float* row = w + j * hidden;
    const float s = tensor ? q.scales[0] : round_to(se, linear::scale_from_amax(amax_of(row, hidden), code_max));
    if (!tensor) q.scales[j] = s;
    for (std::size_t k = 0; k < hidden; ++k) q.codes[j * hidden + k] = code_8bit(fp8, row[k] / s);
  }
  return q;
}

void quantize_activations(const Recipe& r, const float* x, std::size_t rows, std::size_t hidden, std::uint8_t* codes,
                          float* scales) {
  const bool fp8 = r.activations != ActivationFormat::int8_per_token;
  const bool tensor = r.activations == ActivationFormat::fp8_per_tensor;
  const auto code_max = static_cast<float>(fp8 ? kFp8Max : kInt8Max);  // exact as floats
  if (tensor) scales[0] = linear::scale_from_amax(amax_of(x, rows * hidden), code_max);
  for (std::size_t m = 0; m < rows; ++m) {
    const float* row = x + m * hidden;
    const float s = tensor ? scales[0] : linear::scale_from_amax(amax_of(row, hidden), code_max);
    if (!tensor) scales[m] = s;
    for (std::size_t k = 0; k < hidden; ++k) codes[m * hidden + k] = code_8bit(fp8, row[k] / s);
  }
}

double activation_code_value(const Recipe& r, std::uint8_t code) {
  return r.activations == ActivationFormat::int8_per_token ? double(static_cast<std::int8_t>(code))
                                                           : double(from_fp8_e4m3(code));
}

void Sqnr::add(double got, double ref) {
  signal += ref * ref;
  noise += (got - ref) * (got - ref);
  max_abs_error = std::max(max_abs_error, std::fabs(got - ref));
}

void Sqnr::merge(const Sqnr& other) {
  signal += other.signal;
  noise += other.noise;
  max_abs_error = std::max(max_abs_error, other.max_abs_error);
}

double Sqnr::db() const { return noise == 0 ? INFINITY : 10 * std::log10(signal / noise); }

}  // namespace opmeter::quant
