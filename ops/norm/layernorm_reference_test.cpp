// The shared fp64 LayerNorm row against numbers worked out by hand, in place and not, and the
// error it carries from its input against a perturbed input's actual change.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/norm/layernorm_reference.hpp"
#include "ops/tensor/kernels.hpp"

using opmeter::norm::layernorm_row;

TEST(LayerNormReference, NormalizesARowByHand) {
  const std::vector<double> x = {1, 2, 3, 6};  // mean 3, var (4 + 1 + 0 + 9) / 4 = 3.5
  std::vector<double> xn(4), err(4, -1);
  const double rstd = layernorm_row(x.data(), 4, xn.data(), nullptr, err.data());
  EXPECT_DOUBLE_EQ(rstd, 1 / std::sqrt(3.5 + double(opmeter::tensor::kNormEps)));
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_DOUBLE_EQ(xn[k], (x[k] - 3) * rstd);
    EXPECT_EQ(err[k], 0.0);  // an exact input carries no error
  }
  // Errors e on every input: e directly, and (1 + |xn|) RMS(e) / sqrt(4) through mean and variance.
  const double e = 1e-3;
  const std::vector<double> x_err(4, e);
  layernorm_row(x.data(), 4, xn.data(), x_err.data(), err.data());
  for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(err[k], rstd * (e + (1 + std::fabs(xn[k])) * e / 2), 1e-15);
  std::vector<double> in_place = x;
  layernorm_row(in_place.data(), 4, in_place.data());
  EXPECT_EQ(in_place, xn);
}

TEST(LayerNormReference, CarriedErrorBoundsAPerturbedInputsChange) {
  const std::size_t n = 64;
  std::mt19937_64 g(5);
  std::normal_distribution<double> d;
  std::vector<double> x(n), x_err(n), xn(n), xn_err(n), moved(n), xn_moved(n);
  for (std::size_t k = 0; k < n; ++k) {
    x[k] = 2 + 10 * d(g);  // rstd about 0.1
    x_err[k] = 1e-6 * (1 + k % 3);
    moved[k] = x[k] + x_err[k] * (g() % 2 ? 1 : -1);  // each input off by its error scale
  }
  const double rstd = layernorm_row(x.data(), n, xn.data(), x_err.data(), xn_err.data());
  layernorm_row(moved.data(), n, xn_moved.data());
  for (std::size_t k = 0; k < n; ++k) {
    EXPECT_GE(xn_err[k], rstd * x_err[k]);                   // at least the direct term
    EXPECT_LE(std::fabs(xn_moved[k] - xn[k]), 4 * xn_err[k]) << k;  // random signs: within a few scales
  }
}
