// The loops over a head's d columns are vector loops (omp simd: the dot products' reductions
// too, which the compiler keeps scalar otherwise); the buffers they touch are disjoint.
#include "ops/transformer/self_attention_backward.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace opmeter::transformer {

void SelfAttentionBackward::prepare(const Shape& s, int threads) {
  per_thread_.assign(std::size_t(std::max({1, threads, omp_get_max_threads()})),
                     std::vector<float>(8 * s.seq * s.head_dim() + s.seq));
}

void SelfAttentionBackward::run(const Shape& s, tensor::Elems e, const void* qkv, const void* o, const void* dout,
                                void* dqkv) {
  const std::size_t n = s.seq, d = s.head_dim(), h = s.hidden, tasks = s.batch * s.heads;
  const float scale = s.scale();
  const int threads = std::min(omp_get_max_threads(), int(per_thread_.size()));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::size_t t = 0; t < tasks; ++t) {
    const std::size_t b = t / s.heads, c0 = t % s.heads * d;
    float* q = per_thread_[std::size_t(omp_get_thread_num())].data();
    float *k = q + n * d, *v = k + n * d, *oo = v + n * d, *dO = oo + n * d, *dq = dO + n * d, *dk = dq + n * d,
          *dv = dk + n * d, *p = dv + n * d;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < d; ++c) {
        const std::size_t row = b * n + i, at = row * 3 * h + c0 + c;
        q[i * d + c] = e.get(qkv, at);
        k[i * d + c] = e.get(qkv, at + h);
        v[i * d + c] = e.get(qkv, at + 2 * h);
        oo[i * d + c] = e.get(o, row * h + c0 + c);
        dO[i * d + c] = e.get(dout, row * h + c0 + c);
      }
    std::fill(dk, dk + 2 * n * d, 0.0f);  // dk and dv
    std::fill(dq, dq + n * d, 0.0f);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t keys = s.causal ? i + 1 : n;
      const float* qi = q + i * d;
      float mx = -INFINITY;
      for (std::size_t j = 0; j < keys; ++j) {
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (std::size_t c = 0; c < d; ++c) dot += qi[c] * k[j * d + c];
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      float sum = 0;
      for (std::size_t j = 0; j < keys; ++j) sum += p[j] = std::exp(p[j] - mx);
      float di = 0;
#pragma omp simd reduction(+ : di)
      for (std::size_t c = 0; c < d; ++c) di += dO[i * d + c] * oo[i * d + c];
      float* dqi = dq + i * d;
      for (std::size_t j = 0; j < keys; ++j) {
        const float pj = p[j] / sum;
        float dp = 0;
#pragma omp simd reduction(+ : dp)
        for (std::size_t c = 0; c < d; ++c) dp += dO[i * d + c] * v[j * d + c];
        const float ds = pj * (dp - di) * scale;
#pragma omp simd
        for (std::size_t c = 0; c < d; ++c) {
          dqi[c] += ds * k[j * d + c];
          dk[j * d + c] += ds * qi[c];
          dv[j * d + c] += pj * dO[i * d + c];
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < d; ++c) {
        const std::size_t at = (b * n + i) * 3 * h + c0 + c;
        e.set(dqkv, at, dq[i * d + c]);
        e.set(dqkv, at + h, dk[i * d + c]);
        e.set(dqkv, at + 2 * h, dv[i * d + c]);
      }
  }
}

}  // namespace opmeter::transformer
