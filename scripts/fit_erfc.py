#!/usr/bin/python3
"""Prints the polynomial coefficients of src/kernels/f32-vmath/f32_vmath_impl.h as C++ constants:

  erfc(z) = t * exp(-z^2 + R(t)), t = 1 / (1 + z / 2), z >= 0: R of degree 10, least squares
            against log(erfc(z) / t) + z^2 (double-precision libm) on 200,001 points of [0, 10];
  erf(x)  = x * P(x^2), |x| < 1: P of degree 6, least squares against erf(x) / x.

Run with Debian's Python (numpy from python3-numpy): /usr/bin/python3 scripts/fit_erfc.py
"""
import math

import numpy as np

P = np.polynomial.polynomial


def fit_r():
    z = np.linspace(0.0, 10.0, 200001)
    t = 1.0 / (1.0 + 0.5 * z)
    r = np.array([math.log(math.erfc(v) * (1.0 + 0.5 * v)) + v * v for v in z])
    c = P.polyfit(t, r, 10)
    return c, np.abs(P.polyval(t, c) - r).max()


def fit_p():
    x = np.linspace(1e-6, 1.0, 100001)
    y = np.array([math.erf(v) / v for v in x])
    c = P.polyfit(x * x, y, 6)
    return c, (np.abs(P.polyval(x * x, c) - y) / y).max()


def hexfloat(c):
    m, e = float(np.float32(c)).hex().split("p")
    return m.rstrip("0").rstrip(".") + "p" + e


def emit(name, coeffs, err, what):
    print(f"// scripts/fit_erfc.py: {what}: max error {err:.2e}")
    print(f"inline constexpr float {name}[] = {{")
    for c in coeffs:
        print(f"    {hexfloat(c)}f,  // {c:.10g}")
    print("};")


if __name__ == "__main__":
    emit("kErfcR", *fit_r(), "R(t), absolute, in the exponent")
    emit("kErfP", *fit_p(), "P(x^2), relative")
