// transformer_block's forward and backward in fp64 with magnitudes (transformer_train_reference.hpp).
// GEMMs through OpenBLAS's cblas_dgemm, row-major; everything else plain loops.
//
// A gradient's magnitude is its own scale (the sum of |terms| of the sum that makes it: its own
// rounding) plus its inputs' magnitudes carried through it root-sum-square (independent
// rounding errors add that way), as the forward reference does (transformer_reference.cpp).
#include "ops/transformer/transformer_train_reference.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "ops/activation/activation.hpp"
#include "ops/norm/layernorm_reference.hpp"
#include "ops/transformer/transformer_train.hpp"

namespace opmeter::transformer {
namespace {
using Mat = std::vector<double>;

// The three products: C (m x n) = A B^T (B n x k), A B (B k x n), A^T B (A k x m, B k x n).
enum class Form { nt, nn, tn };
Mat mul(Form f, const Mat& a, const Mat& b, std::size_t m, std::size_t n, std::size_t k) {
  Mat c(m * n);
  const auto ta = f == Form::tn ? CblasTrans : CblasNoTrans, tb = f == Form::nt ? CblasTrans : CblasNoTrans;
  const int lda = f == Form::tn ? int(m) : int(k), ldb = f == Form::nt ? int(k) : int(n);
  cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a.data(), lda, b.data(), ldb, 0.0, c.data(), int(n));
  return c;
}
Mat map(const Mat& a, double (*f)(double)) {
  Mat out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f(a[i]);
  return out;
}
double square(double v) { return v * v; }
double absolute(double v) { return std::fabs(v); }
Mat doubles(const HostTensor& t) {
  Mat out(t.desc().count);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = t[i];
  return out;
}

// A value and its magnitude; m empty: an exact value (an input, a forward value taken as exact).
struct Pair {
  Mat v, m;
};
Pair exact(Mat v) { return {std::move(v), {}}; }

// The product of a and b with its magnitude: own |a||b|, carried sqrt(ma^2 b^2 + a^2 mb^2).
Pair mul(Form f, const Pair& a, const Pair& b, std::size_t m, std::size_t n, std::size_t k) {
  Pair c{mul(f, a.v, b.v, m, n, k), mul(f, map(a.v, absolute), map(b.v, absolute), m, n, k)};
  Mat carried(c.v.size(), 0.0);
  auto carry = [&](const Mat& x) {
    for (std::size_t i = 0; i < x.size(); ++i) carried[i] += x[i];
  };
  if (!a.m.empty()) carry(mul(f, map(a.m, square), map(b.v, square), m, n, k));
  if (!b.m.empty()) carry(mul(f, map(a.v, square), map(b.m, square), m, n, k));
  for (std::size_t i = 0; i < carried.size(); ++i) c.m[i] += std::sqrt(carried[i]);
  return c;
}
// z + bias (every row), the bias's magnitude added to z's.
Pair with_bias(Pair z, const Mat& bias) {
  for (std::size_t i = 0; i < z.v.size(); ++i) {
    z.v[i] += bias[i % bias.size()];
    z.m[i] += std::fabs(bias[i % bias.size()]);
  }
  return z;
}
Pair column_sums(const Pair& a, std::size_t rows, std::size_t cols) {
  Pair out{Mat(cols, 0.0), Mat(cols, 0.0)};
  Mat carried(cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = a.v[r * cols + c];
      out.v[c] += v;
      out.m[c] += std::fabs(v);
      if (!a.m.empty()) carried[c] += square(a.m[r * cols + c]);
    }
  for (std::size_t c = 0; c < cols; ++c) out.m[c] += std::sqrt(carried[c]);
  return out;
}

// LayerNorm over rows of x (rows x h, x.m its errors' scale, empty: exact): normalized xn, rstd
// per row, xhat = xn g + b, and the scales of xn's and xhat's errors: their own rounding plus x's
// carried through (rstd |g| directly and, through mean and variance, (1 + |xn|) rstd |g| times
// the RMS of x's scales / sqrt(h)), as the forward reference's LayerNorm.
struct Norm {
  Mat xn, xn_m, rstd;
  Pair xhat;
};
Norm layernorm(const Pair& x, const Mat& g, const Mat& b, std::size_t rows, std::size_t h) {
  Norm n{Mat(rows * h), Mat(rows * h), Mat(rows), {Mat(rows * h), Mat(rows * h)}};
  for (std::size_t r = 0; r < rows; ++r) {
    n.rstd[r] = norm::layernorm_row(&x.v[r * h], h, &n.xn[r * h], x.m.empty() ? nullptr : &x.m[r * h], &n.xn_m[r * h]);
    for (std::size_t k = 0; k < h; ++k) {
      const std::size_t i = r * h + k;
      n.xn_m[i] += std::fabs(n.xn[i]);  // xn's own rounding
      n.xhat.v[i] = n.xn[i] * g[k] + b[k];
      n.xhat.m[i] = std::fabs(n.xn[i] * g[k]) + std::fabs(b[k]) + std::fabs(g[k]) * n.xn_m[i];
    }
  }
  return n;
}
// LayerNorm's backward from dxhat d: dx = add + rstd (g d - mean(g d) - xn mean(g d xn)),
// dgamma = sum_rows d xn, dbeta = sum_rows d. An input error moves dx by rstd |g| directly and
// through the two means by its RMS / sqrt(h) (1 + |xn|), as the forward's LayerNorm.
struct NormGrads {
  Pair dx, dgamma, dbeta;
};
NormGrads layernorm_backward(const Norm& n, const Mat& g, const Pair& d, const Pair& add, std::size_t rows, std::size_t h) {
  NormGrads out{{add.v, Mat(rows * h, 0.0)}, {Mat(h, 0.0), Mat(h, 0.0)}, {}};
  Mat gamma_carried(h, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    double a = 0, axn = 0, own_a = 0, own_axn = 0, m2 = 0;
    for (std::size_t k = 0; k < h; ++k) {
      const std::size_t i = r * h + k;
      a += g[k] * d.v[i];
      axn += g[k] * d.v[i] * n.xn[i];
      own_a += std::fabs(g[k] * d.v[i]);
      own_axn += std::fabs(g[k] * d.v[i] * n.xn[i]);
      m2 += square(g[k] * d.m[i]) + square(g[k] * d.v[i] * n.xn_m[i]);
      out.dgamma.v[k] += d.v[i] * n.xn[i];
      out.dgamma.m[k] += std::fabs(d.v[i] * n.xn[i]);
      gamma_carried[k] += square(d.m[i] * n.xn[i]) + square(d.v[i] * n.xn_m[i]);
    }
    a /= double(h), axn /= double(h), own_a /= double(h), own_axn /= double(h);
    const double spread = std::sqrt(m2 / double(h)) / std::sqrt(double(h));
    for (std::size_t k = 0; k < h; ++k) {
      const std::size_t i = r * h + k;
      const double term = n.rstd[r] * (g[k] * d.v[i] - a - n.xn[i] * axn);
      const double own = n.rstd[r] * (std::fabs(g[k] * d.v[i]) + own_a + std::fabs(n.xn[i]) * own_axn);
      const double carried =
          n.rstd[r] * (std::fabs(g[k]) * d.m[i] + (1 + std::fabs(n.xn[i])) * spread + n.xn_m[i] * std::fabs(axn));
      out.dx.m[i] = std::fabs(out.dx.v[i]) + std::fabs(term) + own + carried + (add.m.empty() ? 0.0 : add.m[i]);
      out.dx.v[i] += term;
    }
  }
  for (std::size_t k = 0; k < h; ++k) out.dgamma.m[k] += std::sqrt(gamma_carried[k]);
  out.dbeta = column_sums(d, rows, h);
  return out;
}

// dW = dZ^T A (n x k; dZ rows x n, A rows x k) on the rows `picks` of it (all where empty), the
// other rows NaN: the picked columns of dZ gathered, their product alone.
Pair weight_gradient(const Pair& dz, const Pair& a, std::size_t rows, std::size_t n, std::size_t k,
                     const std::vector<std::size_t>& picks) {
  if (picks.empty()) return mul(Form::tn, dz, a, n, k, rows);
  const std::size_t p = picks.size();
  Pair cols{Mat(rows * p), dz.m.empty() ? Mat{} : Mat(rows * p)};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < p; ++c) {
      cols.v[r * p + c] = dz.v[r * n + picks[c]];
      if (!dz.m.empty()) cols.m[r * p + c] = dz.m[r * n + picks[c]];
    }
  const Pair part = mul(Form::tn, cols, a, p, k, rows);
  Pair out{Mat(n * k, NAN), Mat(n * k, NAN)};
  for (std::size_t c = 0; c < p; ++c)
    for (std::size_t j = 0; j < k; ++j) {
      out.v[picks[c] * k + j] = part.v[c * k + j];
      out.m[picks[c] * k + j] = part.m[c * k + j];
    }
  return out;
}

// One (batch, head)'s q, k, v (seq x d) from the qkv rows, and columns of rows x width.
Mat gather_cols(const Shape& s, const Mat& from, std::size_t b, std::size_t col0, std::size_t width) {
  const std::size_t n = s.seq, d = s.head_dim();
  Mat out(n * d);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) out[i * d + c] = from[(b * n + i) * width + col0 + c];
  return out;
}
void scatter(const Shape& s, const Mat& from, std::size_t b, std::size_t col0, std::size_t width, Mat& to) {
  const std::size_t n = s.seq, d = s.head_dim();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) to[(b * n + i) * width + col0 + c] = from[i * d + c];
}
struct Head {
  Pair q, k, v;
};
Head gather(const Shape& s, const Pair& qkv, std::size_t b, std::size_t head) {
  const std::size_t c0 = head * s.head_dim(), h = s.hidden;
  auto part = [&](std::size_t col) {
    return Pair{gather_cols(s, qkv.v, b, col, 3 * h), gather_cols(s, qkv.m, b, col, 3 * h)};
  };
  return {part(c0), part(h + c0), part(2 * h + c0)};
}
// Probabilities P (n x n, masked entries 0); their magnitude: P times the scores' (an error in a
// score moves P by P times it).
Pair probabilities(const Shape& s, const Head& hd) {
  const std::size_t n = s.seq, d = s.head_dim();
  const double scale = double(s.scale());
  const Pair sc = mul(Form::nt, hd.q, hd.k, n, n, d);
  Pair p{Mat(n * n, 0.0), Mat(n * n, 0.0)};
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t keys = s.causal ? i + 1 : n;
    double mx = -INFINITY, sum = 0;
    for (std::size_t j = 0; j < keys; ++j) mx = std::max(mx, sc.v[i * n + j] * scale);
    for (std::size_t j = 0; j < keys; ++j) sum += p.v[i * n + j] = std::exp(sc.v[i * n + j] * scale - mx);
    for (std::size_t j = 0; j < keys; ++j) {
      p.v[i * n + j] /= sum;
      p.m[i * n + j] = p.v[i * n + j] * scale * sc.m[i * n + j];
    }
  }
  return p;
}

}  // namespace

double train_reference_cost(const Shape& s, std::size_t sampled_rows) {
  const double r = double(s.rows()), h = double(s.hidden), m = double(s.mlp);
  const double gemms = 2 * r * h * (3 * h) + 2 * r * h * h + 4 * r * h * m;
  const double attention = double(s.batch * s.heads) * 2 * double(s.seq) * double(s.seq) * double(s.head_dim());
  if (sampled_rows == 0) return 7 * gemms + 2 * r * h * m + 20 * attention;
  // The weight gradients (4 of the 7) on sampled rows of each: 4 products of rows x k per row.
  const double picked = 4 * 2 * r * double(sampled_rows) * (h + h + h + m);
  return 3 * gemms + 2 * r * h * m + 20 * attention + picked;
}

TrainReference::TrainReference(const Shape& s, const HostTensors& in, Elem act_elem, double tolerance,
                               double forward_tolerance, const WeightRows& rows) {
  const std::size_t r = s.rows(), h = s.hidden, m = s.mlp, d = s.head_dim(), n = s.seq;
  const double scale = double(s.scale());
  // A stored activation is within this of the exact one, relative (bf16's 5.985 is stored as 6.0).
  const double half_ulp = unit_roundoff(act_elem);
  const Mat x = doubles(in[0]), g1 = doubles(in[1]), be1 = doubles(in[2]), wqkv = doubles(in[3]), bqkv = doubles(in[4]),
            wo = doubles(in[5]), bo = doubles(in[6]), g2 = doubles(in[7]), be2 = doubles(in[8]), w1 = doubles(in[9]),
            b1 = doubles(in[10]), w2 = doubles(in[11]), b2 = doubles(in[12]), dy = doubles(in[kBlockInputs]);

  // Forward, each value with its errors' scale.
  const Norm n1 = layernorm(exact(x), g1, be1, r, h);
  const Pair qkv = with_bias(mul(Form::nt, n1.xhat, exact(wqkv), r, 3 * h, h), bqkv);
  Pair o{Mat(r * h), Mat(r * h)};
  // Each (batch, head)'s probabilities, kept for the backward (batch x heads x seq^2 x 2 doubles).
  std::vector<Pair> probs(s.batch * s.heads);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t head = 0; head < s.heads; ++head) {
      const Head hd = gather(s, qkv, b, head);
      const Pair& p = probs[b * s.heads + head] = probabilities(s, hd);
      const Pair oh = mul(Form::nn, p, hd.v, n, d, n);
      scatter(s, oh.v, b, head * d, h, o.v);
      scatter(s, oh.m, b, head * d, h, o.m);
    }
  Pair hres = with_bias(mul(Form::nt, o, exact(wo), r, h, h), bo);
  for (std::size_t i = 0; i < hres.v.size(); ++i) {
    hres.m[i] += std::fabs(x[i]) + std::fabs(hres.v[i]);
    hres.v[i] += x[i];
  }
  const Norm n2 = layernorm(hres, g2, be2, r, h);
  const Pair u = with_bias(mul(Form::nt, n2.xhat, exact(w1), r, m, h), b1);
  Pair a{Mat(u.v.size()), Mat(u.v.size())};
  for (std::size_t i = 0; i < u.v.size(); ++i) {
    a.v[i] = activation::reference(s.act, u.v[i]);
    a.m[i] = std::fabs(a.v[i]) + 1.2 * u.m[i];  // its own rounding; act' < 1.2 carries u's
  }

  // Backward: the MLP.
  const Pair dY = exact(dy);
  const Pair dw2 = weight_gradient(dY, a, r, h, m, rows.w2);
  const Pair db2 = column_sums(dY, r, h);
  Pair du = mul(Form::nn, dY, exact(w2), r, m, h);
  for (std::size_t i = 0; i < u.v.size(); ++i) {
    // The layer's u differs from this one by its stored rounding and by the forward's errors up
    // to its tolerance, LayerNorm's amplification of them included (delta); where act' changes
    // within delta, the element may differ by that change (carried over the tolerance).
    const double dv = activation::derivative(s.act, u.v[i]);
    const double delta = half_ulp * std::fabs(u.v[i]) + forward_tolerance * 4 * u.m[i];
    const double change = std::max(std::fabs(activation::derivative(s.act, u.v[i] + delta) - dv),
                                   std::fabs(activation::derivative(s.act, u.v[i] - delta) - dv));
    // (Twice the change over the tolerance: a flipped element then uses at most half of it, the
    // rest for the other rows' rounding.)
    // |act'|'s own rounding is relative to its terms' magnitudes (derivative_magnitude), not to it.
    du.m[i] = std::fabs(dv) * du.m[i] + std::fabs(du.v[i]) * activation::derivative_magnitude(s.act, u.v[i]) +
              2 * std::fabs(du.v[i]) * change / tolerance;
    du.v[i] *= dv;
  }
  const Pair dw1 = weight_gradient(du, n2.xhat, r, m, h, rows.w1);
  const Pair db1 = column_sums(du, r, m);
  const Pair dxhat2 = mul(Form::nn, du, exact(w1), r, h, m);
  const NormGrads ln2 = layernorm_backward(n2, g2, dxhat2, dY, r, h);
  const Pair& dh = ln2.dx;

  // Attention: the output projection, then per (batch, head) dS = P (dP - D) scale with
  // dP = dO v^T and D_i = dO_i . o_i; dq = dS k, dk = dS^T q, dv = P^T dO.
  const Pair dwo = weight_gradient(dh, o, r, h, h, rows.wo);
  const Pair dbo = column_sums(dh, r, h);
  const Pair dO = mul(Form::nn, dh, exact(wo), r, h, h);
  Pair dqkv{Mat(r * 3 * h), Mat(r * 3 * h)};
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t head = 0; head < s.heads; ++head) {
      const std::size_t c0 = head * d;
      const Head hd = gather(s, qkv, b, head);
      const Pair& p = probs[b * s.heads + head];
      const Pair oh{gather_cols(s, o.v, b, c0, h), gather_cols(s, o.m, b, c0, h)};
      const Pair dOh{gather_cols(s, dO.v, b, c0, h), gather_cols(s, dO.m, b, c0, h)};
      const Pair dp = mul(Form::nt, dOh, hd.v, n, n, d);
      Pair ds{Mat(n * n, 0.0), Mat(n * n, 0.0)};
      for (std::size_t i = 0; i < n; ++i) {
        double dd = 0, own = 0, carried = 0;
        for (std::size_t c = 0; c < d; ++c) {
          const std::size_t e = i * d + c;
          dd += dOh.v[e] * oh.v[e];
          own += std::fabs(dOh.v[e] * oh.v[e]);
          carried += square(dOh.m[e] * oh.v[e]) + square(dOh.v[e] * oh.m[e]);
        }
        const double dd_m = own + std::sqrt(carried);
        for (std::size_t j = 0; j < n; ++j) {
          const std::size_t e = i * n + j;
          ds.v[e] = p.v[e] * (dp.v[e] - dd) * scale;
          ds.m[e] = scale * (p.v[e] * (std::fabs(dp.v[e]) + std::fabs(dd)) +
                             std::sqrt(square(p.m[e] * (dp.v[e] - dd)) + square(p.v[e] * dp.m[e]) + square(p.v[e] * dd_m)));
        }
      }
      const Pair dq = mul(Form::nn, ds, hd.k, n, d, n), dk = mul(Form::tn, ds, hd.q, n, d, n),
                 dv = mul(Form::tn, p, dOh, n, d, n);
      for (const auto& [grad, col] : {std::pair{&dq, c0}, {&dk, h + c0}, {&dv, 2 * h + c0}}) {
        scatter(s, grad->v, b, col, 3 * h, dqkv.v);
        scatter(s, grad->m, b, col, 3 * h, dqkv.m);
      }
    }
  const Pair dwqkv = weight_gradient(dqkv, n1.xhat, r, 3 * h, h, rows.wqkv);
  const Pair dbqkv = column_sums(dqkv, r, 3 * h);
  const Pair dxhat1 = mul(Form::nn, dqkv, exact(wqkv), r, h, 3 * h);
  const NormGrads ln1 = layernorm_backward(n1, g1, dxhat1, dh, r, h);

  // In the inputs' order (TrainLayout).
  for (const Pair* p : {&ln1.dx, &ln1.dgamma, &ln1.dbeta, &dwqkv, &dbqkv, &dwo, &dbo, &ln2.dgamma, &ln2.dbeta, &dw1, &db1,
                        &dw2, &db2}) {
    value_.insert(value_.end(), p->v.begin(), p->v.end());
    for (double v : p->m) mag_.push_back(v + 1e-30);
  }
}

}  // namespace opmeter::transformer
