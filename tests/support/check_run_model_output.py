#!/usr/bin/python3
"""Checks the one output examples/c/run_model wrote against PyTorch's golden, at the zoo's
tolerances (tests/support/tolerances.h): cosine >= 0.99999, max error 1e-4 of the scale.
    check_run_model_output.py OUTDIR GOLDEN.npy LABEL
"""
import glob
import sys

import numpy as np

out_dir, golden, label = sys.argv[1:4]
outs = glob.glob(out_dir + "/*.npy")
assert len(outs) == 1, outs
got, want = np.load(outs[0]), np.load(golden)
assert got.shape == want.shape, (got.shape, want.shape)
g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
cos = float(g @ w / (np.linalg.norm(g) * np.linalg.norm(w)))
err = float(np.abs(g - w).max())
tol = 1e-4 * max(1.0, float(np.abs(w).max()))
assert cos >= 0.99999 and err <= tol, f"{label}: cosine {cos}, max |nfuse - PyTorch| = {err} (tol {tol})"
print(f"{label}: cosine {cos:.7f}, max |nfuse - PyTorch| = {err:.2e} (tol {tol:.1e})")
