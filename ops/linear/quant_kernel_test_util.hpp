#pragma once
// What the quantized kernels' tests share: the error of a kernel's outputs against the recipe's
// weights in fp64.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "ops/linear/quant/quantize.hpp"

namespace opmeter::linear::kernel_tests {

// Largest |c - x W^T| / sum_k |x_k w_jk| over rows x out outputs (c: rows x out, x: rows x
// hidden), W the recipe's weights in fp64.
inline double relative_error(const quant::QuantizedWeights& q, const std::vector<float>& x, const std::vector<float>& c,
                             std::size_t rows) {
  const std::size_t out = q.out, hidden = q.hidden;
  double worst = 0;
  for (std::size_t m = 0; m < rows; ++m)
    for (std::size_t j = 0; j < out; ++j) {
      double exact = 0, mag = 0;
      for (std::size_t k = 0; k < hidden; ++k) {
        const double p = double(x[m * hidden + k]) * q.weight(j, k);
        exact += p;
        mag += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(c[m * out + j] - exact) / mag);
    }
  return worst;
}

}  // namespace opmeter::linear::kernel_tests
