// The training step's spec: packed output, fp64 reference, sampled check (train_linear.hpp).
#include "ops/linear/train_linear.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "quant/recipe.hpp"

namespace opmeter::linear {
namespace {
constexpr double kCheckBudget = double(1u << 27);  // fp64 operations the column check may spend
constexpr std::size_t kMaxCheckedColumns = 64;

// Per-row LayerNorm statistics, and xhat / xn of a row in fp64.
struct Rows {
  const Shape& s;
  const HostTensors& in;
  std::vector<double> mean, rstd;

  Rows(const Shape& shape, const HostTensors& inputs) : s(shape), in(inputs) {
    if (!s.layernorm) return;
    mean.resize(s.rows);
    rstd.resize(s.rows);
#pragma omp parallel for schedule(static)
    for (std::size_t r = 0; r < s.rows; ++r) {
      double m = 0, v = 0;
      for (std::size_t k = 0; k < s.hidden; ++k) m += in[0][r * s.hidden + k];
      m /= double(s.hidden);
      for (std::size_t k = 0; k < s.hidden; ++k) {
        double d = in[0][r * s.hidden + k] - m;
        v += d * d;
      }
      mean[r] = m;
      rstd[r] = 1 / std::sqrt(v / double(s.hidden) + tensor::kNormEps);
    }
  }
  // xn = normalized row (x itself without LayerNorm), xhat = xn * gamma + beta.
  void row(std::size_t r, double* xn, double* xhat) const {
    for (std::size_t k = 0; k < s.hidden; ++k) {
      double x = in[0][r * s.hidden + k];
      if (!s.layernorm) {
        xn[k] = xhat[k] = x;
        continue;
      }
      xn[k] = (x - mean[r]) * rstd[r];
      xhat[k] = xn[k] * in[3].as<float>()[k] + in[4].as<float>()[k];
    }
  }
};

// The worst scaled error of one result.
struct Worst {
  double err = -1;
  std::size_t at = 0;
  double got = 0, ref = 0;
  void add(double got_v, double ref_v, double mag, std::size_t i) {
    double e = got_v == ref_v ? 0.0 : std::fabs(got_v - ref_v) / (mag > 0 ? mag : 1.0);
    if (!(e <= err)) *this = {e, i, got_v, ref_v};
  }
  void merge(const Worst& o) {
    if (o.err > err || std::isnan(o.err)) *this = o;
  }
};
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

std::vector<TensorDesc> TrainLinearOp::inputs() const {
  auto v = LinearOp::inputs();
  const auto s = shape_of(case_);
  v.push_back({"dy", act(), s.rows * s.out});
  return v;
}

bool TrainLinearOp::fp8() const {
  auto r = quant::parse_recipe(recipe_of(case_));
  return r && !r->baseline();
}

double TrainLinearOp::tolerance() const {
  return fp8() ? kFp8Tolerance : TensorOp::tolerance();
}

double TrainLinearOp::fp32_tolerance() const {
  // The longest reduction is over hidden (y), out (dx) or rows (dW, db); LayerNorm's backward
  // adds a few roundings of the same size.
  const auto s = shape_of(case_);
  const double k = double(std::max({s.rows, s.hidden, s.out}));
  return 2 * (64 + 8 * std::sqrt(k)) * 0x1p-24;
}

double TrainLinearOp::reference_row_cost() const {
  const auto s = shape_of(case_);
  return 4.0 * double(s.hidden) * double(s.out);
}

Check TrainLinearOp::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  const Shape s = shape_of(case_);
  const TrainLayout L = train_layout(s);
  Check check;
  check.tolerance = tolerance();
  const std::pair<const char*, std::size_t> parts[] = {{"y", L.y},   {"dx", L.dx},         {"dW", L.dw},
                                                       {"db", L.db}, {"dgamma", L.dgamma}, {"dbeta", L.dbeta}};
  for (std::size_t i = 0; i < L.total; ++i) {
    if (std::isnan(out[i])) {
      std::size_t p = 0;
      while (p + 1 < std::size(parts) && parts[p + 1].second <= i) ++p;
      check.max_error = std::numeric_limits<double>::infinity();
      check.detail = fmt::format("{}[{}] was not written (still poisoned) or is NaN", parts[p].first, i - parts[p].second);
      return check;
    }
  }
  const float* got = out.as<float>();
  const float* bias = vec(in, kBias);
  const float* gamma = s.layernorm ? vec(in, kGamma) : nullptr;
  const float* beta = s.layernorm ? vec(in, kBeta) : nullptr;
  const HostTensor& W = in[kW];
  const HostTensor& dy = in[dy_index()];
  const double tol = check.tolerance;
  const Rows rows(s, in);

  // z of row r, column j from xhat, its scale, and dz with its scale.
  struct Dz {
    double z, zmag, dz, dzmag;
  };
  auto dz_of = [&](std::size_t r, std::size_t j, const double* xhat) {
    double z = bias[j], m = std::fabs(z);
    for (std::size_t k = 0; k < s.hidden; ++k) {
      double p = xhat[k] * W[j * s.hidden + k];
      z += p;
      m += std::fabs(p);
    }
    const double d = dy[r * s.out + j], slope = activation::derivative(s.act, z);
    const double slack = activation::derivative_slack(s.act, z, tol * m);
    return Dz{z, m, d * slope, std::fabs(d) * (std::fabs(slope) + slack)};
  };

  Worst wy, wdx, wdw, wdb, wdg, wdbeta;
  std::mutex merge;
  const std::vector<std::size_t> picks = check_rows(seed);
  const bool all_rows = picks.size() == s.rows;
  std::vector<double> dgamma(s.hidden), dgamma_mag(s.hidden), dbeta(s.hidden), dbeta_mag(s.hidden);

  // Rows: y and dx (and, where every row is checked, the LayerNorm gradients in full).
#pragma omp parallel
  {
    std::vector<double> xn(s.hidden), xhat(s.hidden), g(s.hidden), gm(s.hidden);
    std::vector<double> lg(all_rows && s.layernorm ? s.hidden : 0), lgm(lg.size()), lb(lg.size()), lbm(lg.size());
    Worst y_w, dx_w;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t p = 0; p < picks.size(); ++p) {
      const std::size_t r = picks[p];
      rows.row(r, xn.data(), xhat.data());
      std::fill(g.begin(), g.end(), 0.0);
      std::fill(gm.begin(), gm.end(), 0.0);
      for (std::size_t j = 0; j < s.out; ++j) {
        Dz d = dz_of(r, j, xhat.data());
        y_w.add(got[L.y + r * s.out + j], activation::reference(s.act, d.z), 1.2 * d.zmag + 1e-6, r * s.out + j);
        for (std::size_t k = 0; k < s.hidden; ++k) {
          const double w = W[j * s.hidden + k];
          g[k] += d.dz * w;  // dxhat
          gm[k] += d.dzmag * std::fabs(w);
        }
      }
      if (!s.layernorm) {
        for (std::size_t k = 0; k < s.hidden; ++k) dx_w.add(got[L.dx + r * s.hidden + k], g[k], gm[k], r * s.hidden + k);
        continue;
      }
      double a = 0, b = 0, am = 0, bm = 0;
      for (std::size_t k = 0; k < s.hidden; ++k) {
        a += g[k] * gamma[k];
        b += g[k] * gamma[k] * xn[k];
        am += gm[k] * gamma[k];
        bm += gm[k] * gamma[k] * std::fabs(xn[k]);
      }
      const double n = double(s.hidden), rstd = rows.rstd[r];
      a /= n, b /= n, am /= n, bm /= n;
      for (std::size_t k = 0; k < s.hidden; ++k) {
        double ref = rstd * (g[k] * gamma[k] - a - xn[k] * b);
        double mag = rstd * (gm[k] * gamma[k] + am + std::fabs(xn[k]) * bm);
        dx_w.add(got[L.dx + r * s.hidden + k], ref, mag, r * s.hidden + k);
        if (!lg.empty()) {
          lg[k] += g[k] * xn[k], lgm[k] += gm[k] * std::fabs(xn[k]);
          lb[k] += g[k], lbm[k] += gm[k];
        }
      }
    }
    std::lock_guard lock(merge);
    wy.merge(y_w);
    wdx.merge(dx_w);
    for (std::size_t k = 0; k < lg.size(); ++k) {
      dgamma[k] += lg[k], dgamma_mag[k] += lgm[k];
      dbeta[k] += lb[k], dbeta_mag[k] += lbm[k];
    }
  }

  // Columns of dW and db: each needs dz of its column over every row.
  const double column_cost = 4.0 * double(s.rows) * double(s.hidden);
  const std::size_t ncols =
      std::min({s.out, kMaxCheckedColumns, std::max<std::size_t>(2, std::size_t(kCheckBudget / column_cost))});
  std::vector<std::size_t> cols;
  if (ncols == s.out) {
    for (std::size_t j = 0; j < s.out; ++j) cols.push_back(j);
  } else {
    Rng rng(seed ^ 0xc01);
    cols = {0, s.out - 1};
    while (cols.size() < ncols) cols.push_back(rng.next() % s.out);
  }
  double db_scale = 0;                         // the largest sum of |dz| of a column
  std::vector<double> dw_scale(s.hidden, 0.0);  // per k, the largest sum of |dz xhat_k|
#pragma omp parallel
  {
    std::vector<double> xn(s.hidden), xhat(s.hidden), ref(s.hidden), mag(s.hidden), scale(s.hidden);
    Worst dw_w, db_w;
    double db_s = 0;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const std::size_t j = cols[c];
      std::fill(ref.begin(), ref.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      double db = 0, dbm = 0;
      for (std::size_t r = 0; r < s.rows; ++r) {
        rows.row(r, xn.data(), xhat.data());
        Dz d = dz_of(r, j, xhat.data());
        db += d.dz, dbm += d.dzmag;
        for (std::size_t k = 0; k < s.hidden; ++k) {
          ref[k] += d.dz * xhat[k];
          mag[k] += d.dzmag * std::fabs(xhat[k]);
        }
      }
      for (std::size_t k = 0; k < s.hidden; ++k) {
        dw_w.add(got[L.dw + j * s.hidden + k], ref[k], mag[k], j * s.hidden + k);
        scale[k] = std::max(scale[k], mag[k]);
      }
      db_w.add(got[L.db + j], db, dbm, j);
      db_s = std::max(db_s, dbm);
    }
    std::lock_guard lock(merge);
    wdw.merge(dw_w);
    wdb.merge(db_w);
    db_scale = std::max(db_scale, db_s);
    for (std::size_t k = 0; k < s.hidden; ++k) dw_scale[k] = std::max(dw_scale[k], scale[k]);
  }

  // LayerNorm's parameter gradients.
  if (s.layernorm) {
    if (all_rows) {
      for (std::size_t k = 0; k < s.hidden; ++k) {
        wdg.add(got[L.dgamma + k], dgamma[k], dgamma_mag[k], k);
        wdbeta.add(got[L.dbeta + k], dbeta[k], dbeta_mag[k], k);
      }
    } else {
      // Through the impl's db and dW (checked on their sampled columns above), with their
      // error scales: an error within tolerance there stays within it here.
#pragma omp parallel
      {
        Worst g_w, b_w;
#pragma omp for schedule(static)
        for (std::size_t k = 0; k < s.hidden; ++k) {
          double db_ref = 0, dg_ref = 0, wabs = 0;
          for (std::size_t j = 0; j < s.out; ++j) {
            const double w = W[j * s.hidden + k], db = got[L.db + j];
            db_ref += db * w;
            dg_ref += w * (got[L.dw + j * s.hidden + k] - beta[k] * db);
            wabs += std::fabs(w);
          }
          b_w.add(got[L.dbeta + k], db_ref, 2 * wabs * db_scale, k);
          g_w.add(got[L.dgamma + k], dg_ref / gamma[k], 2 * wabs * (dw_scale[k] + std::fabs(beta[k]) * db_scale) / gamma[k], k);
        }
        std::lock_guard lock(merge);
        wdg.merge(g_w);
        wdbeta.merge(b_w);
      }
    }
  }

  const std::pair<const char*, const Worst*> results[] = {{"y", &wy},   {"dx", &wdx},         {"dW", &wdw},
                                                          {"db", &wdb}, {"dgamma", &wdg}, {"dbeta", &wdbeta}};
  const std::pair<const char*, const Worst*>* worst = &results[0];
  for (auto& r : results)
    if (r.second->err > worst->second->err) worst = &r;
  check.max_error = worst->second->err;
  check.ok = check.max_error <= check.tolerance;
  check.detail = fmt::format(
      "max scaled error {:.3g} in {}[{}] (got {:.7g}, expected {:.7g}); y {:.2g}, dx {:.2g} over {} rows, dW {:.2g}, "
      "db {:.2g} over {} columns{} (tolerance {:.3g})",
      worst->second->err, worst->first, worst->second->at, worst->second->got, worst->second->ref, wy.err, wdx.err,
      picks.size(), wdw.err, wdb.err, cols.size(),
      s.layernorm ? fmt::format(", dgamma {:.2g}, dbeta {:.2g}{}", wdg.err, wdbeta.err, all_rows ? "" : " (via dW, db)")
                  : "",
      check.tolerance);
  return check;
}

void reference_train_step(const TrainLinearOp& op, const HostTensors& in, HostTensor& out) {
  const Shape s = shape_of(op.kase());
  const TrainLayout L = train_layout(s);
  const Rows rows(s, in);
  const HostTensor& W = in[1];
  const HostTensor& dy = in[op.dy_index()];
  const float* bias = in[2].as<float>();
  std::vector<double> xn(s.rows * s.hidden), xhat(s.rows * s.hidden), dz(s.rows * s.out), res(L.total, 0.0);
  for (std::size_t r = 0; r < s.rows; ++r) rows.row(r, &xn[r * s.hidden], &xhat[r * s.hidden]);
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t j = 0; j < s.out; ++j) {
      double z = bias[j];
      for (std::size_t k = 0; k < s.hidden; ++k) z += xhat[r * s.hidden + k] * W[j * s.hidden + k];
      res[L.y + r * s.out + j] = activation::reference(s.act, z);
      dz[r * s.out + j] = dy[r * s.out + j] * activation::derivative(s.act, z);
      res[L.db + j] += dz[r * s.out + j];
      for (std::size_t k = 0; k < s.hidden; ++k) res[L.dw + j * s.hidden + k] += dz[r * s.out + j] * xhat[r * s.hidden + k];
    }
  std::vector<double> g(s.hidden);
  for (std::size_t r = 0; r < s.rows; ++r) {
    std::fill(g.begin(), g.end(), 0.0);
    for (std::size_t j = 0; j < s.out; ++j)
      for (std::size_t k = 0; k < s.hidden; ++k) g[k] += dz[r * s.out + j] * W[j * s.hidden + k];
    if (!s.layernorm) {
      for (std::size_t k = 0; k < s.hidden; ++k) res[L.dx + r * s.hidden + k] = g[k];
      continue;
    }
    const float* gamma = in[3].as<float>();
    double a = 0, b = 0;
    for (std::size_t k = 0; k < s.hidden; ++k) {
      const double x = xn[r * s.hidden + k];
      a += g[k] * gamma[k], b += g[k] * gamma[k] * x;
      res[L.dgamma + k] += g[k] * x;
      res[L.dbeta + k] += g[k];
    }
    a /= double(s.hidden), b /= double(s.hidden);
    for (std::size_t k = 0; k < s.hidden; ++k)
      res[L.dx + r * s.hidden + k] = rows.rstd[r] * (g[k] * gamma[k] - a - xn[r * s.hidden + k] * b);
  }
  for (std::size_t i = 0; i < L.total; ++i) store(Elem::f32, out.data(), i, res[i]);
}

}  // namespace opmeter::linear
