// The training steps' own pieces (see train_kernels.hpp).
#include "ops/tensor/train_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor {

float act_grad(Act a, float x) {
  auto sigmoid = [](float v) { return 1 / (1 + std::exp(-v)); };
  switch (a) {
    case Act::none: return 1;
    case Act::relu: return x > 0 ? 1.f : 0.f;
    case Act::relu6: return x > 0 && x < 6 ? 1.f : 0.f;
    case Act::leaky_relu: return x > 0 ? 1.f : kLeakySlope;
    case Act::gelu: return 0.5f * std::erfc(-x * 0.70710678f) + x * std::exp(-0.5f * x * x) * 0.39894228f;
    case Act::gelu_tanh: {
      // 0.5 (1 + tanh u) = sigmoid(2u) and 1 - tanh^2 u = 4 sigmoid(2u) sigmoid(-2u): 1 + t and
      // 1 - t^2 taken from t lose most of their digits where tanh saturates (|z| of 3 or more).
      const float c = 0.79788456f, u2 = 2 * c * (x + 0.044715f * x * x * x);
      const float s = sigmoid(u2), s_neg = sigmoid(-u2);
      return s + 2 * x * s * s_neg * c * (1 + 3 * 0.044715f * x * x);
    }
    case Act::silu: return sigmoid(x) * (1 + x * (1 - sigmoid(x)));
    case Act::sigmoid: return sigmoid(x) * (1 - sigmoid(x));
    case Act::hardswish: return x < -3 ? 0.f : x > 3 ? 1.f : (2 * x + 3) / 6;
  }
  return 1;
}

void act_backward(Elems e, Act a, const void* dy, const void* z, void* dz, std::size_t n) {
  kernels().act_backward(a, e.bf16, dy, z, dz, n);  // vectorized: act_grad one element at a time cost a step's 15%
}

void column_sums(Elems e, const void* d, std::size_t rows, std::size_t cols, void* db) {
  constexpr std::size_t kBlock = 256;
#pragma omp parallel for
  for (std::size_t j0 = 0; j0 < cols; j0 += kBlock) {
    const std::size_t j1 = std::min(cols, j0 + kBlock);
    float acc[kBlock] = {};
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = j0; j < j1; ++j) acc[j - j0] += e.get(d, r * cols + j);
    for (std::size_t j = j0; j < j1; ++j) e.set(db, j, acc[j - j0]);
  }
}

void layernorm_forward(Elems e, const void* x, const float* g, const float* b, std::size_t rows, std::size_t h,
                       void* xh, float* mean, float* rstd) {
#pragma omp parallel for
  for (std::size_t r = 0; r < rows; ++r) {
    float m = 0, v = 0;
    for (std::size_t k = 0; k < h; ++k) m += e.get(x, r * h + k);
    m /= float(h);
    for (std::size_t k = 0; k < h; ++k) {
      float d = e.get(x, r * h + k) - m;
      v += d * d;
    }
    mean[r] = m;
    rstd[r] = 1 / std::sqrt(v / float(h) + kNormEps);
    for (std::size_t k = 0; k < h; ++k) e.set(xh, r * h + k, (e.get(x, r * h + k) - m) * rstd[r] * g[k] + b[k]);
  }
}

// dgamma, dbeta summed over rows per thread, then together.
void layernorm_backward(Elems e, const void* x, const float* g, const float* mean, const float* rstd,
                        const void* dxh, const void* add, std::size_t rows, std::size_t h, void* dx, void* dgamma_out,
                        void* dbeta_out) {
  std::vector<float> dgamma(h, 0), dbeta(h, 0);
#pragma omp parallel
  {
    std::vector<float> tg(h, 0), tb(h, 0);
#pragma omp for
    for (std::size_t r = 0; r < rows; ++r) {
      float a = 0, axn = 0;
      for (std::size_t k = 0; k < h; ++k) {
        float d = e.get(dxh, r * h + k), xn = (e.get(x, r * h + k) - mean[r]) * rstd[r];
        a += g[k] * d;
        axn += g[k] * d * xn;
        tg[k] += d * xn;
        tb[k] += d;
      }
      a /= float(h);
      axn /= float(h);
      for (std::size_t k = 0; k < h; ++k) {
        float xn = (e.get(x, r * h + k) - mean[r]) * rstd[r];
        float v = rstd[r] * (g[k] * e.get(dxh, r * h + k) - a - xn * axn);
        if (add) v += e.get(add, r * h + k);
        e.set(dx, r * h + k, v);
      }
    }
#pragma omp critical
    for (std::size_t k = 0; k < h; ++k) {
      dgamma[k] += tg[k];
      dbeta[k] += tb[k];
    }
  }
  for (std::size_t k = 0; k < h; ++k) {
    e.set(dgamma_out, k, dgamma[k]);
    e.set(dbeta_out, k, dbeta[k]);
  }
}

TrainGemmDescs::TrainGemmDescs(std::size_t rows_, std::size_t k_, std::size_t n_, DType dtype) {
  using tag = dnnl::memory::format_tag;
  const auto t = onednn_type(dtype);
  const auto rows = dnnl::memory::dim(rows_), k = dnnl::memory::dim(k_), n = dnnl::memory::dim(n_);
  a = {{rows, k}, t, tag::ab};
  wt = {{k, n}, t, tag::ba};
  z = {{rows, n}, t, tag::ab};
  bias = {{1, n}, dnnl::memory::data_type::f32, tag::ab};
  w = {{n, k}, t, tag::ab};
  dzt = {{n, rows}, t, tag::ba};
  dw = {{n, k}, t, tag::ab};
}

}  // namespace opmeter::tensor
