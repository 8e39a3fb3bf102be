"""Correctness rules of the harness, on the CPU: tolerances, NaN poison, guards."""

import numpy as np
import scipy.sparse as sp

from sparserl.harness.check import (
    GUARD_ELEMENTS,
    GUARD_FLOAT,
    compare,
    guards_intact,
    random_dense_input,
    random_values,
    reference,
)


def test_fp32_kernel_arithmetic_passes_and_errors_fail():
    rng = np.random.default_rng(0)
    A = sp.random(500, 400, density=0.05, random_state=rng, format="csr", dtype=np.float32)
    A.data = random_values(rng, A.nnz)
    x = random_dense_input(rng, 400, None)
    expected, tolerance = reference(A, x)
    fp32 = (A @ x).astype(np.float32)  # scipy in float32: a legitimate summation order
    assert compare(fp32, expected, tolerance) == ""
    wrong = fp32.copy()
    wrong[17] += 1e-2 * (abs(expected[17]) + 1)
    assert "1 output element(s) wrong; worst at (17,)" in compare(wrong, expected, tolerance)
    unwritten = fp32.copy()
    unwritten[3] = np.nan
    assert "NaN" in compare(unwritten, expected, tolerance)


def test_spmm_reference_shapes():
    rng = np.random.default_rng(1)
    A = sp.random(50, 40, density=0.1, random_state=rng, format="csr", dtype=np.float32)
    B = random_dense_input(rng, 40, 8)
    expected, tolerance = reference(A, B)
    assert expected.shape == tolerance.shape == (50, 8)
    assert compare((A @ B).astype(np.float32), expected, tolerance) == ""


def test_random_inputs_are_never_trivial():
    rng = np.random.default_rng(2)
    values = random_values(rng, 10_000)
    assert np.all(np.abs(values) >= 0.25) and (values < 0).any() and (values > 0).any()
    dense = random_dense_input(rng, 1000, None)
    assert not np.isin(dense, [0.0, 1.0]).any()


def test_guards():
    length = 10
    buffer = np.full(length + 2 * GUARD_ELEMENTS, GUARD_FLOAT, dtype=np.float32)
    buffer[GUARD_ELEMENTS : GUARD_ELEMENTS + length] = 1.0
    assert guards_intact(buffer, length)
    buffer[GUARD_ELEMENTS + length] = 0.0
    assert not guards_intact(buffer, length)


def test_blocked_reference_and_chunked_compare_agree_with_whole():
    rng = np.random.default_rng(3)
    A = sp.random(300, 200, density=0.05, random_state=rng, format="csr", dtype=np.float32)
    B = random_dense_input(rng, 200, 40)
    expected, tolerance = reference(A, B, column_block=16)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(expected, exact, rtol=1e-7)
    assert expected.dtype == np.float32 and (tolerance > 0).all()
    out = (A @ B).astype(np.float32)
    out[123, 37] += 1.0
    out[5, 2] = np.nan
    whole = compare(out, expected, tolerance)
    assert whole == compare(out, expected, tolerance, chunk_elements=97)
    assert "1 output element(s) are NaN" in whole and "(5, 2)" in whole
    out[5, 2] = (A @ B)[5, 2]
    assert "worst at (123, 37)" in compare(out, expected, tolerance, chunk_elements=97)
