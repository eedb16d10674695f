#!/usr/bin/env python3
"""Prints the coefficients of the vectorized transcendentals in ops/tensor/vec_math.inc.

Minimax fits by Lawson's iteratively reweighted least squares (the weights move toward the points
of largest error until the error equioscillates), in fp64 against mpmath:
  exp(r),  r in [-ln2/2, ln2/2], degree 5, relative error     (exp_v)
  2^f,     f in [-1/2, 1/2],     degree 4, relative error     (exp_shifted_for_sum)
  0.5 erf(x / sqrt 2) ~ x P(x^2) / Q(x^2), Q(0) = 1, x in [0, 5.5], degrees (5, 5), absolute
  error (normal_cdf_v: Phi(x) = 0.5 + x P / Q); the rational fit is linearized by dividing the
  residual by the previous iteration's Q (Loeb / Sanathanan-Koerner).
Needs numpy and mpmath (Debian: python3-numpy python3-mpmath).
"""
import mpmath as mp
import numpy as np


def points(lo, hi, n=8001):
    # Uniform plus Chebyshev-clustered points: the extrema crowd toward the ends.
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    return np.unique(np.concatenate([np.linspace(lo, hi, n), mid + half * np.cos(np.linspace(0, np.pi, n))]))


def lawson(basis, target, rel, iters=300):
    w, best = np.ones_like(target), None
    scale = np.abs(target) if rel else np.ones_like(target)
    for _ in range(iters):
        a = basis / scale[:, None]
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * sw[:, None], target / scale * sw, rcond=None)
        err = (basis @ c - target) / scale
        m = np.abs(err).max()
        if best is None or m < best[0]:
            best = (m, c)
        w = np.maximum(w * np.abs(err) / np.sum(w * np.abs(err)), 1e-30)
    return best


def poly_fit(f, lo, hi, degree):
    x = points(lo, hi)
    y = np.array([float(f(mp.mpf(v))) for v in x])
    err, c = lawson(np.column_stack([x**k for k in range(degree + 1)]), y, rel=True)
    return err, c


def normal_cdf_fit(p, q, c, iters=400):
    x = points(0, c, 6000)
    t = np.array([float(0.5 * mp.erf(mp.mpf(v) / mp.sqrt(2))) for v in x])
    u = x * x / (c * c)  # scaled for conditioning, rescaled below
    w, qprev, best = np.ones_like(x), np.ones_like(x), None
    for _ in range(iters):
        a = np.column_stack([x * u**k for k in range(p + 1)] + [-t * u**k for k in range(1, q + 1)])
        sw = np.sqrt(w) / np.abs(qprev)
        sol, *_ = np.linalg.lstsq(a * sw[:, None], t * sw, rcond=None)
        num, den = sol[: p + 1], np.concatenate([[1.0], sol[p + 1 :]])
        qprev = sum(den[k] * u**k for k in range(q + 1))
        err = x * sum(num[k] * u**k for k in range(p + 1)) / qprev - t
        m = np.abs(err).max()
        if best is None or m < best[0]:
            best = (m, num / (c * c) ** np.arange(p + 1), den / (c * c) ** np.arange(q + 1))
        w = np.maximum(w * np.abs(err) / np.sum(w * np.abs(err)), 1e-30)
    return best


def show(name, err, coeffs):
    print(f"{name}: max error {err:.3e}; coefficients from degree 0 up (fp32):")
    print("  " + ", ".join(f"{np.float32(v):.9e}f" for v in coeffs))


if __name__ == "__main__":
    h = float(mp.log(2) / 2)
    show("exp(r), degree 5", *poly_fit(mp.exp, -h, h, 5))
    show("2^f, degree 4", *poly_fit(lambda v: mp.power(2, v), -0.5, 0.5, 4))
    err, num, den = normal_cdf_fit(5, 5, 5.5)
    show("Phi numerator P(x^2)", err, num)
    show("Phi denominator Q(x^2)", err, den)
