#include "ops/transformer/self_attention_backward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/tensor/kernels.hpp"

namespace opmeter::transformer {
namespace {
using dnnl::memory;
using Dims = memory::dims;

memory::data_type type_of(tensor::Elems e) { return e.bf16 ? memory::data_type::bf16 : memory::data_type::f32; }
std::size_t bytes_of(tensor::Elems e) { return e.bf16 ? 2 : 4; }

}  // namespace

std::size_t SelfAttentionBackward::group_size(const Shape& s, tensor::Elems e, std::size_t scores_bytes) {
  // fp32 P and dP, and in bf16 their bf16 copies.
  const std::size_t per_head = s.seq * s.seq * (2 * sizeof(float) + (e.bf16 ? 2 * 2 : 0));
  return std::clamp<std::size_t>(scores_bytes / per_head, 1, s.batch * s.heads);
}

void SelfAttentionBackward::prepare(const Shape& s, tensor::Elems e, int, std::size_t scores_bytes) {
  e_ = e, n_ = s.seq, d_ = s.head_dim(), scale_ = s.scale();
  const std::size_t g = group_size(s, e, scores_bytes), tasks = s.batch * s.heads, nd = g * n_ * d_, nn = g * n_ * n_;
  for (auto* b : {&q_, &k_, &v_, &do_}) *b = Buffer(nd * bytes_of(e));
  p16_ = Buffer(e.bf16 ? nn * 2 : 1);
  ds16_ = Buffer(e.bf16 ? nn * 2 : 1);
  for (auto* b : {&dq_, &dk_, &dv_}) b->assign(nd, 0.0f);
  p_.assign(nn, 0.0f);
  dp_.assign(nn, 0.0f);
  rowdot_.assign(g * n_, 0.0f);
  full_ = make_products(g);
  rest_ = tasks % g ? make_products(tasks % g) : Products{};
}

SelfAttentionBackward::Products SelfAttentionBackward::make_products(std::size_t g) {
  const memory::dim G = memory::dim(g), n = memory::dim(n_), d = memory::dim(d_);
  const memory::data_type in = type_of(e_), f32 = memory::data_type::f32;
  auto md = [](memory::data_type t, const Dims& dims, const Dims& strides) { return memory::desc(dims, t, strides); };
  const Dims heads{G, n, d}, heads_s{n * d, d, 1}, heads_t{G, d, n}, heads_ts{n * d, 1, d};
  const Dims scores{G, n, n}, scores_s{n * n, n, 1}, scores_ts{n * n, 1, n};
  // The products that read P and dS read them in the step's type: fp32 in place, bf16 copies.
  void* p_in = e_.bf16 ? p16_.data() : static_cast<void*>(p_.data());
  void* ds_in = e_.bf16 ? ds16_.data() : static_cast<void*>(dp_.data());
  auto product = [](const memory::desc& a, void* ab, const memory::desc& w, void* wb, const memory::desc& c, void* cb,
                    dnnl::matmul& prim, tensor::OnednnArgs& args, const dnnl::primitive_attr& attr = {}) {
    prim = dnnl::matmul(tensor::onednn_matmul(a, w, nullptr, c, attr));
    args = {{DNNL_ARG_SRC, tensor::onednn_memory(a, ab)},
            {DNNL_ARG_WEIGHTS, tensor::onednn_memory(w, wb)},
            {DNNL_ARG_DST, tensor::onednn_memory(c, cb)}};
  };
  const auto x = md(in, heads, heads_s), xt = md(in, heads_t, heads_ts), x32 = md(f32, heads, heads_s);
  const auto sq32 = md(f32, scores, scores_s), sq = md(in, scores, scores_s), sqt = md(in, scores, scores_ts);
  // S comes out scaled (softmax's input): S = q k^T scale.
  dnnl::primitive_attr scaled;
  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, scale_, 0.0f);
  scaled.set_post_ops(po);
  Products p;
  p.g = g;
  product(x, q_.data(), xt, k_.data(), sq32, p_.data(), p.scores, p.scores_args, scaled);  // S = q k^T scale
  product(x, do_.data(), xt, v_.data(), sq32, dp_.data(), p.dp, p.dp_args);        // dP = do v^T
  product(sqt, p_in, x, do_.data(), x32, dv_.data(), p.dv, p.dv_args);             // dv = P^T do
  product(sq, ds_in, x, k_.data(), x32, dq_.data(), p.dq, p.dq_args);              // dq = dS k
  product(sqt, ds_in, x, q_.data(), x32, dk_.data(), p.dk, p.dk_args);             // dk = dS^T q
  return p;
}

void SelfAttentionBackward::run(const Shape& s, const void* qkv, const void* o, const void* dout, void* dqkv) {
  const std::size_t tasks = s.batch * s.heads;
  for (std::size_t t0 = 0; t0 < tasks; t0 += full_.g)
    run_group(s, t0 + full_.g <= tasks ? full_ : rest_, t0, qkv, o, dout, dqkv);
}

void SelfAttentionBackward::run_group(const Shape& s, const Products& p, std::size_t t0, const void* qkv,
                                      const void* o, const void* dout, void* dqkv) {
  const tensor::Elems e = e_;
  const std::size_t n = n_, d = d_, h = s.hidden, rows = p.g * n, eb = bytes_of(e);
  const float scale = s.scale();
  // Row r of the group: head t0 + r / n, query i = r % n; its place in qkv / o and in the buffers.
  auto source_row = [&](std::size_t r) {
    const std::size_t t = t0 + r / n, b = t / s.heads, c0 = t % s.heads * d;
    return std::pair{b * n + r % n, c0};
  };
  auto at = [eb](const void* base, std::size_t i) { return static_cast<const char*>(base) + i * eb; };
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const auto [row, c0] = source_row(r);
    const std::size_t src = row * 3 * h + c0, x = r * d;
    // q, k, v and do copied as stored (the step's type).
    std::memcpy(q_.as<char>() + x * eb, at(qkv, src), d * eb);
    std::memcpy(k_.as<char>() + x * eb, at(qkv, src + h), d * eb);
    std::memcpy(v_.as<char>() + x * eb, at(qkv, src + 2 * h), d * eb);
    std::memcpy(do_.as<char>() + x * eb, at(dout, row * h + c0), d * eb);
    float dot = 0;
    for (std::size_t c = 0; c < d; ++c) dot += e.get(dout, row * h + c0 + c) * e.get(o, row * h + c0 + c);
    rowdot_[r] = dot;
  }
  auto& stream = tensor::onednn_stream();
  p.scores.execute(stream, p.scores_args);
  p.dp.execute(stream, p.dp_args);
  stream.wait();
  // P = softmax(S scale) over the row's keys (causal: j <= i, the rest -inf, so 0) by the
  // vectorized row softmax; dS = P (dP - D) scale from the fp32 P, in place of dP; in bf16 both
  // rounded into their copies.
  if (s.causal) {
#pragma omp parallel for schedule(static)
    for (std::size_t r = 0; r < rows; ++r)
      std::fill(p_.data() + r * n + r % n + 1, p_.data() + (r + 1) * n, -std::numeric_limits<float>::infinity());
  }
  tensor::kernels().softmax(false, p_.data(), p_.data(), rows, n);
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const float *pr = p_.data() + r * n, dd = rowdot_[r];
    float* dsr = dp_.data() + r * n;
#pragma omp simd
    for (std::size_t j = 0; j < n; ++j) dsr[j] = pr[j] * (dsr[j] - dd) * scale;
    if (e.bf16) {
      std::uint16_t *p16 = p16_.as<std::uint16_t>() + r * n, *ds16 = ds16_.as<std::uint16_t>() + r * n;
#pragma omp simd
      for (std::size_t j = 0; j < n; ++j) {
        p16[j] = to_bf16(pr[j]);
        ds16[j] = to_bf16(dsr[j]);
      }
    }
  }
  p.dv.execute(stream, p.dv_args);
  p.dq.execute(stream, p.dq_args);
  p.dk.execute(stream, p.dk_args);
  stream.wait();
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const auto [row, c0] = source_row(r);
    for (std::size_t c = 0; c < d; ++c) {
      const std::size_t dst = row * 3 * h + c0 + c, x = r * d + c;
      e.set(dqkv, dst, dq_[x]);
      e.set(dqkv, dst + h, dk_[x]);
      e.set(dqkv, dst + 2 * h, dv_[x]);
    }
  }
}

}  // namespace opmeter::transformer
