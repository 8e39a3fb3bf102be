"""The matrix embedding (sinusoidal index encoding, MatrixEncoder) and coordinate sampling."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import torch

from sparserl.embedding import MatrixEncoder, SinusoidalIndexEmbedding, feature_vector
from sparserl.features import matrix_features
from sparserl.sampling import sample_coordinates, stored_coordinates


def reference_encoding(indices: np.ndarray, dim: int) -> np.ndarray:
    """Eq. 2 of the SparseRL paper, evaluated entry by entry in float64."""
    out = np.empty((len(indices), dim))
    for a, ind in enumerate(indices):
        for j in range(dim // 2):
            angle = ind / 10000 ** (2 * j / dim)
            out[a, 2 * j] = np.sin(angle)
            out[a, 2 * j + 1] = np.cos(angle)
    return out


def test_sinusoidal_matches_the_formula_for_large_indices():
    indices = np.array([0, 1, 7, 12345, 999_999, 3_141_592, 9_999_999, 10_000_000])
    encoded = SinusoidalIndexEmbedding(16)(torch.tensor(indices), dtype=torch.float64)
    np.testing.assert_allclose(encoded.numpy(), reference_encoding(indices, 16), rtol=0, atol=1e-6)


def test_sinusoidal_keeps_shape_and_distinguishes_neighbours_in_the_millions():
    embedding = SinusoidalIndexEmbedding(32)
    batch = torch.tensor([[5_000_000, 5_000_001], [0, 1]])
    encoded = embedding(batch)
    assert encoded.shape == (2, 2, 32) and encoded.dtype == torch.float32
    assert not torch.allclose(encoded[0, 0], encoded[0, 1], atol=1e-3)
    assert list(embedding.parameters()) == []


def test_sinusoidal_rejects_odd_width():
    with pytest.raises(ValueError, match="even"):
        SinusoidalIndexEmbedding(7)


@pytest.mark.parametrize("encoding", ["sinusoidal", "raw", "minmax"])
def test_encoder_gives_one_embedding_per_coordinate(encoding):
    encoder = MatrixEncoder(index_dim=8, hidden_size=24, encoding=encoding, max_index=1000)
    rows = torch.tensor([0, 0, 3, 999])
    cols = torch.tensor([1, 5, 3, 2])
    prefix = encoder(rows, cols)
    assert prefix.shape == (4, 24)
    assert torch.isfinite(prefix).all()
    # Different coordinates give different embeddings.
    assert not torch.allclose(prefix[0], prefix[1])


def test_minmax_scales_by_max_index_and_raw_does_not():
    rows, cols = torch.tensor([0, 500]), torch.tensor([1000, 250])
    minmax = MatrixEncoder(8, 16, encoding="minmax", max_index=1000)
    raw = MatrixEncoder(8, 16, encoding="raw")
    torch.testing.assert_close(
        minmax.encode_coordinates(rows, cols), torch.tensor([[0.0, 1.0], [0.5, 0.25]])
    )
    torch.testing.assert_close(
        raw.encode_coordinates(rows, cols), torch.tensor([[0.0, 1000.0], [500.0, 250.0]])
    )


def test_encoder_configuration_errors():
    with pytest.raises(ValueError, match="max_index"):
        MatrixEncoder(8, 16, encoding="minmax")
    with pytest.raises(ValueError, match="unknown index encoding"):
        MatrixEncoder(8, 16, encoding="learned")
    with pytest.raises(ValueError, match="feature tokens"):
        MatrixEncoder(8, 16, n_features=4, n_feature_tokens=0)


def test_feature_tokens_come_first_and_depend_on_the_features():
    A = scipy.sparse.random(40, 30, density=0.2, random_state=0, format="csr")
    features = matrix_features(A)
    names = sorted(features)
    vector = torch.from_numpy(feature_vector(features, names))
    encoder = MatrixEncoder(8, 16, n_features=len(names), n_feature_tokens=2)
    rows, cols = torch.tensor([0, 1, 2]), torch.tensor([4, 5, 6])
    prefix = encoder(rows, cols, vector)
    assert prefix.shape == (2 + 3, 16)
    torch.testing.assert_close(prefix[2:], encoder.adapter(encoder.encode_coordinates(rows, cols)))
    assert not torch.allclose(prefix[:2], encoder(rows, cols, vector * 2)[:2])
    with pytest.raises(ValueError, match="feature vector"):
        encoder(rows, cols)


def test_feature_vector_is_signed_log_scaled():
    vector = feature_vector(
        {"a": 0.0, "b": np.e - 1, "c": -(np.e**2 - 1), "d": 5.0}, ["c", "b", "a"]
    )
    np.testing.assert_allclose(vector, [-2.0, 1.0, 0.0])
    with pytest.raises(KeyError, match="missing"):
        feature_vector({"a": 1.0}, ["a", "z"])


# --------------------------------------------------------------------------- sampling


def skewed_matrix(seed: int = 0) -> scipy.sparse.csr_array:
    """10 000 rows of 1-6 entries each, plus three dense rows of 2000 entries."""
    rng = np.random.default_rng(seed)
    n = 10_000
    lengths = rng.integers(1, 7, size=n)
    lengths[[17, 5000, 9990]] = 2000
    rows = np.repeat(np.arange(n), lengths)
    cols = np.concatenate([rng.choice(n, size=k, replace=False) for k in lengths])
    return scipy.sparse.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n))


def test_small_matrix_returns_every_coordinate_in_order():
    A = scipy.sparse.random(30, 20, density=0.1, random_state=3, format="coo")
    rows, cols = sample_coordinates(A, max_nonzeros=1000, seed=0)
    dense = A.toarray()
    expected_rows, expected_cols = np.nonzero(dense)  # row-major order
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(cols, expected_cols)
    assert rows.dtype == np.int64 and cols.dtype == np.int64


def test_stored_coordinates_sum_duplicates():
    A = scipy.sparse.coo_array(([1.0, 2.0, 3.0], ([2, 0, 2], [1, 3, 1])), shape=(3, 4))
    rows, cols = stored_coordinates(A)
    np.testing.assert_array_equal(rows, [0, 2])
    np.testing.assert_array_equal(cols, [3, 1])


def test_sampling_is_deterministic_bounded_sorted_and_a_subset():
    A = skewed_matrix()
    rows, cols = sample_coordinates(A, max_nonzeros=512, seed=7)
    again = sample_coordinates(A, max_nonzeros=512, seed=7)
    other = sample_coordinates(A, max_nonzeros=512, seed=8)
    np.testing.assert_array_equal(rows, again[0])
    np.testing.assert_array_equal(cols, again[1])
    assert not (np.array_equal(rows, other[0]) and np.array_equal(cols, other[1]))
    assert 0 < len(rows) <= 512
    order = rows * A.shape[1] + cols
    assert np.all(np.diff(order) > 0)  # strictly increasing: sorted, no repeats
    assert np.all(A[rows, cols] != 0)


def test_sampling_covers_the_row_range_and_every_row_length_regime():
    A = skewed_matrix()
    rows, cols = sample_coordinates(A, max_nonzeros=512, seed=0)
    # Rows spread over the whole range: every tenth of the rows is represented.
    assert set(rows * 10 // A.shape[0]) == set(range(10))
    # The three dense rows hold a third of the entries and all show up, with columns
    # spread across the row rather than bunched at its start.
    for dense_row in (17, 5000, 9990):
        shown = cols[rows == dense_row]
        assert len(shown) > 0
        assert shown.max() - shown.min() > A.shape[1] // 2
    # Short rows of every length 1..6 are represented.
    lengths = np.diff(A.indptr)
    assert set(lengths[rows]) >= {1, 2, 3, 4, 5, 6, 2000}


def test_a_tiny_regime_is_not_sampled_away():
    # 50 000 entries in rows of length 5, and one row of length 1: the single entry of
    # the short row is 0.002% of the matrix but still gets its floor share.
    n = 10_001
    rows = np.concatenate([np.repeat(np.arange(10_000), 5), [10_000]])
    cols = np.concatenate([np.tile(np.arange(5), 10_000), [3]])
    A = scipy.sparse.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, 5))
    sampled_rows, _ = sample_coordinates(A, max_nonzeros=100, seed=0)
    assert 10_000 in sampled_rows
    assert len(sampled_rows) <= 100


def test_sampling_rejects_a_zero_budget():
    with pytest.raises(ValueError, match="max_nonzeros"):
        sample_coordinates(scipy.sparse.eye(3), max_nonzeros=0)
