"""Synthetic families: canonical CSR, structure by construction, seeding, the registry."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.stats

from sparserl.datasets import synthetic
from sparserl.features import matrix_features


def assert_canonical(A: sp.csr_matrix) -> None:
    """float32 values, int32 indices, strictly increasing columns inside every row."""
    assert isinstance(A, sp.csr_matrix)
    assert A.dtype == np.float32
    assert A.indptr.dtype == np.int32 and A.indices.dtype == np.int32
    assert A.indptr[0] == 0 and A.indptr[-1] == A.nnz == len(A.indices)
    assert np.all(np.diff(A.indptr) >= 0)
    assert A.indices.min(initial=0) >= 0 and A.indices.max(initial=0) < A.shape[1]
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    keys = rows.astype(np.int64) * A.shape[1] + A.indices
    assert np.all(np.diff(keys) > 0), "entries not sorted, or repeated"


def same_pattern(A: sp.spmatrix, B: sp.spmatrix) -> bool:
    return A.shape == B.shape and ((A != 0) != (B != 0)).nnz == 0


def identical(A: sp.csr_matrix, B: sp.csr_matrix) -> bool:
    return (
        A.shape == B.shape
        and np.array_equal(A.indptr, B.indptr)
        and np.array_equal(A.indices, B.indices)
        and np.array_equal(A.data, B.data)
    )


def tridiagonal_pattern(n: int) -> sp.csr_matrix:
    return sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n), format="csr")


@pytest.mark.parametrize("family", sorted(synthetic.FAMILIES))
def test_family_is_canonical_near_the_hint_and_seeded(family):
    A = synthetic.make(family, 20_000, seed=1)
    assert_canonical(A)
    low = 0.85 if family == "power_law" else 0.9
    assert low * 20_000 <= A.nnz <= 1.1 * 20_000
    assert np.all(A.data != 0)  # standard normal or kept weights: never exactly zero
    assert identical(A, synthetic.make(family, 20_000, seed=1))
    other = synthetic.make(family, 20_000, seed=2)
    assert not identical(A, other)


@pytest.mark.parametrize("family", ["power_law", "uniform_random", "row_skewed", "block_sparse"])
def test_random_patterns_depend_on_the_seed(family):
    A, B = (synthetic.make(family, 5000, seed=s) for s in (3, 4))
    assert not same_pattern(A, B)


def test_make_rejects_unknown_family():
    with pytest.raises(ValueError, match="unknown synthetic family 'nope'.*banded"):
        synthetic.make("nope", 1000)


@pytest.mark.parametrize("n, bandwidth", [(1, 0), (50, 0), (50, 3), (40, 39)])
def test_banded_matches_its_definition(n, bandwidth):
    A = synthetic.banded(n, bandwidth, seed=0)
    assert_canonical(A)
    i, j = np.indices((n, n))
    assert same_pattern(A, sp.csr_matrix(np.abs(i - j) <= bandwidth))
    assert A.nnz == n * (2 * bandwidth + 1) - bandwidth * (bandwidth + 1)
    features = matrix_features(A)
    assert features["bandwidth"] == bandwidth
    assert features["n_diagonals"] == 2 * bandwidth + 1


def test_diagonal_is_a_band_of_width_zero():
    A = synthetic.diagonal(30, seed=5)
    assert same_pattern(A, sp.identity(30))


def test_block_diagonal_matches_scipy_block_diag():
    A = synthetic.block_diagonal(5, 8, seed=0)
    assert_canonical(A)
    assert same_pattern(A, sp.block_diag([np.ones((8, 8))] * 5))
    assert matrix_features(A)["block_4x4_fraction"] == 1.0


def test_block_sparse_is_exactly_bsr():
    A = synthetic.block_sparse(30, 20, 4, 0.1, seed=0)
    assert_canonical(A)
    assert A.shape == (120, 80)
    assert A.nnz == round(0.1 * 30 * 20) * 16
    bsr = A.tobsr(blocksize=(4, 4))
    assert bsr.nnz == A.nnz  # every stored 4x4 block is full
    assert matrix_features(A)["block_4x4_fraction"] == 1.0


@pytest.mark.parametrize("nx, ny", [(1, 1), (1, 7), (6, 9)])
def test_stencil_2d_matches_kronecker_construction(nx, ny):
    Tx, Ty = tridiagonal_pattern(nx), tridiagonal_pattern(ny)
    five = synthetic.stencil_2d(nx, ny, 5, seed=0)
    nine = synthetic.stencil_2d(nx, ny, 9, seed=0)
    assert_canonical(five)
    assert_canonical(nine)
    assert same_pattern(five, sp.kron(Tx, sp.identity(ny)) + sp.kron(sp.identity(nx), Ty))
    assert same_pattern(nine, sp.kron(Tx, Ty))
    assert five.nnz == 5 * nx * ny - 2 * nx - 2 * ny
    assert nine.nnz == (3 * nx - 2) * (3 * ny - 2)


def test_stencil_3d_matches_kronecker_construction():
    nx, ny, nz = 4, 3, 5
    T = [tridiagonal_pattern(d) for d in (nx, ny, nz)]
    I = [sp.identity(d) for d in (nx, ny, nz)]  # noqa: E741
    seven = synthetic.stencil_3d(nx, ny, nz, 7, seed=0)
    full = synthetic.stencil_3d(nx, ny, nz, 27, seed=0)
    star = (
        sp.kron(sp.kron(T[0], I[1]), I[2])
        + sp.kron(sp.kron(I[0], T[1]), I[2])
        + sp.kron(sp.kron(I[0], I[1]), T[2])
    )
    assert same_pattern(seven, star)
    assert same_pattern(full, sp.kron(sp.kron(T[0], T[1]), T[2]))
    assert seven.nnz == 7 * nx * ny * nz - 2 * (nx * ny + ny * nz + nx * nz)
    assert full.nnz == (3 * nx - 2) * (3 * ny - 2) * (3 * nz - 2)


def test_power_law_has_heavy_rows_and_merged_edges():
    n, avg_degree = 4000, 8
    A = synthetic.power_law(n, avg_degree, seed=0)
    assert_canonical(A)
    assert A.shape == (n, n)
    assert 0.8 * n * avg_degree < A.nnz <= n * avg_degree
    lengths = np.diff(A.indptr)
    uniform = np.diff(synthetic.uniform_random(n, n, nnz=A.nnz, seed=0).indptr)
    assert lengths.max() > 10 * lengths.mean()
    assert uniform.max() < 4 * uniform.mean()


def test_uniform_random_density_and_arguments():
    A = synthetic.uniform_random(300, 200, 0.05, seed=0)
    assert_canonical(A)
    assert abs(A.nnz / (300 * 200) - 0.05) < 0.005
    dense = synthetic.uniform_random(40, 30, 0.6, seed=0)  # rows fuller than n/16
    assert_canonical(dense)
    assert abs(dense.nnz / (40 * 30) - 0.6) < 0.06
    by_count = synthetic.uniform_random(500, 400, nnz=4000, seed=0)
    assert abs(by_count.nnz - 4000) < 4 * np.sqrt(4000)
    with pytest.raises(ValueError, match="exactly one of density and nnz"):
        synthetic.uniform_random(10, 10, 0.1, nnz=5)
    with pytest.raises(ValueError, match="density must be in"):
        synthetic.uniform_random(10, 10, 1.5)


@pytest.mark.parametrize("long_row_len", [50, 900])  # topped-up draws, then sampled rows
def test_row_skewed_long_rows(long_row_len):
    A = synthetic.row_skewed(2000, 1000, 3.0, 5, long_row_len, seed=0)
    assert_canonical(A)
    lengths = np.diff(A.indptr)
    assert np.count_nonzero(lengths == long_row_len) >= 5
    short = np.sort(lengths)[:-5]
    assert abs(short.mean() - 3.0) < 0.2
    assert short.max() < long_row_len


@pytest.mark.parametrize("sparsity", [0.7, 0.95])
def test_pruned_weights_keeps_the_largest_magnitudes(sparsity):
    m, n = 300, 400
    A = synthetic.pruned_weights(m, n, sparsity, scale_spread=0.0, seed=0)
    assert_canonical(A)
    assert abs(1 - A.nnz / (m * n) - sparsity) < 0.01
    # With unit scales the weights are N(0, 1), so magnitude pruning keeps exactly the
    # values above the sparsity quantile of |N(0, 1)|.
    threshold = scipy.stats.halfnorm.ppf(sparsity)
    assert abs(np.abs(A.data).min() - threshold) < 0.02


def test_pruned_weights_scale_spread_varies_row_lengths():
    m, n, sparsity = 256, 1024, 0.9
    uniform = np.diff(synthetic.pruned_weights(m, n, sparsity, scale_spread=0.0, seed=0).indptr)
    spread = np.diff(synthetic.pruned_weights(m, n, sparsity, seed=0).indptr)
    binomial_std = np.sqrt(n * sparsity * (1 - sparsity))
    assert uniform.std() < 1.3 * binomial_std
    assert spread.std() > 1.5 * binomial_std


def test_pruned_weights_is_generated_in_row_blocks():
    # n = 2**21 columns gives blocks of 2 rows: the result must still be one canonical matrix.
    A = synthetic.pruned_weights(5, 2**21, 0.999, seed=0)
    assert_canonical(A)
    assert abs(1 - A.nnz / (5 * 2**21) - 0.999) < 1e-4


@pytest.mark.parametrize(
    "call",
    [
        lambda: synthetic.banded(5, 5),
        lambda: synthetic.block_sparse(4, 4, 2, 0.0),
        lambda: synthetic.stencil_2d(3, 3, points=7),
        lambda: synthetic.stencil_3d(3, 3, 3, points=9),
        lambda: synthetic.power_law(100, 4, exponent=2.0),
        lambda: synthetic.row_skewed(10, 10, 2, 11, 3),
        lambda: synthetic.pruned_weights(10, 10, 1.0),
    ],
)
def test_bad_parameters_raise_value_error(call):
    with pytest.raises(ValueError):
        call()
