"""Correctness rules: reference results, per-row tolerances and the output check.

The functions take numpy arrays and scipy matrices, or CuPy arrays and cupyx matrices
(the worker computes references on the GPU, where a float64 SpMM of 10^7 entries takes
milliseconds). Nothing here needs CUDA, so the rules are tested on any machine.
Shapes: A is m x n; x is (n,) for SpMV and B is (n, N) for SpMM; outputs are (m,) or (m, N).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

UNIT_ROUNDOFF_FP32 = 2.0**-24
SAFETY_FACTOR = 4.0
# A guard slot after (and before) every device buffer; output guards must keep it.
GUARD_ELEMENTS = 256
GUARD_FLOAT = np.float32(-1.2345678e30)
GUARD_INT = np.int32(2**31 - 1)


def random_dense_input(rng: np.random.Generator, n: int, n_cols: int | None) -> np.ndarray:
    """Fresh float32 input drawn from N(0, 1): never zeros or ones. (n,) or (n, n_cols)."""
    shape = (n,) if n_cols is None else (n, n_cols)
    return rng.standard_normal(shape, dtype=np.float32)


def random_values(rng: np.random.Generator, nnz: int) -> np.ndarray:
    """Fresh float32 matrix values in [-1, -0.25] U [0.25, 1]: no zeros, both signs."""
    magnitude = rng.uniform(0.25, 1.0, nnz).astype(np.float32)
    return np.where(rng.random(nnz) < 0.5, -magnitude, magnitude)


def array_module(array):
    """numpy for numpy arrays, cupy for CuPy arrays."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def reference(A: sp.csr_matrix, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 result A @ dense and the per-element tolerance.

    The tolerance of output row i is SAFETY_FACTOR * u * (len_i + 2) * (|A| |dense|)_i,
    the worst-case error bound of summing len_i fp32 products in any order (u is the
    fp32 unit roundoff), plus a tiny absolute floor so exact zeros compare equal.
    """
    xp = array_module(dense)
    A64 = A.astype(np.float64)
    dense64 = dense.astype(np.float64)
    result = A64 @ dense64
    magnitude = abs(A64) @ xp.abs(dense64)
    row_lengths = xp.diff(A.indptr).astype(np.float64) + 2.0
    if result.ndim == 2:
        row_lengths = row_lengths[:, None]
    tolerance = SAFETY_FACTOR * UNIT_ROUNDOFF_FP32 * row_lengths * magnitude + 1e-30
    return result, tolerance


def compare(output: np.ndarray, expected: np.ndarray, tolerance: np.ndarray) -> str:
    """'' when `output` matches, else a one-line reason (NaN elements or the worst element).

    Outputs are poisoned with NaN and inputs are followed by NaN guards, so a NaN means
    an element was never written or was computed from memory outside the inputs."""
    xp = array_module(output)
    not_a_number = xp.isnan(output)
    if not_a_number.any():
        first = tuple(int(i) for i in xp.argwhere(not_a_number)[0])
        return (
            f"{int(not_a_number.sum())} output element(s) are NaN: never written, or read "
            f"outside the inputs (first at {first})"
        )
    error = xp.abs(output.astype(np.float64) - expected)
    bad = error > tolerance
    if not bad.any():
        return ""
    worst = np.unravel_index(int(xp.argmax(xp.where(bad, error / tolerance, 0))), output.shape)
    return (
        f"{int(bad.sum())} output element(s) wrong; worst at {tuple(int(i) for i in worst)}: "
        f"got {float(output[worst]):.6g}, expected {float(expected[worst]):.6g} "
        f"(tolerance {float(tolerance[worst]):.3g})"
    )


def guards_intact(guarded: np.ndarray, length: int) -> bool:
    """True when the GUARD_ELEMENTS slots before and after `length` payload elements
    of a guarded float buffer (as copied back from the device) still hold GUARD_FLOAT."""
    front = guarded[:GUARD_ELEMENTS]
    back = guarded[GUARD_ELEMENTS + length :]
    return bool((front == GUARD_FLOAT).all() and (back == GUARD_FLOAT).all())


def traffic_floor_bytes(format_bytes: int, m: int, n: int, n_cols: int | None) -> int:
    """Fewest bytes one call must move: the matrix's format arrays read once, the dense
    input read once and the output written once (fp32). For CSR SpMV this is
    8*nnz + 4*(m+1) + 4*n + 4*m."""
    width = 1 if n_cols is None else n_cols
    return format_bytes + 4 * n * width + 4 * m * width
