// The training steps' own pieces (see train_kernels.hpp).
#include "ops/tensor/train_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor {

void act_backward(Elems e, Act a, const void* dy, const void* z, void* dz, std::size_t n) {
  kernels().act_backward(a, e.bf16, dy, z, dz, n);  // vectorized: a scalar act' per element cost a step's 15%
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
