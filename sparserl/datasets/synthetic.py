"""Seeded synthetic sparse matrices, one function per structural family.

Every generator takes a `seed` (anything `numpy.random.default_rng` accepts) and
returns a `scipy.sparse.csr_matrix` in canonical form: float32 values, int32
`indptr`/`indices`, column indices sorted inside each row, no duplicate entries.
The same arguments and seed always give the same matrix. Stored values are
standard-normal draws (the kept weights for `pruned_weights`); only the sparsity
pattern is structured. Everything is vectorised with NumPy, so 10^7 stored
entries take seconds (see `eval/bench_synthetic.py`).

`FAMILIES` maps a family name to a builder that picks that family's parameters for a
requested number of stored entries; `make(family, size_hint_nnz, seed)` calls it.
Benchmarks use it to sweep matrix sizes from 10^3 to 2*10^7 entries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

Seed = int | np.random.Generator | None

INT32_MAX = np.iinfo(np.int32).max


# ----------------------------------------------------------------------------- helpers


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _indptr(row_lengths: np.ndarray) -> np.ndarray:
    """Row pointer (length m+1, int64) of rows with the given lengths."""
    indptr = np.zeros(len(row_lengths) + 1, dtype=np.int64)
    np.cumsum(row_lengths, out=indptr[1:])
    return indptr


def _to_csr(
    shape: tuple[int, int], indptr: np.ndarray, indices: np.ndarray, rng: np.random.Generator
) -> sp.csr_matrix:
    """Wrap a canonical pattern (rows sorted, duplicate-free) with standard-normal values."""
    values = rng.standard_normal(len(indices), dtype=np.float32)
    return _wrap_csr(shape, indptr, indices, values)


def _wrap_csr(
    shape: tuple[int, int], indptr: np.ndarray, indices: np.ndarray, values: np.ndarray
) -> sp.csr_matrix:
    """csr_matrix with float32 values and int32 index arrays, flagged canonical."""
    _check(
        max(shape) <= INT32_MAX and len(indices) <= INT32_MAX,
        f"matrix {shape} with {len(indices)} entries does not fit int32 indices",
    )
    matrix = sp.csr_matrix(
        (values.astype(np.float32, copy=False), indices.astype(np.int32), indptr.astype(np.int32)),
        shape=shape,
    )
    matrix.has_sorted_indices = True
    matrix.has_canonical_format = True
    return matrix


def _row_runs(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) where row i holds columns starts[i] .. starts[i] + lengths[i] - 1."""
    indptr = _indptr(lengths)
    shift = np.repeat(starts - indptr[:-1], lengths)
    return indptr, np.arange(indptr[-1], dtype=np.int64) + shift


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an int64 array (np.unique is much slower for 10^7 keys)."""
    keys = np.sort(keys)
    distinct = np.empty(len(keys), dtype=bool)
    distinct[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
    return keys[distinct]


def _csr_from_keys(keys: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) from sorted, unique row-major keys `row * n_cols + col`."""
    rows = keys // shape[1]
    indptr = _indptr(np.bincount(rows, minlength=shape[0]))
    return indptr, keys - rows * shape[1]


def _distinct_columns(
    rng: np.random.Generator, lengths: np.ndarray, n_cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) where row i holds `lengths[i]` distinct uniformly random columns.

    Rows fuller than n_cols / 16 draw a sample without replacement each, in a Python
    loop (there are at most 16 * nnz / n_cols of them: few, unless n_cols is tiny). All other rows are drawn together with replacement
    and deduplicated; the rows that lost entries to collisions (at most 1 in 16) are
    topped up with fresh draws, merged into the sorted keys, until every row is full.
    """
    n_rows = len(lengths)
    full_rows = np.flatnonzero(lengths > n_cols // 16)
    full_row_keys = [r * n_cols + rng.choice(n_cols, lengths[r], replace=False) for r in full_rows]
    keys = _sorted_unique(np.concatenate([np.empty(0, np.int64), *full_row_keys]))
    missing = lengths.copy()
    missing[full_rows] = 0
    while missing.any():
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), missing)
        drawn = _sorted_unique(rows * n_cols + rng.integers(0, n_cols, size=len(rows)))
        positions = np.searchsorted(keys, drawn)
        inside = positions < len(keys)
        present = np.zeros(len(drawn), dtype=bool)
        present[inside] = keys[positions[inside]] == drawn[inside]
        fresh = drawn[~present]
        keys = np.insert(keys, positions[~present], fresh)
        missing -= np.bincount(fresh // n_cols, minlength=n_rows)
    return _csr_from_keys(keys, (n_rows, n_cols))


# ----------------------------------------------------------------------------- families


def banded(n: int, bandwidth: int, *, seed: Seed = 0) -> sp.csr_matrix:
    """n x n band matrix: A[i, j] is stored iff |i - j| <= bandwidth.

    Stored entries: n * (2 * bandwidth + 1) - bandwidth * (bandwidth + 1) for bandwidth < n.
    """
    _check(n >= 1, f"n must be >= 1, got {n}")
    _check(0 <= bandwidth < n, f"bandwidth must be in [0, n), got {bandwidth} for n={n}")
    rows = np.arange(n, dtype=np.int64)
    starts = np.maximum(rows - bandwidth, 0)
    lengths = np.minimum(rows + bandwidth, n - 1) - starts + 1
    indptr, indices = _row_runs(starts, lengths)
    return _to_csr((n, n), indptr, indices, np.random.default_rng(seed))


def diagonal(n: int, *, seed: Seed = 0) -> sp.csr_matrix:
    """n x n diagonal matrix (a band of width 0): n stored entries."""
    return banded(n, 0, seed=seed)


def block_diagonal(n_blocks: int, block_size: int, *, seed: Seed = 0) -> sp.csr_matrix:
    """Square matrix of `n_blocks` dense `block_size` x `block_size` blocks on the diagonal.

    Size n_blocks * block_size; stored entries n_blocks * block_size**2.
    """
    _check(n_blocks >= 1 and block_size >= 1, "n_blocks and block_size must be >= 1")
    n = n_blocks * block_size
    starts = (np.arange(n, dtype=np.int64) // block_size) * block_size
    indptr, indices = _row_runs(starts, np.full(n, block_size, dtype=np.int64))
    return _to_csr((n, n), indptr, indices, np.random.default_rng(seed))


def block_sparse(
    n_block_rows: int, n_block_cols: int, block_size: int, density: float, *, seed: Seed = 0
) -> sp.csr_matrix:
    """Matrix tiled by `block_size` x `block_size` blocks, a random `density` of them dense.

    Exactly round(density * n_block_rows * n_block_cols) blocks (at least one) are
    chosen uniformly without replacement, so the pattern is exactly representable in
    BSR with that block size. Shape (n_block_rows * block_size, n_block_cols * block_size).
    """
    _check(min(n_block_rows, n_block_cols, block_size) >= 1, "block counts and size must be >= 1")
    _check(0 < density <= 1, f"density must be in (0, 1], got {density}")
    rng = np.random.default_rng(seed)
    n_grid = n_block_rows * n_block_cols
    n_blocks = max(1, round(density * n_grid))
    block_keys = np.sort(rng.choice(n_grid, n_blocks, replace=False))
    block_indptr, block_cols = _csr_from_keys(block_keys, (n_block_rows, n_block_cols))
    # Every element row of a block row has the same columns: its blocks' columns, in order.
    row_columns = (block_cols[:, None] * block_size + np.arange(block_size)).ravel()
    block_row_of_row = np.arange(n_block_rows * block_size) // block_size
    starts = block_indptr[block_row_of_row] * block_size
    lengths = np.diff(block_indptr)[block_row_of_row] * block_size
    indptr, positions = _row_runs(starts, lengths)
    shape = (n_block_rows * block_size, n_block_cols * block_size)
    return _to_csr(shape, indptr, row_columns[positions], rng)


def _stencil(dims: tuple[int, ...], full: bool, seed: Seed) -> sp.csr_matrix:
    """Grid-neighbour matrix on a C-ordered grid of `dims` points.

    Neighbours are the offsets in {-1, 0, 1}^d: all of them when `full`, else those
    with at most one nonzero component (the star stencil).
    """
    _check(all(d >= 1 for d in dims), f"grid sizes must be >= 1, got {dims}")
    offsets = [
        o for o in itertools.product((-1, 0, 1), repeat=len(dims)) if full or sum(map(abs, o)) <= 1
    ]
    strides = np.cumprod((1,) + dims[:0:-1])[::-1]
    offsets.sort(key=lambda o: int(np.dot(o, strides)))  # ascending column offset
    n = int(np.prod(dims))
    coords = np.indices(dims, dtype=np.int64).reshape(len(dims), n)
    points = np.arange(n, dtype=np.int64)
    valid = np.empty((n, len(offsets)), dtype=bool)
    columns = np.empty((n, len(offsets)), dtype=np.int64)
    for k, offset in enumerate(offsets):
        inside = [(c + o >= 0) & (c + o < d) for c, o, d in zip(coords, offset, dims, strict=True)]
        valid[:, k] = np.logical_and.reduce(inside)
        columns[:, k] = points + int(np.dot(offset, strides))
    indptr = _indptr(valid.sum(axis=1))
    return _to_csr((n, n), indptr, columns[valid], np.random.default_rng(seed))


def stencil_2d(nx: int, ny: int, points: int = 5, *, seed: Seed = 0) -> sp.csr_matrix:
    """5- or 9-point stencil on an nx x ny grid (point (x, y) is row x * ny + y).

    Stored entries: 5*nx*ny - 2*nx - 2*ny (5-point), (3*nx - 2) * (3*ny - 2) (9-point).
    """
    _check(points in (5, 9), f"stencil_2d supports 5 or 9 points, got {points}")
    return _stencil((nx, ny), full=points == 9, seed=seed)


def stencil_3d(nx: int, ny: int, nz: int, points: int = 7, *, seed: Seed = 0) -> sp.csr_matrix:
    """7- or 27-point stencil on an nx x ny x nz grid (point (x, y, z) is row (x*ny + y)*nz + z).

    Stored entries: 7*nx*ny*nz - 2*(nx*ny + ny*nz + nx*nz) (7-point),
    (3*nx - 2) * (3*ny - 2) * (3*nz - 2) (27-point).
    """
    _check(points in (7, 27), f"stencil_3d supports 7 or 27 points, got {points}")
    return _stencil((nx, ny, nz), full=points == 27, seed=seed)


def power_law(n: int, avg_degree: float, *, exponent: float = 2.5, seed: Seed = 0) -> sp.csr_matrix:
    """n x n adjacency matrix of a Chung-Lu random graph with power-law degrees.

    n * avg_degree directed edges are drawn; each endpoint picks vertex i with
    probability proportional to (i + 1) ** (-1 / (exponent - 1)) (inverse-transform
    sampling of the continuous approximation), so degrees follow P(k) ~ k**-exponent.
    Vertices are then relabelled by a random permutation so hubs are scattered, and
    duplicate edges are merged: the result has somewhat fewer than n * avg_degree entries.
    """
    _check(n >= 1 and avg_degree > 0, "n must be >= 1 and avg_degree > 0")
    _check(exponent > 2, f"exponent must be > 2, got {exponent}")
    rng = np.random.default_rng(seed)
    n_edges = round(n * avg_degree)
    a = 1 - 1 / (exponent - 1)  # the weight density x**(a - 1) integrates to x**a / a

    def endpoints() -> np.ndarray:
        u = rng.random(n_edges)
        x = (u * ((n + 1) ** a - 1) + 1) ** (1 / a)  # in [1, n + 1)
        return np.minimum(x.astype(np.int64) - 1, n - 1)

    relabel = rng.permutation(n)
    rows, cols = relabel[endpoints()], relabel[endpoints()]
    indptr, indices = _csr_from_keys(_sorted_unique(rows * n + cols), (n, n))
    return _to_csr((n, n), indptr, indices, rng)


def uniform_random(
    m: int, n: int, density: float | None = None, *, nnz: int | None = None, seed: Seed = 0
) -> sp.csr_matrix:
    """m x n matrix where every entry is stored independently with probability `density`.

    Give `density` or `nnz` (the expected entry count, density = nnz / (m * n)).
    Row lengths are Binomial(n, density); columns are distinct and uniform.
    """
    _check(m >= 1 and n >= 1, f"shape must be positive, got {(m, n)}")
    _check((density is None) != (nnz is None), "give exactly one of density and nnz")
    density = density if density is not None else nnz / (m * n)
    _check(0 < density <= 1, f"density must be in (0, 1], got {density}")
    rng = np.random.default_rng(seed)
    lengths = rng.binomial(n, density, size=m).astype(np.int64)
    indptr, indices = _distinct_columns(rng, lengths, n)
    return _to_csr((m, n), indptr, indices, rng)


def row_skewed(
    m: int,
    n: int,
    avg_row_len: float,
    n_long_rows: int,
    long_row_len: int,
    *,
    seed: Seed = 0,
) -> sp.csr_matrix:
    """m x n matrix of short rows plus a few very long ones, at random row positions.

    Short rows have Poisson(avg_row_len) entries (at most n); `n_long_rows` rows have
    exactly `long_row_len` entries. Columns are distinct and uniform in every row.
    """
    _check(m >= 1 and n >= 1, f"shape must be positive, got {(m, n)}")
    _check(0 <= n_long_rows <= m, f"n_long_rows must be in [0, m], got {n_long_rows}")
    _check(0 <= long_row_len <= n, f"long_row_len must be in [0, n], got {long_row_len}")
    _check(avg_row_len >= 0, f"avg_row_len must be >= 0, got {avg_row_len}")
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.poisson(avg_row_len, size=m), n).astype(np.int64)
    lengths[rng.choice(m, n_long_rows, replace=False)] = long_row_len
    indptr, indices = _distinct_columns(rng, lengths, n)
    return _to_csr((m, n), indptr, indices, rng)


def pruned_weights(
    m: int, n: int, sparsity: float, *, scale_spread: float = 0.05, seed: Seed = 0
) -> sp.csr_matrix:
    """Magnitude-pruned m x n Gaussian weight matrix, like the DLMC's pruned layers.

    Weights are W[i, j] = r[i] * c[j] * g[i, j] with g standard normal and per-row and
    per-column scales r, c log-normal with sigma `scale_spread`: real layers prune some
    channels harder than others. The default 0.05 makes row and column lengths vary
    about 1.5-3x more than in a uniform random pattern (what `scale_spread=0` gives),
    as in the DLMC's magnitude-pruned ResNet-50 layers (median about 2.2x).
    Entries with |W| below the `sparsity` quantile are dropped; the quantile is
    estimated from 2**20 sampled weights, so the achieved sparsity is within about 1e-3
    of the request. W is generated in row blocks of about 4M entries, so memory stays
    bounded. Stored values are the kept weights.
    """
    _check(m >= 1 and n >= 1, f"shape must be positive, got {(m, n)}")
    _check(0 < sparsity < 1, f"sparsity must be in (0, 1), got {sparsity}")
    _check(scale_spread >= 0, f"scale_spread must be >= 0, got {scale_spread}")
    rng = np.random.default_rng(seed)
    row_scale = rng.lognormal(0.0, scale_spread, size=m).astype(np.float32)
    col_scale = rng.lognormal(0.0, scale_spread, size=n).astype(np.float32)
    n_sample = 2**20
    sample = (
        row_scale[rng.integers(0, m, n_sample)]
        * col_scale[rng.integers(0, n, n_sample)]
        * rng.standard_normal(n_sample, dtype=np.float32)
    )
    threshold = np.quantile(np.abs(sample), sparsity)
    lengths, indices, values = [], [], []
    rows_per_block = max(1, 2**22 // n)
    for start in range(0, m, rows_per_block):
        scales = row_scale[start : start + rows_per_block, None] * col_scale
        block = rng.standard_normal(scales.shape, dtype=np.float32) * scales
        kept = np.abs(block) >= threshold
        lengths.append(kept.sum(axis=1))
        indices.append(np.nonzero(kept)[1])
        values.append(block[kept])
    return _wrap_csr(
        (m, n), _indptr(np.concatenate(lengths)), np.concatenate(indices), np.concatenate(values)
    )


# ----------------------------------------------------------------------------- registry


def _size(nnz: float, entries_per_unit: float, power: float = 1.0) -> int:
    """round((nnz / entries_per_unit) ** power), at least 1.

    E.g. the side of a square grid with 5 entries per point is `_size(nnz, 5, 1 / 2)`.
    """
    return max(1, round((nnz / entries_per_unit) ** power))


def _make_diagonal(nnz: int, seed: Seed) -> sp.csr_matrix:
    return diagonal(nnz, seed=seed)


def _make_banded(nnz: int, seed: Seed) -> sp.csr_matrix:
    return banded(_size(nnz, 17) + 8, 8, seed=seed)


def _make_block_diagonal(nnz: int, seed: Seed) -> sp.csr_matrix:
    return block_diagonal(_size(nnz, 16 * 16), 16, seed=seed)


def _make_block_sparse(nnz: int, seed: Seed) -> sp.csr_matrix:
    side = _size(nnz, 4 * 4 * 0.05, 1 / 2)
    return block_sparse(side, side, 4, 0.05, seed=seed)


def _make_stencil_2d(nnz: int, seed: Seed) -> sp.csr_matrix:
    nx = _size(nnz, 5, 1 / 2)
    ny = max(1, round((nnz + 2 * nx) / (5 * nx - 2)))  # solves 5 nx ny - 2 nx - 2 ny = nnz
    return stencil_2d(nx, ny, 5, seed=seed)


def _make_stencil_3d(nnz: int, seed: Seed) -> sp.csr_matrix:
    nx = max(1, round((nnz ** (1 / 3) + 2) / 3))  # (3 nx - 2)^3 ~ nnz
    nz = max(1, round((nnz / (3 * nx - 2) ** 2 + 2) / 3))  # (3 nx - 2)^2 (3 nz - 2) ~ nnz
    return stencil_3d(nx, nx, nz, 27, seed=seed)


def _make_power_law(nnz: int, seed: Seed) -> sp.csr_matrix:
    return power_law(_size(nnz, 16), 16, seed=seed)


def _make_uniform_random(nnz: int, seed: Seed) -> sp.csr_matrix:
    n = _size(nnz, 16)
    return uniform_random(n, n, nnz=nnz, seed=seed)


def _make_row_skewed(nnz: int, seed: Seed) -> sp.csr_matrix:
    # 8 entries per short row on average plus 8 rows of n/4: about 10 entries per row.
    n = max(8, _size(nnz, 10))
    return row_skewed(n, n, 8, 8, n // 4, seed=seed)


def _make_pruned_weights(nnz: int, seed: Seed) -> sp.csr_matrix:
    side = _size(nnz, 0.1, 1 / 2)
    return pruned_weights(side, side, 0.9, seed=seed)


FAMILIES: dict[str, Callable[[int, Seed], sp.csr_matrix]] = {
    "diagonal": _make_diagonal,
    "banded": _make_banded,
    "block_diagonal": _make_block_diagonal,
    "block_sparse": _make_block_sparse,
    "stencil_2d": _make_stencil_2d,
    "stencil_3d": _make_stencil_3d,
    "power_law": _make_power_law,
    "uniform_random": _make_uniform_random,
    "row_skewed": _make_row_skewed,
    "pruned_weights": _make_pruned_weights,
}
"""Family name -> builder(size_hint_nnz, seed) with fixed, typical parameters:
bandwidth 8, 16x16 diagonal blocks, 4x4 blocks at 5% block density, 5-point 2-D and
27-point 3-D stencils on square/cubic grids, average degree 16 (power_law,
uniform_random), 8 rows of n/4 entries among rows of 8 on average (row_skewed), and
90% pruned square weights."""


def make(family: str, size_hint_nnz: int, seed: Seed = 0) -> sp.csr_matrix:
    """A member of `family` (a key of FAMILIES) with about `size_hint_nnz` stored entries.

    For hints of 10^3 and more the count lands within 10% of the hint (grid and block
    sizes are rounded), except power_law, which loses duplicate edges: about 25% fewer
    entries at 10^3, 8% at 10^4, 3% at 10^5, 1% at 10^6.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown synthetic family {family!r}; known: {', '.join(FAMILIES)}")
    _check(size_hint_nnz >= 1, f"size_hint_nnz must be >= 1, got {size_hint_nnz}")
    return FAMILIES[family](size_hint_nnz, seed)
