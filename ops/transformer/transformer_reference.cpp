// transformer_block's fp64 reference, per sequence: its keys and values once, then the rows asked
// for. Each value carries its scale (see transformer_block.hpp): a stage's own sum of |terms|
// plus its inputs' scales carried through it to first order, root-sum-square through sums.
#include <algorithm>
#include <cmath>
#include <map>

#include "ops/activation/activation.hpp"
#include "ops/norm/layernorm_reference.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {
namespace {

// A vector of values and their scales.
struct Scaled {
  std::vector<double> v, m;
  explicit Scaled(std::size_t n = 0) : v(n), m(n) {}
};

std::vector<double> doubles(const HostTensor& t) {
  std::vector<double> out(t.desc().count);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = t[i];
  return out;
}

// The inputs as fp64 (each weight element read once per reference call, not once per use).
struct Weights {
  std::vector<double> ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, w1, b1, w2, b2;
};

// LayerNorm of (x, its scales). Own scale as the layernorm op's (|affine term| + 1); an input
// error moves an output by rstd*|gamma| directly and, through mean and variance, by
// (1 + |normalized|) * rstd*|gamma| * (input scales' RMS) / sqrt(n).
Scaled layernorm(const Scaled& x, const std::vector<double>& g, const std::vector<double>& b) {
  const std::size_t n = x.v.size();
  Scaled xn(n);
  norm::layernorm_row(x.v.data(), n, xn.v.data(), x.m.data(), xn.m.data());
  Scaled y(n);
  for (std::size_t k = 0; k < n; ++k) {
    const double t = xn.v[k] * g[k];
    y.v[k] = t + b[k];
    y.m[k] = std::fabs(t) + std::fabs(b[k]) + 1 + std::fabs(g[k]) * xn.m[k];
  }
  return y;
}

// out_j = b_j + sum_k a_k W[j][k] for j in [j0, j0 + n), W rows of length a.size().
Scaled linear(const Scaled& a, const std::vector<double>& w, const std::vector<double>& b, std::size_t j0, std::size_t n) {
  const std::size_t in = a.v.size();
  Scaled z(n);
  for (std::size_t j = 0; j < n; ++j) {
    const double* wr = w.data() + (j0 + j) * in;
    double s = b[j0 + j], own = std::fabs(s), prop = 0;
    for (std::size_t k = 0; k < in; ++k) {
      const double t = a.v[k] * wr[k], p = wr[k] * a.m[k];
      s += t;
      own += std::fabs(t);
      prop += p * p;
    }
    z.v[j] = s;
    z.m[j] = own + std::sqrt(prop);
  }
  return z;
}

// One attention head for query q (d values) over keys/values [0, keys) at columns c0..c0+d-1.
void attend(const Shape& s, const double* q, const double* qm, const std::vector<Scaled>& k,
            const std::vector<Scaled>& v, std::size_t keys, std::size_t c0, double* o, double* om) {
  const std::size_t d = s.head_dim();
  const double scale = double(s.scale());
  std::vector<double> sc(keys), scm(keys), p(keys);
  double mx = -INFINITY;
  for (std::size_t j = 0; j < keys; ++j) {
    double dot = 0, own = 0, prop = 0;
    for (std::size_t c = 0; c < d; ++c) {
      const double kv = k[j].v[c0 + c], km = k[j].m[c0 + c];
      dot += q[c] * kv;
      own += std::fabs(q[c] * kv);
      prop += q[c] * q[c] * km * km + kv * kv * qm[c] * qm[c];
    }
    sc[j] = dot * scale;
    scm[j] = (own + std::sqrt(prop)) * scale;
    mx = std::max(mx, sc[j]);
  }
  double sum = 0;
  for (std::size_t j = 0; j < keys; ++j) sum += p[j] = std::exp(sc[j] - mx);
  for (auto& x : p) x /= sum;
  for (std::size_t c = 0; c < d; ++c) {
    double out = 0, own = 0;
    for (std::size_t j = 0; j < keys; ++j) {
      out += p[j] * v[j].v[c0 + c];
      own += p[j] * std::fabs(v[j].v[c0 + c]);
    }
    // d o / d v_j = p_j,  d o / d s_j = p_j (v_j - o)
    double from_v = 0, from_s = 0;
    for (std::size_t j = 0; j < keys; ++j) {
      const double a = p[j] * v[j].m[c0 + c], b = p[j] * (v[j].v[c0 + c] - out) * scm[j];
      from_v += a * a;
      from_s += b * b;
    }
    o[c] = out;
    om[c] = own + std::sqrt(from_v) + std::sqrt(from_s);
  }
}

Scaled input_row(const HostTensor& x, std::size_t row, std::size_t h) {
  Scaled r(h);
  for (std::size_t k = 0; k < h; ++k) r.v[k] = x[row * h + k];  // exact inputs: scale 0
  return r;
}

}  // namespace

std::vector<double> TransformerBlockOp::weight_values(const HostTensors& in, std::size_t which) const {
  return doubles(in[which]);
}

void TransformerBlockOp::reference_rows(const HostTensors& in, const std::vector<std::size_t>& rows,
                                        const RowSink& each) const {
  reference_rows_of(in, rows, each, true);
}

void TransformerBlockOp::reference_rows_of(const HostTensors& in, const std::vector<std::size_t>& rows,
                                           const RowSink& each, bool stored_weights) const {
  const auto s = shape_of(case_);
  const std::size_t h = s.hidden;
  auto weight = [&](std::size_t k) { return stored_weights ? weight_values(in, k) : doubles(in[k]); };
  const Weights w{doubles(in[kLn1Gamma]), doubles(in[kLn1Beta]), weight(kWqkv),          doubles(in[kBqkv]),
                  weight(kWo),            doubles(in[kBo]),      doubles(in[kLn2Gamma]), doubles(in[kLn2Beta]),
                  weight(kW1),            doubles(in[kB1]),      weight(kW2),            doubles(in[kB2])};
  std::map<std::size_t, std::vector<std::size_t>> by_sequence;  // sequence -> indices into rows
  for (std::size_t i = 0; i < rows.size(); ++i) by_sequence[rows[i] / s.seq].push_back(i);

  for (auto& [b, picks] : by_sequence) {
    std::size_t need = s.seq;  // causal: keys up to the last row asked for
    if (s.causal) {
      need = 0;
      for (std::size_t i : picks) need = std::max(need, rows[i] % s.seq + 1);
    }
    std::vector<Scaled> k(need), v(need);
#pragma omp parallel for schedule(dynamic, 4)
    for (std::size_t j = 0; j < need; ++j) {
      auto ln = layernorm(input_row(in[kX], b * s.seq + j, h), w.ln1g, w.ln1b);
      k[j] = linear(ln, w.wqkv, w.bqkv, h, h);
      v[j] = linear(ln, w.wqkv, w.bqkv, 2 * h, h);
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < picks.size(); ++p) {
      const std::size_t row = rows[picks[p]], i = row % s.seq;
      const Scaled x = input_row(in[kX], row, h);
      const Scaled q = linear(layernorm(x, w.ln1g, w.ln1b), w.wqkv, w.bqkv, 0, h);
      Scaled o(h);
      for (std::size_t head = 0; head < s.heads; ++head) {
        const std::size_t c0 = head * s.head_dim();
        attend(s, q.v.data() + c0, q.m.data() + c0, k, v, s.causal ? i + 1 : s.seq, c0, o.v.data() + c0,
               o.m.data() + c0);
      }
      const Scaled a = linear(o, w.wo, w.bo, 0, h);
      Scaled hr(h);
      for (std::size_t c = 0; c < h; ++c) {
        hr.v[c] = x.v[c] + a.v[c];
        hr.m[c] = std::fabs(x.v[c]) + std::fabs(a.v[c]) + a.m[c];
      }
      Scaled u = linear(layernorm(hr, w.ln2g, w.ln2b), w.w1, w.b1, 0, s.mlp);
      for (std::size_t c = 0; c < s.mlp; ++c) {
        // Activations change an error by at most their slope (< 1.2); their own rounding is
        // within |u|.
        u.m[c] = 1.2 * u.m[c] + std::fabs(u.v[c]);
        u.v[c] = activation::reference(s.act, u.v[c]);
      }
      const Scaled f = linear(u, w.w2, w.b2, 0, h);
      std::vector<double> ref(h), mag(h);
      for (std::size_t c = 0; c < h; ++c) {
        ref[c] = hr.v[c] + f.v[c];
        mag[c] = std::fabs(hr.v[c]) + std::fabs(f.v[c]) + hr.m[c] + f.m[c] + 1e-6;
      }
      each(picks[p], ref.data(), mag.data());
    }
  }
}

void TransformerBlockOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  const std::size_t h = out_cols();
  reference_rows(in, {row}, [&](std::size_t, const double* r, const double* m) {
    std::copy(r, r + h, ref);
    std::copy(m, m + h, mag);
  });
}

}  // namespace opmeter::transformer
