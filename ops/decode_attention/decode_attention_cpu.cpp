// opmeter's CPU decode attention (decode_attention_cpu.hpp). The per-key work is plain loops that
// GCC vectorizes (omp simd), compiled once per ISA level (target_clones) and picked at load time.
// Keys go in blocks: the block's scores (four dot products at a time, so four independent
// sums are in flight), one rescale of acc when the block raises the maximum, then acc += p v
// (four value rows per sweep over acc).
#include "ops/decode_attention/decode_attention_cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace opmeter::decode_attention {
namespace {

using bf16_t = std::uint16_t;
constexpr std::size_t kBlock = 64;  // keys per block: scores stay in L1

inline float widen(float v) { return v; }
inline float widen(bf16_t v) { return std::bit_cast<float>(std::uint32_t(v) << 16); }

// Keys [begin, end) of one head: q (fp32, already scaled) against K and V rows of d values;
// acc (d floats), m and l are the running state. s: kBlock floats of scratch.
template <class T>
[[gnu::always_inline]] inline void keys_t(const float* q, const T* k, const T* v, std::size_t d, std::size_t begin,
                                          std::size_t end, float* s, float* acc, float& m, float& l) {
  for (std::size_t j0 = begin; j0 < end; j0 += kBlock) {
    const std::size_t nb = std::min(kBlock, end - j0);
    std::size_t j = 0;
    for (; j + 4 <= nb; j += 4) {
      const T *k0 = k + (j0 + j) * d, *k1 = k0 + d, *k2 = k1 + d, *k3 = k2 + d;
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (std::size_t c = 0; c < d; ++c) {
        s0 += q[c] * widen(k0[c]);
        s1 += q[c] * widen(k1[c]);
        s2 += q[c] * widen(k2[c]);
        s3 += q[c] * widen(k3[c]);
      }
      s[j] = s0, s[j + 1] = s1, s[j + 2] = s2, s[j + 3] = s3;
    }
    for (; j < nb; ++j) {
      const T* kj = k + (j0 + j) * d;
      float s0 = 0;
#pragma omp simd reduction(+ : s0)
      for (std::size_t c = 0; c < d; ++c) s0 += q[c] * widen(kj[c]);
      s[j] = s0;
    }
    float bm = m;
    for (j = 0; j < nb; ++j) bm = std::max(bm, s[j]);
    if (bm > m) {  // the first block: m = -inf, exp gives 0 and acc, l are 0 anyway
      const float r = std::exp(m - bm);
      l *= r;
#pragma omp simd
      for (std::size_t c = 0; c < d; ++c) acc[c] *= r;
      m = bm;
    }
    for (j = 0; j < nb; ++j) l += s[j] = std::exp(s[j] - m);
    for (j = 0; j + 4 <= nb; j += 4) {
      const T *v0 = v + (j0 + j) * d, *v1 = v0 + d, *v2 = v1 + d, *v3 = v2 + d;
      const float p0 = s[j], p1 = s[j + 1], p2 = s[j + 2], p3 = s[j + 3];
#pragma omp simd
      for (std::size_t c = 0; c < d; ++c)
        acc[c] += p0 * widen(v0[c]) + p1 * widen(v1[c]) + p2 * widen(v2[c]) + p3 * widen(v3[c]);
    }
    for (; j < nb; ++j) {
      const T* vj = v + (j0 + j) * d;
      const float p = s[j];
#pragma omp simd
      for (std::size_t c = 0; c < d; ++c) acc[c] += p * widen(vj[c]);
    }
  }
}

#define OPMETER_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

OPMETER_CLONES void keys_f32(const float* q, const float* k, const float* v, std::size_t d, std::size_t begin,
                             std::size_t end, float* s, float* acc, float& m, float& l) {
  keys_t(q, k, v, d, begin, end, s, acc, m, l);
}
OPMETER_CLONES void keys_bf16(const float* q, const bf16_t* k, const bf16_t* v, std::size_t d, std::size_t begin,
                              std::size_t end, float* s, float* acc, float& m, float& l) {
  keys_t(q, k, v, d, begin, end, s, acc, m, l);
}

inline void store(bool bf16, void* out, std::size_t i, float v) {
  if (!bf16) {
    static_cast<float*>(out)[i] = v;
    return;
  }
  std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  static_cast<bf16_t*>(out)[i] = static_cast<bf16_t>(u >> 16);
}

inline float load(bool bf16, const void* p, std::size_t i) {
  return bf16 ? widen(static_cast<const bf16_t*>(p)[i]) : static_cast<const float*>(p)[i];
}

}  // namespace

std::size_t chunks_for(std::size_t heads, std::size_t kv, std::size_t threads) {
  if (heads >= 4 * threads) return 1;
  const std::size_t want = (4 * threads + heads - 1) / heads;
  return std::max<std::size_t>(1, std::min(want, kv / kMinChunk));
}

void CpuWorkspace::size_for(const CpuArgs& a, std::size_t t) {
  threads = std::max<std::size_t>(1, t);
  chunks = chunks_for(a.heads, a.kv, threads);
  partials.assign(a.heads * chunks * (a.d + 2), 0.0f);
  thread_floats = a.d + std::max(kBlock, chunks);  // q, then the scores of a block or the merge's weights
  per_thread.assign(threads * thread_floats, 0.0f);
}

void run_cpu(const CpuArgs& a, CpuWorkspace& ws) {
  const auto max_threads = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
  if (max_threads > ws.threads || ws.partials.size() != a.heads * ws.chunks * (a.d + 2)) ws.size_for(a, max_threads);
  const std::size_t d = a.d, chunks = ws.chunks, tasks = a.heads * chunks, e = a.bf16 ? 2 : 4;
  const std::size_t chunk = (a.kv + chunks - 1) / chunks, stride = d + 2;
  const auto* kb = static_cast<const char*>(a.k);
  const auto* vb = static_cast<const char*>(a.v);
#pragma omp parallel
  {
    float* q = ws.per_thread.data() + static_cast<std::size_t>(omp_get_thread_num()) * ws.thread_floats;
    float* s = q + d;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t task = 0; task < tasks; ++task) {
      const std::size_t h = task / chunks, c = task % chunks;
      const std::size_t begin = std::min(a.kv, c * chunk), end = std::min(a.kv, begin + chunk);
      for (std::size_t i = 0; i < d; ++i) q[i] = load(a.bf16, a.q, h * d + i) * a.scale;
      float* part = ws.partials.data() + task * stride;  // m, l, acc[d]
      float m = -std::numeric_limits<float>::infinity(), l = 0;
      std::fill(part + 2, part + 2 + d, 0.0f);
      const std::size_t head_off = h * a.kv * d * e;
      if (a.bf16)
        keys_bf16(q, reinterpret_cast<const bf16_t*>(kb + head_off), reinterpret_cast<const bf16_t*>(vb + head_off), d,
                  begin, end, s, part + 2, m, l);
      else
        keys_f32(q, reinterpret_cast<const float*>(kb + head_off), reinterpret_cast<const float*>(vb + head_off), d,
                 begin, end, s, part + 2, m, l);
      part[0] = m, part[1] = l;
    }
    // Merge each head's chunks (an empty chunk has m = -inf and weighs 0).
#pragma omp for schedule(static)
    for (std::size_t h = 0; h < a.heads; ++h) {
      const float* p = ws.partials.data() + h * chunks * stride;
      float mx = -std::numeric_limits<float>::infinity();
      for (std::size_t c = 0; c < chunks; ++c) mx = std::max(mx, p[c * stride]);
      float* w = s;  // chunk weights
      float l = 0;
      for (std::size_t c = 0; c < chunks; ++c) {
        w[c] = p[c * stride] == mx ? 1.0f : std::exp(p[c * stride] - mx);
        l += w[c] * p[c * stride + 1];
      }
      const float inv = 1.0f / l;
      for (std::size_t i = 0; i < d; ++i) {
        float o = 0;
        for (std::size_t c = 0; c < chunks; ++c) o += w[c] * p[c * stride + 2 + i];
        store(a.bf16, a.out, h * d + i, o * inv);
      }
    }
  }
}

}  // namespace opmeter::decode_attention
