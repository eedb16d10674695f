#include "ops/transformer/self_attention_backward.hpp"

#include <algorithm>
#include <cmath>

namespace opmeter::transformer {
namespace {
using dnnl::memory;
using Dims = memory::dims;

memory::desc f32(const Dims& dims, const Dims& strides) { return memory::desc(dims, memory::data_type::f32, strides); }

}  // namespace

std::size_t SelfAttentionBackward::group_size(const Shape& s, std::size_t scores_bytes) {
  const std::size_t per_head = 2 * s.seq * s.seq * sizeof(float);
  return std::clamp<std::size_t>(scores_bytes / per_head, 1, s.batch * s.heads);
}

void SelfAttentionBackward::prepare(const Shape& s, int, std::size_t scores_bytes) {
  n_ = s.seq, d_ = s.head_dim();
  const std::size_t g = group_size(s, scores_bytes), tasks = s.batch * s.heads, nd = g * n_ * d_, nn = g * n_ * n_;
  for (auto* b : {&q_, &k_, &v_, &do_, &dq_, &dk_, &dv_}) b->assign(nd, 0.0f);
  p_.assign(nn, 0.0f);
  dp_.assign(nn, 0.0f);
  rowdot_.assign(g * n_, 0.0f);
  full_ = make_products(g);
  rest_ = tasks % g ? make_products(tasks % g) : Products{};
}

SelfAttentionBackward::Products SelfAttentionBackward::make_products(std::size_t g) {
  const memory::dim G = memory::dim(g), n = memory::dim(n_), d = memory::dim(d_);
  const memory::desc heads = f32({G, n, d}, {n * d, d, 1});      // q, k, v, do, dq, dk, dv
  const memory::desc heads_t = f32({G, d, n}, {n * d, 1, d});    // k^T, v^T
  const memory::desc scores = f32({G, n, n}, {n * n, n, 1});     // S / P, dP / dS
  const memory::desc scores_t = f32({G, n, n}, {n * n, 1, n});   // P^T, dS^T
  auto mem = [](const memory::desc& md, std::vector<float>& b) { return tensor::onednn_memory(md, b.data()); };
  auto product = [&](const memory::desc& a, std::vector<float>& ab, const memory::desc& w, std::vector<float>& wb,
                     const memory::desc& c, std::vector<float>& cb, dnnl::matmul& prim, tensor::OnednnArgs& args) {
    prim = dnnl::matmul(tensor::onednn_matmul(a, w, nullptr, c));
    args = {{DNNL_ARG_SRC, mem(a, ab)}, {DNNL_ARG_WEIGHTS, mem(w, wb)}, {DNNL_ARG_DST, mem(c, cb)}};
  };
  Products p;
  p.g = g;
  product(heads, q_, heads_t, k_, scores, p_, p.scores, p.scores_args);   // S = q k^T
  product(heads, do_, heads_t, v_, scores, dp_, p.dp, p.dp_args);         // dP = do v^T
  product(scores_t, p_, heads, do_, heads, dv_, p.dv, p.dv_args);         // dv = P^T do
  product(scores, dp_, heads, k_, heads, dq_, p.dq, p.dq_args);           // dq = dS k
  product(scores_t, dp_, heads, q_, heads, dk_, p.dk, p.dk_args);         // dk = dS^T q
  return p;
}

void SelfAttentionBackward::run(const Shape& s, tensor::Elems e, const void* qkv, const void* o, const void* dout,
                                void* dqkv) {
  const std::size_t tasks = s.batch * s.heads;
  for (std::size_t t0 = 0; t0 < tasks; t0 += full_.g)
    run_group(s, e, t0 + full_.g <= tasks ? full_ : rest_, t0, qkv, o, dout, dqkv);
}

void SelfAttentionBackward::run_group(const Shape& s, tensor::Elems e, const Products& p, std::size_t t0,
                                      const void* qkv, const void* o, const void* dout, void* dqkv) {
  const std::size_t n = n_, d = d_, h = s.hidden, rows = p.g * n;
  const float scale = s.scale();
  // Row r of the group: head t0 + r / n, query i = r % n; its place in qkv / o and in the buffers.
  auto source_row = [&](std::size_t r) {
    const std::size_t t = t0 + r / n, b = t / s.heads, c0 = t % s.heads * d;
    return std::pair{b * n + r % n, c0};
  };
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const auto [row, c0] = source_row(r);
    float dot = 0;
    for (std::size_t c = 0; c < d; ++c) {
      const std::size_t at = row * 3 * h + c0 + c, x = r * d + c;
      q_[x] = e.get(qkv, at);
      k_[x] = e.get(qkv, at + h);
      v_[x] = e.get(qkv, at + 2 * h);
      do_[x] = e.get(dout, row * h + c0 + c);
      dot += do_[x] * e.get(o, row * h + c0 + c);
    }
    rowdot_[r] = dot;
  }
  auto& stream = tensor::onednn_stream();
  p.scores.execute(stream, p.scores_args);
  p.dp.execute(stream, p.dp_args);
  stream.wait();
  // P = softmax(S scale) over the row's keys (causal: j <= i, the rest 0); dS = P (dP - D) scale.
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    float *pr = p_.data() + r * n, *dsr = dp_.data() + r * n;
    const std::size_t keys = s.causal ? r % n + 1 : n;
    float mx = -INFINITY, sum = 0;
    for (std::size_t j = 0; j < keys; ++j) mx = std::max(mx, pr[j] * scale);
    for (std::size_t j = 0; j < keys; ++j) sum += pr[j] = std::exp(pr[j] * scale - mx);
    const float inv = 1 / sum, dd = rowdot_[r];
#pragma omp simd
    for (std::size_t j = 0; j < keys; ++j) {
      pr[j] *= inv;
      dsr[j] = pr[j] * (dsr[j] - dd) * scale;
    }
    std::fill(pr + keys, pr + n, 0.0f);
    std::fill(dsr + keys, dsr + n, 0.0f);
  }
  p.dv.execute(stream, p.dv_args);
  p.dq.execute(stream, p.dq_args);
  p.dk.execute(stream, p.dk_args);
  stream.wait();
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const auto [row, c0] = source_row(r);
    for (std::size_t c = 0; c < d; ++c) {
      const std::size_t at = row * 3 * h + c0 + c, x = r * d + c;
      e.set(dqkv, at, dq_[x]);
      e.set(dqkv, at + h, dk_[x]);
      e.set(dqkv, at + 2 * h, dv_[x]);
    }
  }
}

}  // namespace opmeter::transformer
