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


def reference(A: sp.csr_matrix, dense: np.ndarray, column_block: int = 16):
    """The answer A @ dense computed in float64, and the per-element tolerance.

    The tolerance of output row i is SAFETY_FACTOR * u * (len_i + 2) * (|A| |dense|)_i,
    the worst-case error bound of summing len_i fp32 products in any order (u is the
    fp32 unit roundoff), plus u * |answer| because the answer is stored rounded to
    float32 (to halve the memory of large SpMM checks), plus a tiny absolute floor so
    exact zeros compare equal. Both are returned as float32 arrays shaped like the
    output; SpMM is computed `column_block` columns at a time to bound float64 memory.
    """
    xp = array_module(dense)
    A64 = A.astype(np.float64)
    magnitude_of_A = abs(A64)
    row_factor = SAFETY_FACTOR * UNIT_ROUNDOFF_FP32 * (xp.diff(A.indptr).astype(np.float64) + 2.0)
    out_shape = (A.shape[0], *dense.shape[1:])
    expected = xp.empty(out_shape, dtype=np.float32)
    tolerance = xp.empty(out_shape, dtype=np.float32)
    width = 1 if dense.ndim == 1 else dense.shape[1]
    for start in range(0, width, column_block):
        columns = slice(start, start + column_block)
        block = (dense if dense.ndim == 1 else dense[:, columns]).astype(np.float64)
        answer = A64 @ block
        factor = row_factor if dense.ndim == 1 else row_factor[:, None]
        bound = factor * (magnitude_of_A @ xp.abs(block)) + UNIT_ROUNDOFF_FP32 * xp.abs(answer)
        if dense.ndim == 1:
            expected[...], tolerance[...] = answer, bound + 1e-30
        else:
            expected[:, columns], tolerance[:, columns] = answer, bound + 1e-30
    return expected, tolerance


def compare(output, expected, tolerance, chunk_elements: int = 1 << 24) -> str:
    """'' when `output` matches, else a one-line reason (NaN elements or the worst element).

    Outputs are poisoned with NaN and inputs are followed by NaN guards, so a NaN means
    an element was never written or was computed from memory outside the inputs.
    Works through the output `chunk_elements` at a time to bound temporary memory."""
    xp = array_module(output)
    flat_out, flat_expected, flat_tolerance = (a.reshape(-1) for a in (output, expected, tolerance))
    n_nan, first_nan, n_bad, worst, worst_ratio = 0, None, 0, None, 0.0
    for start in range(0, flat_out.size, chunk_elements):
        piece = slice(start, start + chunk_elements)
        out = flat_out[piece].astype(np.float64)
        nan = xp.isnan(out)
        if nan.any():
            n_nan += int(nan.sum())
            first_nan = first_nan if first_nan is not None else start + int(xp.argmax(nan))
            continue
        ratio = xp.abs(out - flat_expected[piece]) / flat_tolerance[piece]
        bad = ratio > 1.0
        if bad.any():
            n_bad += int(bad.sum())
            index = int(xp.argmax(ratio))
            if float(ratio[index]) > worst_ratio:
                worst, worst_ratio = start + index, float(ratio[index])
    if n_nan:
        first = tuple(int(i) for i in np.unravel_index(first_nan, output.shape))
        return (
            f"{n_nan} output element(s) are NaN: never written, or read "
            f"outside the inputs (first at {first})"
        )
    if not n_bad:
        return ""
    at = tuple(int(i) for i in np.unravel_index(worst, output.shape))
    return (
        f"{n_bad} output element(s) wrong; worst at {at}: got {float(flat_out[worst]):.6g}, "
        f"expected {float(flat_expected[worst]):.6g} (tolerance {float(flat_tolerance[worst]):.3g})"
    )


def guards_intact(guarded: np.ndarray, length: int) -> bool:
    """True when the GUARD_ELEMENTS slots before and after `length` payload elements
    of a guarded float buffer (as copied back from the device) still hold GUARD_FLOAT."""
    front = guarded[:GUARD_ELEMENTS]
    back = guarded[GUARD_ELEMENTS + length :]
    return bool((front == GUARD_FLOAT).all() and (back == GUARD_FLOAT).all())


def traffic_floor_bytes(m: int, n: int, nnz: int, n_cols: int | None) -> int:
    """Fewest bytes one call must move, whatever the kernel's format: the matrix in CSR
    (int32 indices, fp32 values) read once, the dense input read once and the output
    written once. For SpMV this is 8*nnz + 4*(m+1) + 4*n + 4*m."""
    width = 1 if n_cols is None else n_cols
    return 8 * nnz + 4 * (m + 1) + 4 * n * width + 4 * m * width
