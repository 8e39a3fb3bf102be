"""Host-side conversion of a CSR matrix into each storage format of the kernel ABI.

Each converter takes a canonical CSR matrix (float32 values, int32 indices, sorted,
no duplicates) and returns a `FormatData`: the device arrays in the entry kernel's
argument order and the integer sizes its launch expressions may use. Everything is
vectorised numpy. `convert` also times the conversion: that is the preprocessing
cost a user pays once per matrix, reported next to the kernel time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparserl.abi import FORMATS, MAX_U16_COLUMNS, ABIError, bsr_block_shape, parse_format_params
from sparserl.features import run_starts, sorted_csr

INDEX = np.int32
SHORT_INDEX = np.uint16  # csr_u16's column indices
VALUE = np.float32


@dataclass
class FormatData:
    """A matrix in one ABI storage format.

    arrays: name -> 1-D numpy array, in the entry kernel's argument order.
    sizes: the scalars passed to the kernel (in order) plus `nnz` (and `nnzb` for bsr).
    dense_rows: rows the dense input (x or B) is allocated with; equals n except for
        bsr, where it is padded with zeros to a multiple of the block width.
    seconds: host time the conversion took.
    """

    format: str
    params: dict[str, str]
    arrays: dict[str, np.ndarray]
    sizes: dict[str, int]
    dense_rows: int
    seconds: float = 0.0

    def scalar_args(self) -> list[int]:
        """The entry kernel's trailing int arguments, in order (without N)."""
        return [self.sizes[name] for name in FORMATS[self.format].scalars]

    @property
    def nbytes(self) -> int:
        """Bytes of all format arrays together."""
        return sum(array.nbytes for array in self.arrays.values())


def canonical_csr(A) -> sp.csr_matrix:
    """Return `A` as CSR with float32 values, int32 indices, sorted and without duplicates."""
    csr = sorted_csr(A)
    return sp.csr_matrix(
        (csr.data.astype(VALUE), csr.indices.astype(INDEX), csr.indptr.astype(INDEX)),
        shape=csr.shape,
    )


def convert(A, format: str, params: str | dict[str, str] = "-") -> FormatData:
    """Convert `A` (any scipy sparse matrix) into `format` with `params` ('k=v ...' or a dict)."""
    if format not in _CONVERTERS:
        raise ABIError(f"unknown format '{format}' (known: {', '.join(_CONVERTERS)})")
    if isinstance(params, str):
        params = parse_format_params(format, params)
    start = time.perf_counter()
    csr = canonical_csr(A)
    data = _CONVERTERS[format](csr, params)
    data.seconds = time.perf_counter() - start
    return data


EXACT_FLOAT32_INTEGERS = 1 << 24  # float32 holds every integer up to this exactly
PROBE_LOW_BITS = 12  # past it, entry numbers go through two probes of 12 bits and the rest


@dataclass
class ValueLayout:
    """One pattern in one format, with where each stored value goes: more value sets on
    the same pattern then cost a gather instead of a conversion (the harness checks every
    kernel on three).

    structure: the pattern converted; its value arrays are refilled by `fill`.
    slots: name of each value (float32) array -> int32 array of its length: the entry (in
        canonical CSR order) each element holds, or -1 for padding.
    """

    structure: FormatData
    slots: dict[str, np.ndarray]

    @classmethod
    def of(cls, A, format: str, params: str | dict[str, str] = "-") -> ValueLayout:
        """Convert A's pattern with the entry numbers as values, which every converter only
        moves: as k + 1 when they are exact in float32, else as their low PROBE_LOW_BITS
        bits + 1 and the rest + 1, converted twice (padding stays 0 in both)."""
        csr = canonical_csr(A)
        entries = np.arange(csr.nnz, dtype=np.int64)
        if csr.nnz < EXACT_FLOAT32_INTEGERS:
            structure = _convert_with_values(csr, entries + 1, format, params)
            slots = {name: array.astype(INDEX) - 1 for name, array in _values(structure)}
        else:
            structure = _convert_with_values(csr, (entries >> PROBE_LOW_BITS) + 1, format, params)
            low_mask = (1 << PROBE_LOW_BITS) - 1
            low = _convert_with_values(csr, (entries & low_mask) + 1, format, params)
            slots = {
                name: (
                    np.where(high > 0, (high.astype(np.int64) - 1) << PROBE_LOW_BITS, 0)
                    + low.arrays[name].astype(np.int64)
                    - 1
                ).astype(INDEX)
                for name, high in _values(structure)
            }
        return cls(structure, slots)

    def fill(self, values: np.ndarray) -> FormatData:
        """The format's arrays holding `values` (float32, one per stored entry of the
        pattern, in canonical CSR order) and zeros in the padding."""
        nnz = self.structure.sizes["nnz"]
        if len(values) != nnz:
            raise ValueError(f"the layout's pattern stores {nnz} entries; got {len(values)} values")
        values = np.append(np.asarray(values, dtype=VALUE), VALUE(0))  # index -1: padding
        arrays = {
            name: values[self.slots[name]] if name in self.slots else array
            for name, array in self.structure.arrays.items()
        }
        return FormatData(
            self.structure.format,
            self.structure.params,
            arrays,
            self.structure.sizes,
            self.structure.dense_rows,
        )


def _convert_with_values(csr: sp.csr_matrix, values: np.ndarray, format: str, params) -> FormatData:
    """`convert` of csr's pattern holding `values` instead of its own."""
    probe = sp.csr_matrix((values.astype(VALUE), csr.indices, csr.indptr), shape=csr.shape)
    return convert(probe, format, params)


def _values(data: FormatData) -> list[tuple[str, np.ndarray]]:
    """The (name, array) pairs of the value arrays of a format (the float32 ones)."""
    return [(name, array) for name, array in data.arrays.items() if array.dtype == VALUE]


def _sizes(csr: sp.csr_matrix, **extra: int) -> dict[str, int]:
    m, n = csr.shape
    return {"m": m, "n": n, "nnz": csr.nnz, **extra}


def _row_lengths(csr: sp.csr_matrix) -> np.ndarray:
    return np.diff(csr.indptr).astype(np.int64)


def _entry_rows(csr: sp.csr_matrix) -> np.ndarray:
    """The row of each stored entry, in storage order, int64."""
    return np.repeat(np.arange(csr.shape[0], dtype=np.int64), _row_lengths(csr))


def _to_csr(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    row_ptr, col_idx, values = _csr_arrays(csr, params)
    arrays = {"row_ptr": row_ptr, "col_idx": col_idx, "values": values}
    return FormatData("csr", params, arrays, _sizes(csr), csr.shape[1])


def _to_csr_u16(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    n = csr.shape[1]
    if n > MAX_U16_COLUMNS:
        raise ABIError(
            f"format 'csr_u16' stores column indices in 16 bits: at most {MAX_U16_COLUMNS} "
            f"columns, the matrix has {n}"
        )
    row_ptr, col_idx, values = _csr_arrays(csr, params)
    arrays = {"row_ptr": row_ptr, "col_idx": col_idx.astype(SHORT_INDEX), "values": values}
    return FormatData("csr_u16", params, arrays, _sizes(csr), n)


def _csr_arrays(
    csr: sp.csr_matrix, params: dict[str, str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_ptr, col_idx, values) of csr, or with pad_rows=1 of its rows padded to the
    longest one: row r holds slots r*width .. (r+1)*width - 1, its entries first, then
    (column 0, value 0) padding, so row_ptr[r] = r*width. `nnz` stays the matrix's."""
    if not _flag(params, "pad_rows"):
        return csr.indptr, csr.indices, csr.data
    m = csr.shape[0]
    width = int(_row_lengths(csr).max()) if m else 0
    if m * width > np.iinfo(INDEX).max:
        raise ABIError(
            f"pad_rows=1 would store {m} rows x {width} slots, past the int32 row pointer"
        )
    slots = _entry_rows(csr) * width + _slot_positions(csr)
    col_idx = np.zeros(m * width, dtype=INDEX)
    values = np.zeros(m * width, dtype=VALUE)
    col_idx[slots] = csr.indices
    values[slots] = csr.data
    return np.arange(m + 1, dtype=INDEX) * width, col_idx, values


def row_groups(row_ptr: np.ndarray, block_nnz: int) -> np.ndarray:
    """First row of each group of consecutive rows holding at most `block_nnz` entries.

    A row longer than `block_nnz` forms a group of its own. Returns an int32 array of
    length n_groups + 1 whose last element is m. Greedy: where a group starting at each
    row would end is found for all rows at once, then followed from row 0.
    """
    m = len(row_ptr) - 1
    row_ptr = np.asarray(row_ptr, dtype=np.int64)
    # Last row end within the budget, and at least one row per group.
    ends = np.searchsorted(row_ptr, row_ptr[:-1] + block_nnz, side="right") - 1
    group_end = np.minimum(np.maximum(ends, np.arange(1, m + 1)), m).tolist()
    starts = [0]
    while starts[-1] < m:
        starts.append(group_end[starts[-1]])
    return np.asarray(starts, dtype=INDEX)


def _to_csr_rowblocks(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    block_nnz = _int_at_least(params, "block_nnz")
    blocks = row_groups(csr.indptr, block_nnz)
    arrays = {
        "row_ptr": csr.indptr,
        "col_idx": csr.indices,
        "values": csr.data,
        "row_blocks": blocks,
    }
    sizes = _sizes(csr, n_row_blocks=len(blocks) - 1)
    return FormatData("csr_rowblocks", params, arrays, sizes, csr.shape[1])


def _to_coo(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    arrays = {"row_idx": _entry_rows(csr).astype(INDEX), "col_idx": csr.indices, "values": csr.data}
    return FormatData("coo", params, arrays, _sizes(csr), csr.shape[1])


def _to_coo_windowed(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    window = _int_at_least(params, "window")
    if window % 32:
        raise ABIError(f"format parameter window={window} must be a multiple of 32 (a warp)")
    m = csr.shape[0]
    lengths = _row_lengths(csr)
    # An empty row keeps one slot (column 0, value 0.0) so that a kernel writes its 0.
    slots_of_row = np.maximum(lengths, 1)
    slot_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(slots_of_row, out=slot_ptr[1:])
    groups = row_groups(slot_ptr, window).astype(np.int64)
    # A group is one window, or ceil(length / window) windows for a row longer than one.
    group_slots = slot_ptr[groups[1:]] - slot_ptr[groups[:-1]]
    group_window = np.zeros(len(group_slots) + 1, dtype=np.int64)
    np.cumsum(-(-group_slots // window), out=group_window[1:])
    group_of_row = np.repeat(np.arange(len(group_slots)), np.diff(groups))
    first_slot_of_row = (
        group_window[group_of_row] * window + slot_ptr[:m] - slot_ptr[groups[group_of_row]]
    )
    n_windows = int(group_window[-1])
    row_idx = np.full(n_windows * window, -1, dtype=INDEX)
    col_idx = np.zeros(n_windows * window, dtype=INDEX)
    values = np.zeros(n_windows * window, dtype=VALUE)
    row_idx[first_slot_of_row] = np.arange(m)  # also marks the slot of each empty row
    entry_slots = np.repeat(first_slot_of_row, lengths) + _slot_positions(csr)
    row_idx[entry_slots] = _entry_rows(csr)
    col_idx[entry_slots] = csr.indices
    values[entry_slots] = csr.data
    arrays = {"row_idx": row_idx, "col_idx": col_idx, "values": values}
    sizes = _sizes(csr, n_windows=n_windows)
    return FormatData("coo_windowed", params, arrays, sizes, csr.shape[1])


def _to_column_tiles(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    tile_rows, tile_columns = _int_at_least(params, "rows"), _int_at_least(params, "columns")
    m = csr.shape[0]
    rows = _entry_rows(csr)
    column_range = csr.indices.astype(np.int64) // tile_columns
    # Column range first, then row (rows // tile_rows, the row group, follows rows): the
    # entries are in row order already, and a stable sort keeps each row's columns ascending.
    order = np.argsort(column_range, kind="stable")
    rows, column_range = rows[order], column_range[order]
    segment_starts = run_starts(column_range * m + rows)
    first_rows = rows[segment_starts]
    tile_key = column_range[segment_starts] * (m // tile_rows + 1) + first_rows // tile_rows
    tile_starts = run_starts(tile_key)
    arrays = {
        "tile_ptr": np.append(tile_starts, len(segment_starts)).astype(INDEX),
        "tile_column": (column_range[segment_starts[tile_starts]] * tile_columns).astype(INDEX),
        "segment_row": first_rows.astype(INDEX),
        "segment_ptr": np.append(segment_starts, csr.nnz).astype(INDEX),
        "col_idx": csr.indices[order],
        "values": csr.data[order],
    }
    sizes = _sizes(csr, n_tiles=len(tile_starts))
    return FormatData("column_tiles", params, arrays, sizes, csr.shape[1])


MAX_PANEL_TILE_ROWS = 1 << 15  # a local row fits the upper 15 bits of local_idx (kept >= 0)
MAX_PANEL_COLUMNS = 1 << 16  # a local column fits its lower 16 bits


def _to_coo_panels(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    tile_rows, panel_columns = _int_at_least(params, "rows"), _int_at_least(params, "columns")
    chunk = _int_at_least(params, "chunk")
    column_sorted = _flag(params, "column_sorted")
    long_rows = _int_at_least(params, "long_rows", minimum=0)
    if tile_rows > MAX_PANEL_TILE_ROWS or panel_columns > MAX_PANEL_COLUMNS:
        raise ABIError(
            f"coo_panels needs rows <= {MAX_PANEL_TILE_ROWS} and columns <= "
            f"{MAX_PANEL_COLUMNS} (local indices are packed in 15 + 16 bits), got "
            f"rows={tile_rows} columns={panel_columns}"
        )
    m = csr.shape[0]
    rows = _entry_rows(csr)
    cols = csr.indices.astype(np.int64)
    n_row_groups = m // tile_rows + 1
    panel = cols // panel_columns
    tile = panel * n_row_groups + rows // tile_rows  # panel, then row group
    # A tile's long rows come after its other entries: segment = 2 * tile + (row is long).
    segment = 2 * tile + _in_long_runs(rows, panel, long_rows)
    # The entries are in (row, column) order already, and the sort is stable: keyed by the
    # segment alone they stay in row order, keyed by (segment, column) in column, then row
    # order (one key: 1.2 s on 1e7 entries, where np.lexsort of two keys took 3 s). Long
    # rows stay in row order either way.
    key = segment
    if column_sorted:
        key = segment * panel_columns + np.where(segment % 2 == 0, cols % panel_columns, 0)
    order = np.argsort(key, kind="stable")
    rows, cols, segment = rows[order], cols[order], segment[order]
    tile = segment // 2
    segment_starts = run_starts(segment)
    segment_ends = np.append(segment_starts[1:], csr.nnz)
    # Each segment's entries cut into chunks of at most `chunk`: a chunk starts at every
    # segment start and every `chunk` entries after it.
    chunks_per_segment = -(-(segment_ends - segment_starts) // chunk)
    chunk_starts = np.repeat(segment_starts, chunks_per_segment) + chunk * _ranks_within(
        chunks_per_segment
    )
    tile_row = (tile % n_row_groups) * tile_rows  # first row and column of each entry's tile
    tile_column = (tile // n_row_groups) * panel_columns
    first_rows = tile_row[chunk_starts]
    long_chunk = segment[chunk_starts] % 2 == 1
    arrays = {
        "chunk_ptr": np.append(chunk_starts, csr.nnz).astype(INDEX),
        "chunk_row": np.where(long_chunk, ~first_rows, first_rows).astype(INDEX),
        "chunk_column": tile_column[chunk_starts].astype(INDEX),
        "local_idx": (((rows - tile_row) << 16) | (cols - tile_column)).astype(INDEX),
        "values": csr.data[order],
    }
    sizes = _sizes(csr, n_chunks=len(chunk_starts))
    return FormatData("coo_panels", params, arrays, sizes, csr.shape[1])


def _in_long_runs(rows: np.ndarray, panels: np.ndarray, long_rows: int) -> np.ndarray:
    """1 for each entry (in CSR order) whose row holds at least `long_rows` entries in the
    entry's column panel, else 0 (all 0 when long_rows is 0); int64. A row's entries in one
    panel are consecutive, since columns ascend within a row."""
    if long_rows == 0 or len(rows) == 0:
        return np.zeros(len(rows), dtype=np.int64)
    starts = run_starts(rows * (int(panels.max()) + 1) + panels)
    lengths = np.diff(np.append(starts, len(rows)))
    return np.repeat((lengths >= long_rows).astype(np.int64), lengths)


def _ranks_within(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., c-1 for each c in `counts`, concatenated (int64)."""
    counts = counts.astype(np.int64)
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )


def _slot_positions(csr: sp.csr_matrix) -> np.ndarray:
    """Position of each stored entry inside its row (0, 1, 2, ... per row), int64."""
    return _ranks_within(_row_lengths(csr))


def _to_ell(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    m = csr.shape[0]
    lengths = _row_lengths(csr)
    width = int(lengths.max()) if m else 0
    slots = _slot_positions(csr) * m + _entry_rows(csr)  # column-major: entry k of row r at k*m + r
    col_idx = np.zeros(width * m, dtype=INDEX)
    values = np.zeros(width * m, dtype=VALUE)
    col_idx[slots] = csr.indices
    values[slots] = csr.data
    arrays = {"col_idx": col_idx, "values": values}
    return FormatData("ell", params, arrays, _sizes(csr, width=width), csr.shape[1])


def _to_hyb(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    width = _int_at_least(params, "width")
    lengths = _row_lengths(csr)
    is_long = lengths > width
    ell_rows = np.flatnonzero(~is_long)  # ascending, empty rows included
    long_rows = np.flatnonzero(is_long)
    # ELL part: slot row s holds row ell_rows[s]; entry k of it sits at k*n_ell_rows + s.
    slot_of_row = np.zeros(len(lengths), dtype=np.int64)  # its row in its part's slab
    slot_of_row[ell_rows] = np.arange(len(ell_rows))
    slot_of_row[long_rows] = np.arange(len(long_rows))
    entry_rows = _entry_rows(csr)
    in_ell = ~is_long[entry_rows]
    positions = _slot_positions(csr)
    slots = positions[in_ell] * len(ell_rows) + slot_of_row[entry_rows[in_ell]]
    ell_col_idx = np.zeros(width * len(ell_rows), dtype=INDEX)
    ell_values = np.zeros(width * len(ell_rows), dtype=VALUE)
    ell_col_idx[slots] = csr.indices[in_ell]
    ell_values[slots] = csr.data[in_ell]
    # Long part: a row-major slab, long row k's entry j at k*long_width + j, every row
    # padded to the longest (column 0, value 0), so a row's start needs no pointer read.
    long_width = int(lengths[long_rows].max()) if len(long_rows) else 0
    long_slots = slot_of_row[entry_rows[~in_ell]] * long_width + positions[~in_ell]
    long_col_idx = np.zeros(long_width * len(long_rows), dtype=INDEX)
    long_values = np.zeros(long_width * len(long_rows), dtype=VALUE)
    long_col_idx[long_slots] = csr.indices[~in_ell]
    long_values[long_slots] = csr.data[~in_ell]
    arrays = {
        "ell_row": ell_rows.astype(INDEX),
        "ell_col_idx": ell_col_idx,
        "ell_values": ell_values,
        "long_row": long_rows.astype(INDEX),
        "long_col_idx": long_col_idx,
        "long_values": long_values,
    }
    sizes = _sizes(csr, n_ell_rows=len(ell_rows), n_long_rows=len(long_rows), long_width=long_width)
    return FormatData("hyb", params, arrays, sizes, csr.shape[1])


def sell_row_order(lengths: np.ndarray, sigma: int) -> np.ndarray:
    """Rows sorted by length, longest first, inside consecutive windows of `sigma` rows.

    Stable, so rows of equal length keep their order. Returns int64 row indices.
    """
    m = len(lengths)
    window = np.arange(m, dtype=np.int64) // sigma
    return np.lexsort((np.arange(m), -lengths, window))


def _to_sell(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    chunk, sigma = _int_at_least(params, "slice"), _int_at_least(params, "sigma")
    m = csr.shape[0]
    lengths = _row_lengths(csr)
    n_slices = -(-m // chunk)
    order = sell_row_order(lengths, sigma)
    row_perm = np.full(n_slices * chunk, -1, dtype=INDEX)
    row_perm[:m] = order
    lane_lengths = np.zeros(n_slices * chunk, dtype=np.int64)
    lane_lengths[:m] = lengths[order]
    widths = lane_lengths.reshape(n_slices, chunk).max(axis=1)
    slice_ptr = np.zeros(n_slices + 1, dtype=np.int64)
    np.cumsum(widths * chunk, out=slice_ptr[1:])
    # Each entry goes to slice_ptr[s] + k*C + lane, where the row sits at position s*C + lane.
    position_of_row = np.empty(m, dtype=np.int64)
    position_of_row[order] = np.arange(m)
    entry_position = position_of_row[_entry_rows(csr)]
    slots = (
        slice_ptr[entry_position // chunk] + _slot_positions(csr) * chunk + entry_position % chunk
    )
    total = int(slice_ptr[-1])
    col_idx = np.zeros(total, dtype=INDEX)
    values = np.zeros(total, dtype=VALUE)
    col_idx[slots] = csr.indices
    values[slots] = csr.data
    arrays = {
        "slice_ptr": slice_ptr.astype(INDEX),
        "row_perm": row_perm,
        "col_idx": col_idx,
        "values": values,
    }
    return FormatData("sell", params, arrays, _sizes(csr, n_slices=n_slices), csr.shape[1])


def _to_dia(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    m = csr.shape[0]
    rows = _entry_rows(csr)
    diagonal_of_entry = csr.indices.astype(np.int64) - rows
    offsets, which = np.unique(diagonal_of_entry, return_inverse=True)
    data = np.zeros(len(offsets) * m, dtype=VALUE)
    data[which * m + rows] = csr.data
    arrays = {"offsets": offsets.astype(INDEX), "data": data}
    return FormatData("dia", params, arrays, _sizes(csr, n_diags=len(offsets)), csr.shape[1])


def _to_bsr(csr: sp.csr_matrix, params: dict[str, str]) -> FormatData:
    block_rows, block_cols = bsr_block_shape(params)
    m, n = csr.shape
    padded = (-(-m // block_rows) * block_rows, -(-n // block_cols) * block_cols)
    grown = sp.csr_matrix((csr.data, csr.indices, _pad_indptr(csr.indptr, padded[0])), shape=padded)
    bsr = grown.tobsr(blocksize=(block_rows, block_cols))
    bsr.sort_indices()
    arrays = {
        "block_row_ptr": bsr.indptr.astype(INDEX),
        "block_col_idx": bsr.indices.astype(INDEX),
        "values": np.ascontiguousarray(bsr.data, dtype=VALUE).ravel(),
    }
    sizes = _sizes(csr, n_block_rows=padded[0] // block_rows, nnzb=len(bsr.indices))
    return FormatData("bsr", params, arrays, sizes, padded[1])


def _pad_indptr(indptr: np.ndarray, rows: int) -> np.ndarray:
    """Extend a row pointer with empty rows up to `rows` rows."""
    extra = rows + 1 - len(indptr)
    return np.concatenate([indptr, np.full(extra, indptr[-1], dtype=indptr.dtype)])


def _flag(params: dict[str, str], key: str) -> bool:
    value = params[key]
    if value not in ("0", "1"):
        raise ABIError(f"format parameter {key}='{value}' must be 0 or 1")
    return value == "1"


def _int_at_least(params: dict[str, str], key: str, minimum: int = 1) -> int:
    """The integer parameter `key`, at least `minimum` (1 unless said otherwise)."""
    value = params[key]
    if not value.isdigit() or int(value) < minimum:
        raise ABIError(f"format parameter {key}='{value}' must be an integer >= {minimum}")
    return int(value)


_CONVERTERS: dict[str, Callable[[sp.csr_matrix, dict[str, str]], FormatData]] = {
    "csr": _to_csr,
    "csr_u16": _to_csr_u16,
    "csr_rowblocks": _to_csr_rowblocks,
    "coo": _to_coo,
    "coo_windowed": _to_coo_windowed,
    "column_tiles": _to_column_tiles,
    "coo_panels": _to_coo_panels,
    "ell": _to_ell,
    "hyb": _to_hyb,
    "sell": _to_sell,
    "dia": _to_dia,
    "bsr": _to_bsr,
}
