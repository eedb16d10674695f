#pragma once
// LayerNorm of one row in fp64: the one reference that the layernorm op, linear's ln_linear (its
// inference, quantized and training checks) and transformer_block's forward and training
// references share. Callers apply gamma and beta (xn * gamma + beta) and add their own rounding.
#include <cstddef>

namespace opmeter::norm {

// mean and var of x[0..n), rstd = 1 / sqrt(var + eps), xn[k] = (x[k] - mean) rstd (xn may be x).
// With x's error scales x_err (nullptr: x exact) and xn_err non-null, xn_err[k] is the scale of
// the error x's carry into xn[k]: rstd x_err[k] directly and, through mean and variance,
// (1 + |xn[k]|) rstd RMS(x_err) / sqrt(n). Returns rstd.
double layernorm_row(const double* x, std::size_t n, double* xn, const double* x_err = nullptr,
                     double* xn_err = nullptr);

}  // namespace opmeter::norm
