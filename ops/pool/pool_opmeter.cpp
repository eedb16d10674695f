// impl `opmeter`: our own OpenMP loops over output rows. Windows reduce columns first (a
// vectorized pass over the window's input rows), then along the row; global average pooling, one
// output per plane, sums each plane in one vectorized pass with the planes spread over threads.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "opmeter/registry.hpp"
#include "ops/pool/pool.hpp"

namespace opmeter::pool {
namespace {

inline float load_f(const float* p, std::size_t i) { return p[i]; }
inline float load_f(const std::uint16_t* p, std::size_t i) { return from_bf16(p[i]); }
inline void store_f(float* p, std::size_t i, float v) { p[i] = v; }
inline void store_f(std::uint16_t* p, std::size_t i, float v) { p[i] = to_bf16(v); }

template <class T>
void global_avg(const Shape& s, const T* x, T* y) {
  const auto planes = static_cast<std::int64_t>(s.planes());
  const std::size_t hw = s.h * s.h;
  const float scale = 1.0f / static_cast<float>(hw);
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < planes; ++p) {
    const T* plane = x + std::size_t(p) * hw;
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (std::size_t i = 0; i < hw; ++i) acc += load_f(plane, i);
    store_f(y, std::size_t(p), acc * scale);
  }
}

// A k x k window reduces as k columns, then k of those column results: per output row, a
// vertical pass over the window's input rows (contiguous, vectorized) into `col`, then a
// horizontal pass along `col` for each output. Clipping to the image is the padding (zeros for
// the average, ignored by the max).
template <class T>
void windows(const Shape& s, const T* x, T* y) {
  const auto rows = static_cast<std::int64_t>(s.planes() * s.oh);
  const auto h = std::int64_t(s.h), k = std::int64_t(s.k), pad = std::int64_t(s.pad), st = std::int64_t(s.stride);
  const float scale = 1.0f / static_cast<float>(s.k * s.k);
  const bool is_max = s.kind == Kind::max;
  const float identity = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
#pragma omp parallel
  {
    std::vector<float> col(s.h);
#pragma omp for schedule(static)
    for (std::int64_t row = 0; row < rows; ++row) {
      const std::int64_t i = row % std::int64_t(s.oh), plane = row / std::int64_t(s.oh);
      const T* in = x + std::size_t(plane) * s.h * s.h;
      T* out = y + std::size_t(row) * s.oh;
      const std::int64_t h0 = std::max<std::int64_t>(0, i * st - pad), h1 = std::min(h, i * st - pad + k);
      float* c = col.data();
      for (std::int64_t w = 0; w < h; ++w) c[w] = identity;
      for (std::int64_t r = h0; r < h1; ++r) {
        const T* line = in + std::size_t(r * h);
        if (is_max) {
#pragma omp simd
          for (std::int64_t w = 0; w < h; ++w) c[w] = std::max(c[w], load_f(line, std::size_t(w)));
        } else {
#pragma omp simd
          for (std::int64_t w = 0; w < h; ++w) c[w] += load_f(line, std::size_t(w));
        }
      }
      for (std::int64_t j = 0; j < std::int64_t(s.oh); ++j) {
        const std::int64_t w0 = std::max<std::int64_t>(0, j * st - pad), w1 = std::min(h, j * st - pad + k);
        float acc = identity;
        for (std::int64_t q = w0; q < w1; ++q) acc = is_max ? std::max(acc, c[q]) : acc + c[q];
        store_f(out, std::size_t(j), is_max ? acc : acc * scale);
      }
    }
  }
}

class OpmeterPool : public HostImpl<PoolOp> {
 public:
  void run(std::size_t copy) override {
    auto s = shape_of(case_);
    if (bf16()) {
      dispatch(s, static_cast<const std::uint16_t*>(in(copy, kX)), static_cast<std::uint16_t*>(out(copy)));
    } else {
      dispatch(s, static_cast<const float*>(in(copy, kX)), static_cast<float*>(out(copy)));
    }
  }
  std::map<std::string, std::string> details() const override {
    return {{"kernel", shape_of(case_).global_avg() ? "global average: a vectorized sum per plane"
                                                    : "windows: columns, then along the row; output rows over threads"}};
  }

 private:
  template <class T>
  static void dispatch(const Shape& s, const T* x, T* y) {
    if (s.global_avg())
      global_avg(s, x, y);
    else
      windows(s, x, y);
  }
};

ImplRegistrar reg({
    .op = "pool2d",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "OpenMP loops: windows reduced by columns then rows; global average a vectorized sum per plane",
    .dtypes = {DType::fp32, DType::bf16},
    .make = [] { return std::make_unique<OpmeterPool>(); },
});

}  // namespace
}  // namespace opmeter::pool
