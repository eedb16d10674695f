// A linear layer's training step checked against fp64: y and dx on sampled rows, dW and db on
// sampled columns (out features), LayerNorm's dgamma and dbeta whole while the check can afford
// the full backward. Error metric as the forward's: |got - ref| / mag, mag the sum of |terms|
// that made the value (see linear.hpp), so one tolerance holds at every size.
//
// Backward: dz = dy * act'(z), dxhat = dz W, dW = dz^T xhat, db = sum_rows dz, and LayerNorm's
// dx = rstd (g dxhat - mean(g dxhat) - xn mean(g dxhat xn)), dgamma = sum_rows dxhat xn,
// dbeta = sum_rows dxhat, where xhat = xn g + beta and xn = (x - mean) rstd.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "opmeter/shapes.hpp"
#include "ops/activation/activation.hpp"
#include "ops/linear/fp8_train_plan.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/quant/quantize.hpp"
#include "ops/linear/quant/recipe.hpp"
#include "ops/norm/layernorm_reference.hpp"

namespace opmeter::linear {
namespace {
constexpr double kSampleBudget = double(1u << 27);  // fp64 operations on sampled rows and columns
constexpr double kFullBudget = double(1u << 30);    // the whole backward (dgamma, dbeta) up to this

struct Worst {
  double err = -1, got = 0, ref = 0;
  const char* what = "";
  std::size_t i = 0;
  quant::Sqnr y, dx, dw;  // what a quantized step costs, over the same elements
  void take(double g, double r, double mag, const char* name, std::size_t index) {
    double e = g == r ? 0.0 : std::fabs(g - r) / (mag > 0 ? mag : 1.0);
    if (!(e <= err)) std::tie(err, got, ref, what, i) = std::tie(e, g, r, name, index);
  }
};

// The fp64 forward and backward of one layer on the case's inputs.
class TrainReference {
 public:
  // `act`: the activations' stored type; `half_ulp` its rounding (relative, unit_roundoff); `z_error` the layer's
  // error in z relative to z's sum of |terms| (its fp32 sums, or float8's casts); `tolerance` the check's.
  TrainReference(const Shape& s, const HostTensors& in, std::size_t dy, Elem act, double half_ulp, double z_error,
                 double tolerance)
      : s_(s),
        in_(in),
        dy_(dy),
        act_(act),
        half_ulp_(half_ulp),
        z_error_(z_error),
        tolerance_(tolerance),
        xhat_(s.rows * s.hidden),
        xn_(s.layernorm ? s.rows * s.hidden : 0),
        xn_mag_(xn_.size()),
        xhat_mag_(xn_.size()),
        rstd_(s.rows, 1.0) {
#pragma omp parallel for
    for (std::size_t r = 0; r < s.rows; ++r) normalize(r);
  }

  // Row r of z = xhat W^T + b, y = act(z) with the forward's magnitudes, and dz with its
  // magnitude (grad_z).
  void forward_row(std::size_t r, double* y, double* ymag, double* dz, double* dzmag) const {
    const double* xh = &xhat_[r * s_.hidden];
    for (std::size_t j = 0; j < s_.out; ++j) {
      double z = bias(j), m = std::fabs(z);
      for (std::size_t k = 0; k < s_.hidden; ++k) {
        const double w = in_[1][j * s_.hidden + k];
        z += xh[k] * w;
        m += xhat_mag(r, k) * std::fabs(w);
      }
      y[j] = activation::reference(s_.act, z);
      ymag[j] = 1.2 * m + 1e-6;
      grad_z(r, j, z, m, dz[j], dzmag[j]);
    }
  }
  // Column j of dz (every row) with its magnitudes.
  void dz_column(std::size_t j, double* dz, double* dzmag) const {
    for (std::size_t r = 0; r < s_.rows; ++r) {
      double z = bias(j), m = std::fabs(z);
      for (std::size_t k = 0; k < s_.hidden; ++k) {
        const double w = in_[1][j * s_.hidden + k];
        z += xhat_[r * s_.hidden + k] * w;
        m += xhat_mag(r, k) * std::fabs(w);
      }
      grad_z(r, j, z, m, dz[r], dzmag[r]);
    }
  }
  // dxhat of one row from its dz: sum_j dz_j W_jk.
  void dxhat_row(const double* dz, const double* dzmag, double* dxhat, double* mag) const {
    std::fill(dxhat, dxhat + s_.hidden, 0.0);
    std::fill(mag, mag + s_.hidden, 0.0);
    for (std::size_t j = 0; j < s_.out; ++j)
      for (std::size_t k = 0; k < s_.hidden; ++k) {
        double w = in_[1][j * s_.hidden + k];
        dxhat[k] += dz[j] * w;
        mag[k] += dzmag[j] * std::fabs(w);
      }
  }
  // LayerNorm's backward of one row: dx from dxhat (in place), with magnitudes.
  void layernorm_backward_row(std::size_t r, double* d, double* mag) const {
    const double* xn = &xn_[r * s_.hidden];
    const double h = double(s_.hidden);
    double mean_a = 0, mean_axn = 0, mean_m = 0, mean_mxn = 0;
    for (std::size_t k = 0; k < s_.hidden; ++k) {
      double g = gamma(k);
      mean_a += g * d[k] / h;
      mean_axn += g * d[k] * xn[k] / h;
      mean_m += g * mag[k] / h;
      mean_mxn += g * mag[k] * xn_mag(r, k) / h;
    }
    for (std::size_t k = 0; k < s_.hidden; ++k) {
      double g = gamma(k);
      d[k] = rstd_[r] * (g * d[k] - mean_a - xn[k] * mean_axn);
      mag[k] = rstd_[r] * (g * mag[k] + mean_m + xn_mag(r, k) * mean_mxn) + 1e-6;
    }
  }
  double xhat(std::size_t r, std::size_t k) const { return xhat_[r * s_.hidden + k]; }
  double xn(std::size_t r, std::size_t k) const { return xn_[r * s_.hidden + k]; }
  // The sums of |terms| that made xn = (x - mean) rstd and xhat = xn gamma + beta: the layer's own
  // LayerNorm rounds each term, so where they cancel its xhat is off by far more than |xhat|
  // allows. Without LayerNorm xhat is x itself.
  double xn_mag(std::size_t r, std::size_t k) const { return xn_mag_[r * s_.hidden + k]; }
  double xhat_mag(std::size_t r, std::size_t k) const {
    return s_.layernorm ? xhat_mag_[r * s_.hidden + k] : std::fabs(xhat_[r * s_.hidden + k]);
  }

 private:
  double bias(std::size_t j) const { return in_[2].as<float>()[j]; }
  double gamma(std::size_t k) const { return in_[3].as<float>()[k]; }
  void normalize(std::size_t r) {
    double* xh = &xhat_[r * s_.hidden];
    for (std::size_t k = 0; k < s_.hidden; ++k) xh[k] = in_[0][r * s_.hidden + k];
    if (!s_.layernorm) return;
    rstd_[r] = norm::layernorm_row(xh, s_.hidden, &xn_[r * s_.hidden]);
    double mean = 0;
    for (std::size_t k = 0; k < s_.hidden; ++k) mean += xh[k] / double(s_.hidden);
    for (std::size_t k = 0; k < s_.hidden; ++k) {
      const std::size_t i = r * s_.hidden + k;
      xn_mag_[i] = (std::fabs(xh[k]) + std::fabs(mean)) * rstd_[r];
      xhat_mag_[i] = xn_mag_[i] * std::fabs(gamma(k)) + std::fabs(in_[4].as<float>()[k]);
    }
    for (std::size_t k = 0; k < s_.hidden; ++k) {
      // Rounded as the layer stores LayerNorm's output for its GEMMs (every framework does), so
      // that act'(z) is compared at the z the layer computes.
      double v = xn_[r * s_.hidden + k] * gamma(k) + in_[4].as<float>()[k];
      std::uint64_t slot = 0;
      store(act_, &slot, 0, v);
      xh[k] = load(act_, &slot, 0);
    }
  }
  // dz = dy act'(z). The layer's z differs from this one by its stored rounding, its bias's (a
  // layer may add the bias in the activations' type, as cuBLASLt's bias epilogue does), its sums
  // (delta, z_error_) and its LayerNorm's output; where act' changes within delta of z (a kink, a
  // steep curve) the element may differ by that change, so its magnitude carries the change over
  // the tolerance.
  void grad_z(std::size_t r, std::size_t j, double z, double zmag, double& dz, double& mag) const {
    double dy = in_[dy_][r * s_.out + j], d = activation::derivative(s_.act, z);
    dz = dy * d;
    // A layer's LayerNorm output may be an ulp off the rounded exact one (PyTorch's bf16
    // layer_norm is), which moves z by up to an ulp of each term.
    const double xhat_ulp = s_.layernorm ? 2 * half_ulp_ : 0.0;
    const double delta = half_ulp_ * (std::fabs(z) + std::fabs(bias(j))) + (z_error_ + xhat_ulp) * zmag;
    const double change = std::max(std::fabs(activation::derivative(s_.act, z + delta) - d),
                                   std::fabs(activation::derivative(s_.act, z - delta) - d));
    mag = std::fabs(dy) * (activation::derivative_magnitude(s_.act, z) + change / tolerance_);
  }

  const Shape& s_;
  const HostTensors& in_;
  std::size_t dy_;
  Elem act_;
  double half_ulp_, z_error_, tolerance_;
  std::vector<double> xhat_, xn_, xn_mag_, xhat_mag_, rstd_;
};

std::size_t affordable(double budget, double cost_each) {
  return static_cast<std::size_t>(std::max(2.0, budget / std::max(1.0, cost_each)));
}
}  // namespace

TrainLayout train_layout(const Shape& s) {
  TrainLayout l;
  l.y = 0;
  l.dx = l.y + s.rows * s.out;
  l.dw = l.dx + s.rows * s.hidden;
  l.db = l.dw + s.out * s.hidden;
  l.dgamma = l.db + s.out;
  l.dbeta = l.dgamma + (s.layernorm ? s.hidden : 0);
  l.total = l.dbeta + (s.layernorm ? s.hidden : 0);
  return l;
}

TensorDesc LinearOp::output() const {
  if (!training(case_)) return TensorOp::output();
  return {"out", act(), train_layout(shape_of(case_)).total};
}

Check LinearOp::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  if (!training(case_)) return TensorOp::check(in, out, seed);
  const Shape s = shape_of(case_);
  const TrainLayout l = train_layout(s);
  Check check;
  // Reductions over rows (dW, db, dgamma) as long as those over hidden or out. A float8 recipe's
  // operands are rounded to e4m3 and its gradients to e5m2: fp8_train::tolerance derives its
  // bound from those formats (fp8_train_plan.hpp).
  const std::size_t max_k = std::max({s.rows, s.hidden, s.out});
  const double n = double(max_k);
  auto recipe = quant::parse_recipe(recipe_of(case_));
  const bool fp8 = recipe && recipe->fp8();
  const Float8Knobs knobs = float8_knobs(case_);
  const bool fast_accum = fp8 && knobs.fast_accum;
  const double storage = bf16() ? 0x1p-8 : case_.dtype == DType::fp16 ? 0x1p-11 : 0x1p-23;
  check.tolerance = fp8 ? fp8_train::tolerance(fast_accum, max_k, fp8_train::grad_format(knobs.rowwise))
                        : 4 * storage + (64 + 8 * std::sqrt(n)) * 0x1p-24;
  for (std::size_t i = 0; i < l.total; ++i) {
    if (!std::isnan(out[i])) continue;
    const char* what = i < l.dx ? "y" : i < l.dw ? "dx" : i < l.db ? "dW" : i < l.dgamma ? "db" : i < l.dbeta ? "dgamma" : "dbeta";
    check.max_error = std::numeric_limits<double>::infinity();
    check.detail = fmt::format("training output {} (element {} of the step's output) was not written (still poisoned) or is NaN", what, i);
    return check;
  }
  // How far the stored z may be from the exact one, relative to |z| (round to nearest: half an
  // ulp, at most 2^-p for p significant bits). bf16's 5.985 is stored as 6.0, where relu6' is 0.
  TrainReference ref(s, in, dy_index(), act(), unit_roundoff(act()), fp8 ? fp8_train::forward_error(fast_accum, s.hidden) : 0x1p-20,
                     check.tolerance);
  const double h = double(s.hidden), o = double(s.out), rows = double(s.rows);
  auto row_picks = sample_indices_with_edges(s.rows, affordable(kSampleBudget, 4 * h * o), seed ^ 0x7a11);
  auto col_picks = sample_indices_with_edges(s.out, affordable(kSampleBudget, 4 * rows * h), seed ^ 0xc01);
  const bool full = s.layernorm && 4 * rows * h * o <= kFullBudget;
  if (full) row_picks = sample_indices_with_edges(s.rows, s.rows, 0);

  std::vector<Worst> worst(row_picks.size() + col_picks.size());
  std::vector<double> dgamma(full ? s.hidden : 0), dgamma_mag(dgamma.size()), dbeta(dgamma.size()), dbeta_mag(dgamma.size());
#pragma omp parallel
  {
    std::vector<double> y(s.out), ymag(s.out), dz(std::max(s.out, s.rows)), dzmag(dz.size()), d(s.hidden), dmag(s.hidden);
    std::vector<double> g(dgamma.size()), gm(dgamma.size()), b(dgamma.size()), bm(dgamma.size());
#pragma omp for schedule(dynamic, 1) nowait
    for (std::size_t p = 0; p < row_picks.size(); ++p) {
      const std::size_t r = row_picks[p];
      Worst& w = worst[p];
      ref.forward_row(r, y.data(), ymag.data(), dz.data(), dzmag.data());
      for (std::size_t j = 0; j < s.out; ++j) {
        w.take(out[l.y + r * s.out + j], y[j], ymag[j], "y", r * s.out + j);
        // The product x W^T without the bias (as the inference SQNR), where no activation follows.
        const double b = s.act == tensor::Act::none ? double(in[2].as<float>()[j]) : 0.0;
        w.y.add(out[l.y + r * s.out + j] - b, y[j] - b);
      }
      ref.dxhat_row(dz.data(), dzmag.data(), d.data(), dmag.data());
      for (std::size_t k = 0; k < g.size(); ++k) {
        g[k] += d[k] * ref.xn(r, k);
        gm[k] += dmag[k] * ref.xn_mag(r, k);
        b[k] += d[k];
        bm[k] += dmag[k];
      }
      if (s.layernorm) ref.layernorm_backward_row(r, d.data(), dmag.data());
      for (std::size_t k = 0; k < s.hidden; ++k) {
        w.take(out[l.dx + r * s.hidden + k], d[k], dmag[k], "dx", r * s.hidden + k);
        w.dx.add(out[l.dx + r * s.hidden + k], d[k]);
      }
    }
#pragma omp for schedule(dynamic, 1) nowait
    for (std::size_t p = 0; p < col_picks.size(); ++p) {
      const std::size_t j = col_picks[p];
      Worst& w = worst[row_picks.size() + p];
      ref.dz_column(j, dz.data(), dzmag.data());
      double db = 0, dbm = 0;
      for (std::size_t r = 0; r < s.rows; ++r) {
        db += dz[r];
        dbm += dzmag[r];
      }
      w.take(out[l.db + j], db, dbm, "db", j);
      for (std::size_t k = 0; k < s.hidden; ++k) {
        double v = 0, m = 0;
        for (std::size_t r = 0; r < s.rows; ++r) {
          v += dz[r] * ref.xhat(r, k);
          m += dzmag[r] * ref.xhat_mag(r, k);
        }
        w.take(out[l.dw + j * s.hidden + k], v, m, "dW", j * s.hidden + k);
        w.dw.add(out[l.dw + j * s.hidden + k], v);
      }
    }
#pragma omp critical
    for (std::size_t k = 0; k < g.size(); ++k) {
      dgamma[k] += g[k];
      dgamma_mag[k] += gm[k];
      dbeta[k] += b[k];
      dbeta_mag[k] += bm[k];
    }
  }
  Worst all;
  quant::Sqnr y, dx, dw;
  for (auto& w : worst) {
    if (!(w.err <= all.err)) all = w;
    y.merge(w.y);
    dx.merge(w.dx);
    dw.merge(w.dw);
  }
  if (recipe && !recipe->baseline()) {  // the recipe's cost, as inference reports it: y's product, and each gradient's
    check.metrics["sqnr_db"] = Metric{y.db(), "dB", Better::higher, MetricFormat::number};
    check.metrics["sqnr_dx_db"] = Metric{dx.db(), "dB", Better::higher, MetricFormat::number};
    check.metrics["sqnr_dw_db"] = Metric{dw.db(), "dB", Better::higher, MetricFormat::number};
    check.metrics["max_abs_error"] = Metric{y.max_abs_error, "", Better::lower, MetricFormat::number};
  }
  for (std::size_t k = 0; k < dgamma.size(); ++k) {
    all.take(out[l.dgamma + k], dgamma[k], dgamma_mag[k], "dgamma", k);
    all.take(out[l.dbeta + k], dbeta[k], dbeta_mag[k], "dbeta", k);
  }
  check.max_error = all.err;
  check.ok = all.err <= check.tolerance;
  check.detail = fmt::format(
      "training step: max scaled error {:.3g} in {}[{}] (got {:.7g}, expected {:.7g}) over y and dx of {} rows, dW and "
      "db of {} columns{} (tolerance {:.3g})",
      all.err, all.what, all.i, all.got, all.ref, row_picks.size(), col_picks.size(),
      !s.layernorm ? "" : full ? ", dgamma and dbeta whole" : ", dgamma and dbeta unchecked at this size", check.tolerance);
  return check;
}

}  // namespace opmeter::linear
