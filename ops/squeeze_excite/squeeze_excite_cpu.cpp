// opmeter's CPU squeeze-excite (squeeze_excite_cpu.hpp). The sweeps are plain loops that GCC
// vectorizes (omp simd), compiled once per ISA level (target_clones) and picked at load time.
#include "ops/squeeze_excite/squeeze_excite_cpu.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace opmeter::squeeze_excite {
namespace {

using bf16_t = std::uint16_t;

inline float widen(float v) { return v; }
inline float widen(bf16_t v) { return std::bit_cast<float>(std::uint32_t(v) << 16); }
inline void narrow(float* p, float v) { *p = v; }
inline void narrow(bf16_t* p, float v) {  // round to nearest even
  std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  u += 0x7fffu + ((u >> 16) & 1u);
  *p = static_cast<bf16_t>(u >> 16);
}

template <class T>
[[gnu::always_inline]] inline float sum_t(const T* x, std::size_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t i = 0; i < n; ++i) s += widen(x[i]);
  return s;
}

template <class T>
[[gnu::always_inline]] inline void scale_t(const T* x, T* y, std::size_t n, float g) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) narrow(y + i, widen(x[i]) * g);
}

#define OPMETER_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

OPMETER_CLONES float sum_f32(const float* x, std::size_t n) { return sum_t(x, n); }
OPMETER_CLONES float sum_bf16(const bf16_t* x, std::size_t n) { return sum_t(x, n); }
OPMETER_CLONES void scale_f32(const float* x, float* y, std::size_t n, float g) { scale_t(x, y, n, g); }
OPMETER_CLONES void scale_bf16(const bf16_t* x, bf16_t* y, std::size_t n, float g) { scale_t(x, y, n, g); }
OPMETER_CLONES float dot(const float* a, const float* b, std::size_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

float act(Act a, float z) { return a == Act::relu ? std::max(z, 0.0f) : z / (1.0f + std::exp(-z)); }
float gate(Gate g, float z) {
  return g == Gate::sigmoid ? 1.0f / (1.0f + std::exp(-z)) : std::clamp(z + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f);
}

}  // namespace

float plane_sum(bool bf16, const void* x, std::size_t n) {
  return bf16 ? sum_bf16(static_cast<const bf16_t*>(x), n) : sum_f32(static_cast<const float*>(x), n);
}

std::size_t cpu_scratch_floats(const Shape& s) { return 2 * s.c + s.r; }

void run_cpu(const CpuArgs& a, float* scratch) {
  const Shape s = a.shape;
  float *mean = scratch, *hidden = scratch + s.c, *g = scratch + s.c + s.r;
  const std::size_t e = a.bf16 ? 2 : 4;
  const float inv_hw = 1.0f / static_cast<float>(s.hw);
  const auto* x = static_cast<const char*>(a.x);
  auto* y = static_cast<char*>(a.y);
  // Threads take planes of one sample at a time; the barriers of the `omp for`s order the steps.
#pragma omp parallel
  for (std::size_t n = 0; n < s.n; ++n) {
    const std::size_t plane0 = n * s.c;
#pragma omp for schedule(static)
    for (std::size_t c = 0; c < s.c; ++c) mean[c] = plane_sum(a.bf16, x + (plane0 + c) * s.hw * e, s.hw) * inv_hw;
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < s.r; ++k) hidden[k] = act(s.act, a.b1[k] + dot(a.w1 + k * s.c, mean, s.c));
#pragma omp for schedule(static)
    for (std::size_t c = 0; c < s.c; ++c) g[c] = gate(s.gate, a.b2[c] + dot(a.w2 + c * s.r, hidden, s.r));
#pragma omp for schedule(static)
    for (std::size_t c = 0; c < s.c; ++c) {
      const std::size_t off = (plane0 + c) * s.hw * e;
      if (a.bf16) scale_bf16(reinterpret_cast<const bf16_t*>(x + off), reinterpret_cast<bf16_t*>(y + off), s.hw, g[c]);
      else scale_f32(reinterpret_cast<const float*>(x + off), reinterpret_cast<float*>(y + off), s.hw, g[c]);
    }
  }
}

}  // namespace opmeter::squeeze_excite
