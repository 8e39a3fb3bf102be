"""sparserl.features checked against brute-force loops over the dense pattern, against
matrices whose structure is known by construction, and against dlmc.csv statistics."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import scipy.sparse as sp

from sparserl.features import fingerprint, matrix_features
from sparserl.io import load_matrix


def brute_force_features(dense_pattern: np.ndarray) -> dict[str, float]:
    """The features from their definitions, by Python loops over a boolean dense array."""
    m, n = dense_pattern.shape
    entries = [(i, j) for i in range(m) for j in range(n) if dense_pattern[i, j]]
    nnz = len(entries)
    lengths = [int(dense_pattern[i].sum()) for i in range(m)]
    mean = sum(lengths) / m
    std = (sum((x - mean) ** 2 for x in lengths) / m) ** 0.5
    diagonals = {j - i for i, j in entries}

    def full_block_fraction(r):
        full = 0
        for a in range(0, m, r):
            for b in range(0, n, r):
                if a + r <= m and b + r <= n and dense_pattern[a : a + r, b : b + r].all():
                    full += r * r
        return full / nnz

    segments = {(i, j // 32) for i, j in entries}
    return {
        "n_rows": m,
        "n_cols": n,
        "nnz": nnz,
        "density": nnz / (m * n),
        "row_length_mean": mean,
        "row_length_std": std,
        "row_length_min": min(lengths),
        "row_length_max": max(lengths),
        "row_length_cv": std / mean,
        "empty_rows": lengths.count(0),
        "bandwidth": max(abs(i - j) for i, j in entries),
        "n_diagonals": len(diagonals),
        "dia_fill": nnz / (len(diagonals) * m),
        "ell_fill": nnz / (max(lengths) * m),
        "block_2x2_fraction": full_block_fraction(2),
        "block_4x4_fraction": full_block_fraction(4),
        "column_locality": nnz / len(segments),
    }


def random_pattern(m, n, density, seed, dense_tiles=0):
    """Random boolean pattern plus `dense_tiles` fully set aligned 4x4 tiles."""
    rng = np.random.default_rng(seed)
    pattern = rng.random((m, n)) < density
    for _ in range(dense_tiles):
        a, b = rng.integers(0, m // 4), rng.integers(0, n // 4)
        pattern[4 * a : 4 * a + 4, 4 * b : 4 * b + 4] = True
    return pattern


@pytest.mark.parametrize(
    ("m", "n", "density", "seed", "tiles"),
    [(37, 81, 0.15, 0, 3), (64, 64, 0.6, 1, 2), (10, 130, 0.05, 2, 1), (23, 5, 0.9, 3, 0)],
)
def test_features_match_brute_force(m, n, density, seed, tiles):
    pattern = random_pattern(m, n, density, seed, tiles)
    values = np.where(pattern, np.random.default_rng(seed).standard_normal((m, n)) + 5, 0)
    features = matrix_features(sp.csr_matrix(values))
    expected = brute_force_features(pattern)
    assert features.keys() == expected.keys()
    for name, value in expected.items():
        assert features[name] == pytest.approx(value, rel=1e-12), name
        assert type(features[name]) in (int, float)


def test_banded_matrix_structure_is_known_by_construction():
    """Diagonals -2, 0, +3 of a 10x10 matrix: 8 + 10 + 7 entries."""
    A = sp.diags([np.ones(8), np.ones(10), np.ones(7)], [-2, 0, 3], shape=(10, 10))
    features = matrix_features(A)
    assert features["nnz"] == 25
    assert features["bandwidth"] == 3
    assert features["n_diagonals"] == 3
    assert features["dia_fill"] == 25 / 30
    assert features["row_length_max"] == 3 and features["row_length_min"] == 2  # rows 0, 1, 7-9
    assert features["ell_fill"] == 25 / 30
    assert features["empty_rows"] == 0


def test_block_and_locality_extremes():
    """A 4x4-tiled matrix is fully blocked; one 4-wide run per row gives locality 4;
    columns 40 apart give locality 1; full rows of 64 give 32."""
    tiled = sp.kron(sp.random(20, 30, density=0.2, random_state=0), np.ones((4, 4)))
    features = matrix_features(tiled)
    assert features["block_4x4_fraction"] == 1.0 and features["block_2x2_fraction"] == 1.0
    assert matrix_features(sp.kron(sp.eye(20), np.ones((4, 4))))["column_locality"] == 4.0

    damaged = sp.lil_matrix(tiled)
    i, j = sp.find(tiled)[:2]
    damaged[i[0], j[0]] = 0
    damaged = sp.csr_matrix(damaged)
    damaged.eliminate_zeros()
    assert matrix_features(damaged)["block_4x4_fraction"] == (tiled.nnz - 16) / damaged.nnz
    assert matrix_features(damaged)["block_2x2_fraction"] == (tiled.nnz - 4) / damaged.nnz

    n = 64
    row = np.repeat(np.arange(n), 4)
    col = (row * 33 + np.tile(np.arange(4) * 40, n)) % (n * 33)
    scattered = sp.csr_matrix((np.ones(4 * n), (row, col)), shape=(n, n * 33))
    assert matrix_features(scattered)["column_locality"] == 1.0
    assert matrix_features(sp.csr_matrix(np.ones((3, 64))))["column_locality"] == 32.0


def test_explicit_zeros_duplicates_and_formats():
    """Stored zeros count; duplicates count once; any sparse format gives the same."""
    coo = sp.coo_matrix(([1.0, 0.0, 2.0, 3.0], ([0, 1, 0, 0], [1, 1, 1, 2])), shape=(3, 3))
    features = matrix_features(coo)
    assert features["nnz"] == 3 and features["empty_rows"] == 1
    for other in (coo.tocsr(), coo.tocsc(), sp.csr_array(coo), coo.tolil()):
        assert matrix_features(other) == features


def test_empty_matrices():
    for shape in [(0, 0), (5, 0), (4, 7)]:
        features = matrix_features(sp.csr_matrix(shape))
        assert features["nnz"] == 0 and features["n_rows"] == shape[0]
        assert all(np.isfinite(value) for value in features.values())


def test_row_statistics_match_dlmc_csv(shared_data):
    folder = shared_data / "dlmc"
    stats = {row["name"]: row for row in csv.DictReader((folder / "dlmc.csv").open())}
    for path in sorted(folder.glob("*/*/*/*.smtx.gz"))[::40]:
        row = stats[str(path.relative_to(folder)).removesuffix(".smtx.gz")]
        features = matrix_features(load_matrix(path))
        assert features["row_length_mean"] == pytest.approx(float(row["mean_nnz_per_row"]))
        assert features["row_length_std"] == pytest.approx(float(row["std_nnz_per_row"]))
        assert features["density"] == pytest.approx(1 - float(row["sparsity"]))


def test_fingerprint_depends_on_pattern_only():
    pattern = random_pattern(30, 40, 0.2, 5)
    A = sp.csr_matrix(pattern.astype(np.float32))
    reference = fingerprint(A)
    assert len(reference) == 32 and int(reference, 16) >= 0

    coo = A.tocoo()
    order = np.random.default_rng(0).permutation(coo.nnz)
    shuffled = sp.coo_matrix((coo.data[order] * 7, (coo.row[order], coo.col[order])), A.shape)
    with_duplicate = sp.coo_matrix(
        (
            np.append(coo.data, 1.0),
            (np.append(coo.row, coo.row[0]), np.append(coo.col, coo.col[0])),
        ),
        shape=A.shape,
    )
    int64_indices = A.copy()
    int64_indices.indices = int64_indices.indices.astype(np.int64)
    int64_indices.indptr = int64_indices.indptr.astype(np.int64)
    for same in (A.tocsc(), shuffled, with_duplicate, sp.csr_array(A), int64_indices):
        assert fingerprint(same) == reference

    row = next(r for r in range(30) if 0 < pattern[r].sum() < 40)
    moved = pattern.copy()
    moved[row, np.flatnonzero(pattern[row])[0]] = False
    moved[row, np.flatnonzero(~pattern[row])[0]] = True
    extra_row = sp.vstack([A, sp.csr_matrix((1, 40))])
    extra_column = sp.csr_matrix((A.data, A.indices, A.indptr), shape=(30, 41))
    differing = {
        fingerprint(sp.csr_matrix(moved)),
        fingerprint(extra_row),
        fingerprint(extra_column),
    }
    assert reference not in differing and len(differing) == 3


def test_features_of_input_are_not_modified():
    coo = sp.coo_matrix(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2))
    csr = sp.csr_matrix((np.array([1.0, 2.0]), np.array([1, 1]), np.array([0, 2, 2])), shape=(2, 2))
    matrix_features(coo)
    fingerprint(csr)
    assert coo.nnz == 2 and csr.nnz == 2 and csr.indices.tolist() == [1, 1]
