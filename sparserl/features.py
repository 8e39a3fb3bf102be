"""Structure features of a sparse matrix, and a fingerprint of its sparsity pattern.

Both look only at the pattern: the set of stored positions. Values are ignored, and an
explicitly stored zero counts as an entry (as `sparserl.io.load_matrix` keeps it).
Everything is vectorised numpy over the CSR arrays: a 10^7-entry matrix takes seconds.
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse

# Width of a column segment for `column_locality`: 32 fp32 values of x = one 128-byte line.
SEGMENT_WIDTH = 32


def matrix_features(A: scipy.sparse.spmatrix | scipy.sparse.sparray) -> dict[str, float | int]:
    """Structure features of A's sparsity pattern, as plain Python numbers.

    With m rows, n columns, nnz stored entries and r_i the number of entries in row i:

    - n_rows, n_cols, nnz: m, n and the number of stored positions.
    - density: nnz / (m * n).
    - row_length_mean, row_length_std, row_length_min, row_length_max: of r_i over all m
      rows (std is the population standard deviation).
    - row_length_cv: row_length_std / row_length_mean (0 when there are no entries).
    - empty_rows: number of rows with r_i = 0.
    - bandwidth: max |i - j| over entries (i, j).
    - n_diagonals: number of distinct diagonals j - i holding at least one entry.
    - dia_fill: nnz / (n_diagonals * m), the fraction of the DIA array (n_diags x m, see
      docs/kernel_abi.md) that holds stored entries rather than padding.
    - ell_fill: nnz / (row_length_max * m), the same for the ELL array (width x m).
    - block_2x2_fraction, block_4x4_fraction: fraction of the entries that lie in fully
      stored aligned R x R blocks (rows R*a .. R*a+R-1, columns R*b .. R*b+R-1); a block
      reaching past the last row or column is never full.
    - column_locality: nnz / (number of distinct (row, j // 32) pairs), the mean number of
      a row's entries per 32-column segment it touches: the entries of A served by each
      128-byte line of x read for that row. 1 = scattered columns, 32 = dense runs.

    Ratios whose denominator is 0 (an empty matrix) are 0.
    """
    A = sorted_csr(A)
    n_rows, n_cols = A.shape
    nnz = A.nnz
    row_lengths = np.diff(A.indptr)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), row_lengths)
    cols = A.indices.astype(np.int64)
    diagonals = cols - rows  # j - i of each entry

    row_length_mean = nnz / n_rows if n_rows else 0.0
    row_length_std = float(row_lengths.std()) if n_rows else 0.0
    row_length_max = int(row_lengths.max()) if n_rows else 0
    n_diagonals = len(occupied_diagonals(diagonals, n_rows))
    return {
        "n_rows": n_rows,
        "n_cols": n_cols,
        "nnz": nnz,
        "density": _ratio(nnz, n_rows * n_cols),
        "row_length_mean": float(row_length_mean),
        "row_length_std": row_length_std,
        "row_length_min": int(row_lengths.min()) if n_rows else 0,
        "row_length_max": row_length_max,
        "row_length_cv": _ratio(row_length_std, row_length_mean),
        "empty_rows": int(np.count_nonzero(row_lengths == 0)),
        "bandwidth": int(np.abs(diagonals).max()) if nnz else 0,
        "n_diagonals": n_diagonals,
        "dia_fill": _ratio(nnz, n_diagonals * n_rows),
        "ell_fill": _ratio(nnz, row_length_max * n_rows),
        "block_2x2_fraction": _full_block_fraction(rows, cols, A.shape, 2),
        "block_4x4_fraction": _full_block_fraction(rows, cols, A.shape, 4),
        "column_locality": _ratio(nnz, _segments_touched(A.indptr, cols)),
    }


def fingerprint(A: scipy.sparse.spmatrix | scipy.sparse.sparray) -> str:
    """A stable 32-hex-digit hash of A's sparsity pattern (shape and stored positions).

    blake2b (16 bytes) over the shape, indptr and indices of canonical CSR (sorted,
    no repeated positions), each as little-endian int64. The same pattern gives the same
    fingerprint whatever the sparse format, index dtype, entry order or values.
    """
    A = sorted_csr(A)
    digest = hashlib.blake2b(digest_size=16)
    for array in (np.asarray(A.shape), A.indptr, A.indices):
        digest.update(np.ascontiguousarray(array, dtype="<i8").tobytes())
    return digest.hexdigest()


def sorted_csr(A) -> scipy.sparse.csr_matrix:
    """A as CSR with sorted column indices and no repeated positions; A is not modified."""
    if not scipy.sparse.issparse(A):
        raise TypeError(f"expected a scipy sparse matrix, got {type(A).__name__}")
    csr = scipy.sparse.csr_matrix(A)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    return csr


def occupied_diagonals(diagonals: np.ndarray, n_rows: int) -> np.ndarray:
    """The distinct values of `diagonals` (j - i of each entry of a matrix with `n_rows`
    rows), ascending, int64: a count per diagonal, not np.unique, whose hashing took
    3.5 s on 1e7 scattered entries."""
    shifted = np.asarray(diagonals, dtype=np.int64) + (n_rows - 1)  # diagonal 1 - n_rows -> 0
    return np.flatnonzero(np.bincount(shifted)) - (n_rows - 1)


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else 0.0


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Indices where a run of equal consecutive keys begins (empty for no keys), int64."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))


def _full_block_fraction(
    rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], block: int
) -> float:
    """Fraction of the entries lying in fully stored aligned block x block tiles."""
    if rows.size == 0:
        return 0.0
    n_block_cols = -(-shape[1] // block)
    tiles = np.sort((rows // block) * n_block_cols + cols // block)
    entries_per_tile = np.diff(np.append(run_starts(tiles), tiles.size))
    full_tiles = np.count_nonzero(entries_per_tile == block * block)
    return float(full_tiles * block * block / rows.size)


def _segments_touched(indptr: np.ndarray, cols: np.ndarray) -> int:
    """Number of distinct (row, column // SEGMENT_WIDTH) pairs; cols sorted within rows."""
    if cols.size == 0:
        return 0
    segments = cols // SEGMENT_WIDTH
    starts_segment = np.empty(cols.size, dtype=bool)
    starts_segment[0] = True
    starts_segment[1:] = segments[1:] != segments[:-1]
    starts_segment[indptr[:-1][np.diff(indptr) > 0]] = True  # a new row starts a new segment
    return int(np.count_nonzero(starts_segment))
