"""Choosing which nonzeros of a large matrix the policy sees.

The policy reads one prefix embedding per nonzero coordinate, so a matrix with more
stored entries than the policy's budget (`max_nonzeros`) is shown through a sample.
The sample must keep the structure visible: the spread of rows over the whole index
range, the columns spanned inside long rows, and every row-length regime, including
the few very long rows that decide which kernel is fast.

`sample_coordinates` does this with *stratified systematic sampling*:

1. Rows are grouped into regimes by the power of two of their length
   (1, 2-3, 4-7, 8-15, ... stored entries); empty rows hold no coordinates.
2. Each regime gets a share of the budget proportional to the entries it holds, after
   a guaranteed floor of `max_nonzeros // (2 * number of regimes)` entries (or all of
   its entries, when it holds fewer), so a regime with few entries - typically the
   longest rows - is never sampled away (as long as the budget is at least twice the
   number of regimes, which are at most about 30).
3. Inside a regime, whose entries are listed in (row, column) order, every s-th entry
   is taken from a random offset (s = entries / share). This spreads the sample evenly
   over the regime's rows and, inside a long row, over its columns.

The random offsets come from `numpy.random.default_rng(seed)`, so a sample is
deterministic per seed. The coordinates come back sorted by (row, column).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse


def stored_coordinates(
    matrix: scipy.sparse.spmatrix | scipy.sparse.sparray,
) -> tuple[np.ndarray, np.ndarray]:
    """All stored coordinates of `matrix` (duplicates summed), sorted by (row, column).

    Returns `(rows, cols)`, two int64 arrays of length nnz.
    """
    csr = scipy.sparse.csr_array(matrix, copy=True)
    csr.sum_duplicates()  # also sorts the column indices of every row
    row_lengths = np.diff(csr.indptr)
    rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), row_lengths)
    return rows, csr.indices.astype(np.int64)


def sample_coordinates(
    matrix: scipy.sparse.spmatrix | scipy.sparse.sparray, max_nonzeros: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_nonzeros` stored coordinates of `matrix`, chosen as described above.

    Returns `(rows, cols)`, two int64 arrays sorted by (row, column). When the matrix
    stores at most `max_nonzeros` entries, all of them are returned.
    """
    if max_nonzeros < 1:
        raise ValueError(f"max_nonzeros must be at least 1, got {max_nonzeros}")
    rows, cols = stored_coordinates(matrix)
    if len(rows) <= max_nonzeros:
        return rows, cols

    row_lengths = np.bincount(rows, minlength=matrix.shape[0])
    regime_of_entry = np.floor(np.log2(row_lengths[rows])).astype(np.int64)
    regimes, entries_per_regime = np.unique(regime_of_entry, return_counts=True)
    shares = _regime_shares(entries_per_regime, max_nonzeros)

    rng = np.random.default_rng(seed)
    chosen = []
    for regime, share in zip(regimes, shares, strict=True):
        entries = np.flatnonzero(regime_of_entry == regime)  # in (row, column) order
        chosen.append(entries[_systematic_positions(len(entries), int(share), rng)])
    picked = np.sort(np.concatenate(chosen))
    return rows[picked], cols[picked]


def _regime_shares(entries_per_regime: np.ndarray, budget: int) -> np.ndarray:
    """Entries to take from each regime: a floor each, the rest proportional to size.

    `entries_per_regime` sums to more than `budget`; the shares sum to at most `budget`
    and never exceed a regime's entries.
    """
    floor = budget // (2 * len(entries_per_regime))
    base = np.minimum(entries_per_regime, floor)
    remaining_budget = budget - base.sum()
    remaining_entries = entries_per_regime - base
    extra = remaining_budget * remaining_entries // remaining_entries.sum()
    return base + extra


def _systematic_positions(population: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` distinct positions in `range(population)`, evenly spaced from a random start."""
    if count == 0:
        return np.empty(0, dtype=np.int64)
    stride = population / count
    start = rng.uniform(0.0, stride)
    return np.floor(start + stride * np.arange(count)).astype(np.int64)
