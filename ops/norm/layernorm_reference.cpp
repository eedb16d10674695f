#include "ops/norm/layernorm_reference.hpp"

#include <cmath>

#include "ops/tensor/kernels.hpp"

namespace opmeter::norm {

double layernorm_row(const double* x, std::size_t n, double* xn, const double* x_err, double* xn_err) {
  double mean = 0, var = 0, err2 = 0;
  for (std::size_t k = 0; k < n; ++k) mean += x[k];
  mean /= double(n);
  for (std::size_t k = 0; k < n; ++k) {
    var += (x[k] - mean) * (x[k] - mean);
    if (x_err) err2 += x_err[k] * x_err[k];
  }
  const double rstd = 1 / std::sqrt(var / double(n) + tensor::kNormEps);
  const double spread = std::sqrt(err2 / double(n)) / std::sqrt(double(n));
  for (std::size_t k = 0; k < n; ++k) {
    xn[k] = (x[k] - mean) * rstd;
    if (xn_err) xn_err[k] = rstd * ((x_err ? x_err[k] : 0.0) + (1 + std::fabs(xn[k])) * spread);
  }
  return rstd;
}

}  // namespace opmeter::norm
