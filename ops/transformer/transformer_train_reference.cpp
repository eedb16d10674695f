// transformer_block's forward and backward in fp64 with magnitudes (transformer_train_reference.hpp).
// GEMMs through OpenBLAS's cblas_dgemm, row-major; everything else plain loops.
#include "ops/transformer/transformer_train_reference.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "ops/activation/activation.hpp"
#include "ops/transformer/transformer_train.hpp"

namespace opmeter::transformer {
namespace {
using Mat = std::vector<double>;

// C (m x n) = A (m x k) B^T with B n x k.
Mat nt(const Mat& a, const Mat& b, std::size_t m, std::size_t n, std::size_t k) {
  Mat c(m * n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0, a.data(), int(k), b.data(), int(k),
              0.0, c.data(), int(n));
  return c;
}
// C (m x n) = A (m x k) B with B k x n.
Mat nn(const Mat& a, const Mat& b, std::size_t m, std::size_t n, std::size_t k) {
  Mat c(m * n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0, a.data(), int(k), b.data(),
              int(n), 0.0, c.data(), int(n));
  return c;
}
// C (m x n) = A^T B with A k x m, B k x n.
Mat tn(const Mat& a, const Mat& b, std::size_t m, std::size_t n, std::size_t k) {
  Mat c(m * n);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(m), int(n), int(k), 1.0, a.data(), int(m), b.data(), int(n),
              0.0, c.data(), int(n));
  return c;
}
Mat absolute(const Mat& a) {
  Mat out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = std::fabs(a[i]);
  return out;
}
Mat doubles(const HostTensor& t) {
  Mat out(t.desc().count);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = t[i];
  return out;
}
// Adds bias b (n) to every row of a (rows x n).
void add_bias(Mat& a, const Mat& b) {
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i % n];
}
Mat column_sums(const Mat& a, std::size_t rows, std::size_t cols) {
  Mat out(cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[c] += a[r * cols + c];
  return out;
}

// A value and its magnitude.
struct Pair {
  Mat v, m;
};

// LayerNorm over rows of x (rows x h): normalized xn, rstd per row, and xhat = xn g + b.
struct Norm {
  Mat xn, rstd, xhat;
};
Norm layernorm(const Mat& x, const Mat& g, const Mat& b, std::size_t rows, std::size_t h) {
  Norm n{Mat(rows * h), Mat(rows), Mat(rows * h)};
  for (std::size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::size_t k = 0; k < h; ++k) mean += x[r * h + k];
    mean /= double(h);
    for (std::size_t k = 0; k < h; ++k) var += (x[r * h + k] - mean) * (x[r * h + k] - mean);
    n.rstd[r] = 1 / std::sqrt(var / double(h) + tensor::kNormEps);
    for (std::size_t k = 0; k < h; ++k) {
      n.xn[r * h + k] = (x[r * h + k] - mean) * n.rstd[r];
      n.xhat[r * h + k] = n.xn[r * h + k] * g[k] + b[k];
    }
  }
  return n;
}
// LayerNorm's backward from dxhat (value, magnitude): dx (+ `add`), dgamma, dbeta.
struct NormGrads {
  Pair dx, dgamma, dbeta;
};
NormGrads layernorm_backward(const Norm& n, const Mat& g, const Pair& d, const Pair& add, std::size_t rows, std::size_t h) {
  NormGrads out{{add.v, add.m}, {Mat(h, 0.0), Mat(h, 0.0)}, {Mat(h, 0.0), Mat(h, 0.0)}};
  for (std::size_t r = 0; r < rows; ++r) {
    double a = 0, axn = 0, am = 0, amxn = 0;
    for (std::size_t k = 0; k < h; ++k) {
      const std::size_t i = r * h + k;
      a += g[k] * d.v[i];
      axn += g[k] * d.v[i] * n.xn[i];
      am += g[k] * d.m[i];
      amxn += g[k] * d.m[i] * std::fabs(n.xn[i]);
      out.dgamma.v[k] += d.v[i] * n.xn[i];
      out.dgamma.m[k] += d.m[i] * std::fabs(n.xn[i]);
      out.dbeta.v[k] += d.v[i];
      out.dbeta.m[k] += d.m[i];
    }
    a /= double(h), axn /= double(h), am /= double(h), amxn /= double(h);
    for (std::size_t k = 0; k < h; ++k) {
      const std::size_t i = r * h + k;
      out.dx.v[i] += n.rstd[r] * (g[k] * d.v[i] - a - n.xn[i] * axn);
      out.dx.m[i] += n.rstd[r] * (g[k] * d.m[i] + am + std::fabs(n.xn[i]) * amxn);
    }
  }
  return out;
}

// One (batch, head): its q, k, v, o (seq x d) gathered from the block's rows.
struct Head {
  std::size_t n, d;
  Mat q, k, v;
};
Head gather(const Shape& s, const Mat& qkv, std::size_t b, std::size_t head) {
  const std::size_t n = s.seq, d = s.head_dim(), h = s.hidden;
  Head out{n, d, Mat(n * d), Mat(n * d), Mat(n * d)};
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) {
      const std::size_t at = (b * n + i) * 3 * h + head * d + c;
      out.q[i * d + c] = qkv[at];
      out.k[i * d + c] = qkv[at + h];
      out.v[i * d + c] = qkv[at + 2 * h];
    }
  return out;
}
// Probabilities P (n x n, masked entries 0) and their magnitude P (1 + scale sum |q||k|).
Pair probabilities(const Shape& s, const Head& hd) {
  const std::size_t n = hd.n, d = hd.d;
  const double scale = double(s.scale());
  Mat sc = nt(hd.q, hd.k, n, n, d), sm = nt(absolute(hd.q), absolute(hd.k), n, n, d);
  Pair p{Mat(n * n, 0.0), Mat(n * n, 0.0)};
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t keys = s.causal ? i + 1 : n;
    double mx = -INFINITY, sum = 0;
    for (std::size_t j = 0; j < keys; ++j) mx = std::max(mx, sc[i * n + j] * scale);
    for (std::size_t j = 0; j < keys; ++j) sum += p.v[i * n + j] = std::exp(sc[i * n + j] * scale - mx);
    for (std::size_t j = 0; j < keys; ++j) {
      p.v[i * n + j] /= sum;
      p.m[i * n + j] = p.v[i * n + j] * (1 + scale * sm[i * n + j]);
    }
  }
  return p;
}
// Scatters head values (n x d) into columns `offset + head * d` of rows x `width`.
void scatter(const Shape& s, const Mat& from, std::size_t b, std::size_t col0, std::size_t width, Mat& to) {
  const std::size_t n = s.seq, d = s.head_dim();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) to[(b * n + i) * width + col0 + c] = from[i * d + c];
}
Mat gather_cols(const Shape& s, const Mat& from, std::size_t b, std::size_t col0, std::size_t width) {
  const std::size_t n = s.seq, d = s.head_dim();
  Mat out(n * d);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) out[i * d + c] = from[(b * n + i) * width + col0 + c];
  return out;
}

}  // namespace

double train_reference_cost(const Shape& s) {
  const double r = double(s.rows()), h = double(s.hidden), m = double(s.mlp);
  const double gemms = 2 * r * h * (3 * h) + 2 * r * h * h + 4 * r * h * m;
  const double attention = double(s.batch * s.heads) * 2 * double(s.seq) * double(s.seq) * double(s.head_dim());
  return 5 * gemms + 2 * r * h * m + 14 * attention;
}

TrainReference::TrainReference(const Shape& s, const HostTensors& in, Elem act_elem, double tolerance) {
  const std::size_t r = s.rows(), h = s.hidden, m = s.mlp, d = s.head_dim();
  const double scale = double(s.scale());
  const double half_ulp = act_elem == Elem::bf16 ? 0x1p-9 : act_elem == Elem::f16 ? 0x1p-12 : 0x1p-24;
  const Mat x = doubles(in[0]), g1 = doubles(in[1]), be1 = doubles(in[2]), wqkv = doubles(in[3]), bqkv = doubles(in[4]),
            wo = doubles(in[5]), bo = doubles(in[6]), g2 = doubles(in[7]), be2 = doubles(in[8]), w1 = doubles(in[9]),
            b1 = doubles(in[10]), w2 = doubles(in[11]), b2 = doubles(in[12]), dy = doubles(in[kBlockInputs]);

  // Forward.
  const Norm n1 = layernorm(x, g1, be1, r, h);
  Mat qkv = nt(n1.xhat, wqkv, r, 3 * h, h);
  add_bias(qkv, bqkv);
  Mat o(r * h);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t head = 0; head < s.heads; ++head) {
      const Head hd = gather(s, qkv, b, head);
      scatter(s, nn(probabilities(s, hd).v, hd.v, s.seq, d, s.seq), b, head * d, h, o);
    }
  Mat hres = nt(o, wo, r, h, h);
  add_bias(hres, bo);
  for (std::size_t i = 0; i < hres.size(); ++i) hres[i] += x[i];
  const Norm n2 = layernorm(hres, g2, be2, r, h);
  Mat u = nt(n2.xhat, w1, r, m, h), umag = nt(absolute(n2.xhat), absolute(w1), r, m, h);
  add_bias(u, b1);
  add_bias(umag, absolute(b1));
  Mat a(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) a[i] = activation::reference(s.act, u[i]);

  // Backward.
  const Pair dY{dy, absolute(dy)};
  const Pair dw2{tn(dY.v, a, h, m, r), tn(dY.m, absolute(a), h, m, r)};
  const Pair db2{column_sums(dY.v, r, h), column_sums(dY.m, r, h)};
  Pair du{nn(dY.v, w2, r, m, h), nn(dY.m, absolute(w2), r, m, h)};
  for (std::size_t i = 0; i < u.size(); ++i) {
    // The layer's u differs from this one by its stored rounding and its sums (delta); where
    // act' changes within delta, the element may differ by that change (carried over the tolerance).
    const double dv = activation::derivative(s.act, u[i]), delta = half_ulp * std::fabs(u[i]) + 0x1p-20 * umag[i];
    const double change = std::max(std::fabs(activation::derivative(s.act, u[i] + delta) - dv),
                                   std::fabs(activation::derivative(s.act, u[i] - delta) - dv));
    du.m[i] *= std::fabs(dv) + change / tolerance;
    du.v[i] *= dv;
  }
  const Pair dw1{tn(du.v, n2.xhat, m, h, r), tn(du.m, absolute(n2.xhat), m, h, r)};
  const Pair db1{column_sums(du.v, r, m), column_sums(du.m, r, m)};
  const Pair dxhat2{nn(du.v, w1, r, h, m), nn(du.m, absolute(w1), r, h, m)};
  const NormGrads ln2 = layernorm_backward(n2, g2, dxhat2, dY, r, h);
  const Pair& dh = ln2.dx;
  const Pair dwo{tn(dh.v, o, h, h, r), tn(dh.m, absolute(o), h, h, r)};
  const Pair dbo{column_sums(dh.v, r, h), column_sums(dh.m, r, h)};
  const Pair dO{nn(dh.v, wo, r, h, h), nn(dh.m, absolute(wo), r, h, h)};

  // Attention's backward per (batch, head): dS = P (dP - D), D_i = dO_i . o_i.
  Pair dqkv{Mat(r * 3 * h), Mat(r * 3 * h)};
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t head = 0; head < s.heads; ++head) {
      const std::size_t n = s.seq, c0 = head * d;
      const Head hd = gather(s, qkv, b, head);
      const Pair p = probabilities(s, hd);
      const Mat oh = gather_cols(s, o, b, c0, h), dov = gather_cols(s, dO.v, b, c0, h), dom = gather_cols(s, dO.m, b, c0, h);
      const Mat dp = nt(dov, hd.v, n, n, d), dpm = nt(dom, absolute(hd.v), n, n, d);
      Pair ds{Mat(n * n, 0.0), Mat(n * n, 0.0)};
      for (std::size_t i = 0; i < n; ++i) {
        double dd = 0, ddm = 0;
        for (std::size_t c = 0; c < d; ++c) {
          dd += dov[i * d + c] * oh[i * d + c];
          ddm += dom[i * d + c] * std::fabs(oh[i * d + c]);
        }
        for (std::size_t j = 0; j < n; ++j) {
          ds.v[i * n + j] = p.v[i * n + j] * (dp[i * n + j] - dd) * scale;
          ds.m[i * n + j] = p.m[i * n + j] * (dpm[i * n + j] + ddm) * scale;
        }
      }
      scatter(s, nn(ds.v, hd.k, n, d, n), b, c0, 3 * h, dqkv.v);
      scatter(s, nn(ds.m, absolute(hd.k), n, d, n), b, c0, 3 * h, dqkv.m);
      scatter(s, tn(ds.v, hd.q, n, d, n), b, h + c0, 3 * h, dqkv.v);
      scatter(s, tn(ds.m, absolute(hd.q), n, d, n), b, h + c0, 3 * h, dqkv.m);
      scatter(s, tn(p.v, dov, n, d, n), b, 2 * h + c0, 3 * h, dqkv.v);
      scatter(s, tn(p.m, dom, n, d, n), b, 2 * h + c0, 3 * h, dqkv.m);
    }
  const Pair dwqkv{tn(dqkv.v, n1.xhat, 3 * h, h, r), tn(dqkv.m, absolute(n1.xhat), 3 * h, h, r)};
  const Pair dbqkv{column_sums(dqkv.v, r, 3 * h), column_sums(dqkv.m, r, 3 * h)};
  const Pair dxhat1{nn(dqkv.v, wqkv, r, h, 3 * h), nn(dqkv.m, absolute(wqkv), r, h, 3 * h)};
  const NormGrads ln1 = layernorm_backward(n1, g1, dxhat1, dh, r, h);

  // In the inputs' order (TrainLayout).
  for (const Pair* p : {&ln1.dx, &ln1.dgamma, &ln1.dbeta, &dwqkv, &dbqkv, &dwo, &dbo, &ln2.dgamma, &ln2.dbeta, &dw1, &db1,
                        &dw2, &db2}) {
    value_.insert(value_.end(), p->v.begin(), p->v.end());
    for (double v : p->m) mag_.push_back(v + 1e-30);
  }
}

}  // namespace opmeter::transformer
