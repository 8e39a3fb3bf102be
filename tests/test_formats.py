"""Format conversions checked against scipy: each layout is multiplied by an independent
numpy reading of docs/kernel_abi.md and must give scipy's A @ x."""

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from sparserl import formats
from sparserl.abi import FORMATS, ABIError, array_type
from sparserl.formats import ValueLayout, canonical_csr, convert, row_groups


def random_matrix(m, n, density, seed, long_rows=0):
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=density, format="lil", random_state=rng, dtype=np.float32)
    for r in rng.choice(m, size=long_rows, replace=False):
        A[r, :] = rng.standard_normal(n).astype(np.float32)
    return sp.csr_matrix(A)


def multiply_csr(d, x):
    a = d.arrays
    y = np.zeros(d.sizes["m"])
    for r in range(d.sizes["m"]):
        s, e = a["row_ptr"][r], a["row_ptr"][r + 1]
        y[r] = np.dot(a["values"][s:e], x[a["col_idx"][s:e]])
    return y


def multiply_padded_csr(d, x):
    """pad_rows=1: every row holds the longest row's number of slots, its entries first
    (ascending columns), then (column 0, value 0) padding."""
    a, m = d.arrays, d.sizes["m"]
    width = len(a["values"]) // m
    np.testing.assert_array_equal(a["row_ptr"], np.arange(m + 1) * width)
    stored = (a["values"] != 0).reshape(m, width)
    assert stored.sum() == d.sizes["nnz"] and stored.any(axis=0)[-1]
    assert all(np.all(row[:-1] >= row[1:]) for row in stored)  # entries, then padding
    assert not np.any(a["col_idx"][~stored.ravel()])
    return multiply_csr(d, x)


def multiply_coo(d, x):
    a = d.arrays
    y = np.zeros(d.sizes["m"])
    np.add.at(y, a["row_idx"], a["values"] * x[a["col_idx"]])
    return y


def multiply_ell(d, x):
    m, width = d.sizes["m"], d.sizes["width"]
    cols = d.arrays["col_idx"].reshape(width, m)
    vals = d.arrays["values"].reshape(width, m)
    return (vals * x[cols]).sum(axis=0)


def multiply_sell(d, x):
    a, chunk = d.arrays, int(d.params["slice"])
    y = np.zeros(d.sizes["m"])
    for s in range(d.sizes["n_slices"]):
        start, end = a["slice_ptr"][s], a["slice_ptr"][s + 1]
        width = (end - start) // chunk
        for lane in range(chunk):
            row = a["row_perm"][s * chunk + lane]
            slots = start + np.arange(width) * chunk + lane
            if row >= 0:
                y[row] = np.dot(a["values"][slots], x[a["col_idx"][slots]])
            else:
                assert not a["values"][slots].any()
    return y


def multiply_dia(d, x):
    m, n = d.sizes["m"], d.sizes["n"]
    y = np.zeros(m)
    for k, offset in enumerate(d.arrays["offsets"]):
        for r in range(m):
            c = r + offset
            value = d.arrays["data"][k * m + r]
            if 0 <= c < n:
                y[r] += value * x[c]
            else:
                assert value == 0
    return y


def multiply_bsr(d, x):
    a = d.arrays
    br, bc = (int(v) for v in d.params["block"].split("x"))
    xp = np.zeros(d.dense_rows)
    xp[: len(x)] = x
    y = np.zeros(d.sizes["n_block_rows"] * br)
    blocks = a["values"].reshape(-1, br, bc)
    for i in range(d.sizes["n_block_rows"]):
        for k in range(a["block_row_ptr"][i], a["block_row_ptr"][i + 1]):
            j = a["block_col_idx"][k]
            y[i * br : (i + 1) * br] += blocks[k] @ xp[j * bc : (j + 1) * bc]
    return y[: d.sizes["m"]]


def multiply_coo_windowed(d, x):
    """Checks the window layout too: whole rows per window, long rows from a window start."""
    window = int(d.params["window"])
    rows = d.arrays["row_idx"].reshape(-1, window)
    assert len(rows) == d.sizes["n_windows"]
    for before, after in zip(rows[:-1], rows[1:], strict=True):
        if after[0] >= 0 and after[0] == before[-1]:  # a long row goes on: it fills both
            assert (before == after[0]).all()
    real = d.arrays["row_idx"] >= 0
    assert set(d.arrays["row_idx"][real]) == set(range(d.sizes["m"]))  # empty rows too
    assert not d.arrays["values"][~real].any() and not d.arrays["col_idx"][~real].any()
    y = np.zeros(d.sizes["m"])
    np.add.at(y, d.arrays["row_idx"][real], d.arrays["values"][real] * x[d.arrays["col_idx"][real]])
    return y


def multiply_column_tiles(d, x):
    """Checks the tile layout too: a tile's segments lie in one row group and one column
    range, and a segment is one row's entries there."""
    a, rows, columns = d.arrays, int(d.params["rows"]), int(d.params["columns"])
    y = np.zeros(d.sizes["m"])
    assert len(a["tile_ptr"]) == d.sizes["n_tiles"] + 1 and a["segment_ptr"][-1] == d.sizes["nnz"]
    for t in range(d.sizes["n_tiles"]):
        segments = range(a["tile_ptr"][t], a["tile_ptr"][t + 1])
        first_column = a["tile_column"][t]
        assert first_column % columns == 0 and len(segments) > 0
        assert len({a["segment_row"][s] // rows for s in segments}) == 1
        for s in segments:
            entries = slice(a["segment_ptr"][s], a["segment_ptr"][s + 1])
            cols = a["col_idx"][entries]
            assert (
                len(cols) and (cols >= first_column).all() and (cols < first_column + columns).all()
            )
            y[a["segment_row"][s]] += np.dot(a["values"][entries], x[cols])
    return y


def multiply_hyb(d, x):
    """Checks the split too: every row is in exactly one part, the ELL slab holds the rows
    of at most `width` entries (in ascending order) and the long slab the others, each
    padded to the longest."""
    a, width = d.arrays, int(d.params["width"])
    n_ell, n_long, m = d.sizes["n_ell_rows"], d.sizes["n_long_rows"], d.sizes["m"]
    assert sorted(np.concatenate([a["ell_row"], a["long_row"]])) == list(range(m))
    assert (np.diff(a["ell_row"]) > 0).all() and len(a["ell_values"]) == width * n_ell
    long_width = d.sizes["long_width"]
    assert (long_width > width) if n_long else long_width == 0
    y = np.zeros(m)
    ell_columns = a["ell_col_idx"].reshape(width, n_ell)  # column-major: slot k, row s
    y[a["ell_row"]] = (a["ell_values"].reshape(width, n_ell) * x[ell_columns]).sum(axis=0)
    long_columns = a["long_col_idx"].reshape(n_long, long_width)  # row-major: row k, slot j
    long_values = a["long_values"].reshape(n_long, long_width)
    assert ((long_values != 0).sum(axis=1) > width).all()
    y[a["long_row"]] = (long_values * x[long_columns]).sum(axis=1)
    return y


def multiply_coo_panels(d, x):
    """Checks the tiling too: a chunk holds at most `chunk` entries of one tile (its local
    indices inside `rows` x `columns`), tiles come panel by panel, then row group by row
    group, and a tile's entries are sorted by row (or by column when column_sorted=1),
    except that with long_rows=L its rows of at least L entries come last, by row, in
    chunks marked by chunk_row = ~first row."""
    a, rows, columns = d.arrays, int(d.params["rows"]), int(d.params["columns"])
    long_rows = int(d.params["long_rows"])
    counts = np.diff(a["chunk_ptr"])
    assert len(counts) == d.sizes["n_chunks"] and a["chunk_ptr"][-1] == d.sizes["nnz"]
    assert (counts > 0).all() and (counts <= int(d.params["chunk"])).all()
    long_chunk = a["chunk_row"] < 0
    assert long_rows or not long_chunk.any()
    first_rows = np.where(long_chunk, ~a["chunk_row"], a["chunk_row"])
    assert (first_rows % rows == 0).all() and (a["chunk_column"] % columns == 0).all()
    tiles = list(zip(a["chunk_column"].tolist(), first_rows.tolist(), long_chunk, strict=True))
    assert tiles == sorted(tiles)
    local_rows, local_cols = a["local_idx"] >> 16, a["local_idx"] & 0xFFFF
    assert (local_rows < rows).all() and (local_cols < columns).all()
    entry_rows = np.repeat(first_rows, counts) + local_rows
    entry_cols = np.repeat(a["chunk_column"], counts) + local_cols
    entries_in_tile = Counter(
        zip(entry_rows.tolist(), (entry_cols // columns).tolist(), strict=True)
    )
    for start, end, is_long in zip(
        a["chunk_ptr"][:-1], a["chunk_ptr"][1:], long_chunk, strict=True
    ):
        by_column = d.params["column_sorted"] == "1" and not is_long
        inner = (local_cols, local_rows) if by_column else (local_rows, local_cols)
        keys = list(zip(inner[0][start:end].tolist(), inner[1][start:end].tolist(), strict=True))
        assert keys == sorted(keys)
        counts_here = [
            entries_in_tile[(r, c // columns)]
            for r, c in zip(entry_rows[start:end], entry_cols[start:end], strict=True)
        ]
        assert all((count >= long_rows > 0) == is_long for count in counts_here)
    y = np.zeros(d.sizes["m"])
    np.add.at(y, entry_rows, a["values"] * x[entry_cols])
    return y


MULTIPLY = {
    ("csr", "-"): multiply_csr,
    ("csr_u16", "-"): multiply_csr,
    ("csr", "pad_rows=1"): multiply_padded_csr,
    ("csr_u16", "pad_rows=1"): multiply_padded_csr,
    ("csr_rowblocks", "block_nnz=64"): multiply_csr,
    ("coo", "-"): multiply_coo,
    ("coo_windowed", "window=32"): multiply_coo_windowed,
    ("coo_windowed", "window=128"): multiply_coo_windowed,
    ("column_tiles", "rows=64 columns=128"): multiply_column_tiles,
    ("column_tiles", "rows=4 columns=8"): multiply_column_tiles,
    ("coo_panels", "rows=8 columns=16 column_sorted=0 chunk=5"): multiply_coo_panels,
    ("coo_panels", "rows=4 columns=32 column_sorted=1 chunk=3"): multiply_coo_panels,
    ("coo_panels", "rows=4 columns=32 column_sorted=1 chunk=3 long_rows=3"): multiply_coo_panels,
    ("coo_panels", "rows=8 columns=64 column_sorted=0 chunk=7 long_rows=5"): multiply_coo_panels,
    ("coo_panels", "-"): multiply_coo_panels,
    ("ell", "-"): multiply_ell,
    ("hyb", "width=16"): multiply_hyb,
    ("hyb", "width=1"): multiply_hyb,
    ("sell", "slice=32 sigma=256"): multiply_sell,
    ("sell", "slice=4 sigma=8"): multiply_sell,
    ("dia", "-"): multiply_dia,
    ("bsr", "block=4x4"): multiply_bsr,
    ("bsr", "block=2x3"): multiply_bsr,
}

MATRICES = {
    "square": lambda: random_matrix(67, 67, 0.05, 0),
    "wide_with_long_rows": lambda: random_matrix(45, 130, 0.03, 1, long_rows=2),
    "tall_with_empty_rows": lambda: random_matrix(150, 37, 0.01, 2),
    "banded": lambda: sp.diags([1.0, -2.0, 3.0], [-1, 0, 2], shape=(50, 53), format="csr"),
}


@pytest.mark.parametrize("matrix", MATRICES)
@pytest.mark.parametrize("format_and_params", MULTIPLY)
def test_layout_multiplies_like_scipy(matrix, format_and_params):
    A = MATRICES[matrix]()
    data = convert(A, *format_and_params)
    x = np.random.default_rng(7).standard_normal(A.shape[1])
    y = MULTIPLY[format_and_params](data, x)
    np.testing.assert_allclose(y, A @ x, rtol=1e-5, atol=1e-5)
    assert list(data.arrays) == [name for _, name in FORMATS[data.format].arrays]
    dtypes = {"int": np.int32, "unsigned short": np.uint16, "float": np.float32}
    for name, array in data.arrays.items():
        assert array.dtype == dtypes[array_type(data.format, name)]


@pytest.mark.parametrize("matrix", MATRICES)
@pytest.mark.parametrize("format_and_params", MULTIPLY)
@pytest.mark.parametrize("probes", ["one", "two"])
def test_value_layout_filled_equals_direct_conversion(
    matrix, format_and_params, probes, monkeypatch
):
    """A layout filled with fresh values holds exactly the arrays `convert` gives for them;
    with two probes when the entry numbers would not be exact in float32 (forced here)."""
    if probes == "two":
        monkeypatch.setattr(formats, "EXACT_FLOAT32_INTEGERS", 2)
        monkeypatch.setattr(formats, "PROBE_LOW_BITS", 3)  # high parts up to nnz / 8
    A = MATRICES[matrix]().tocsr()
    layout = ValueLayout.of(A, *format_and_params)
    rng = np.random.default_rng(3)
    for _ in range(2):
        B = A.copy()
        B.data = rng.uniform(0.25, 1.0, B.nnz).astype(np.float32)
        direct, filled = convert(B, *format_and_params), layout.fill(canonical_csr(B).data)
        assert (filled.sizes, filled.dense_rows) == (direct.sizes, direct.dense_rows)
        assert list(filled.arrays) == list(direct.arrays)
        for name, array in direct.arrays.items():
            assert filled.arrays[name].dtype == array.dtype
            np.testing.assert_array_equal(filled.arrays[name], array, err_msg=name)
    with pytest.raises(ValueError, match=f"stores {A.nnz} entries; got {A.nnz + 1} values"):
        layout.fill(np.ones(A.nnz + 1, dtype=np.float32))


def test_shared_matrix_formats(shared_data):
    from sparserl.io import load_matrix

    A = load_matrix(shared_data / "suitesparse" / "HB__bcsstk01.mtx.gz")
    x = np.random.default_rng(3).standard_normal(A.shape[1])
    for fmt, params in [("sell", "slice=32 sigma=256"), ("ell", "-"), ("bsr", "block=4x4")]:
        data = convert(A, fmt, params)
        np.testing.assert_allclose(MULTIPLY[(fmt, params)](data, x), A @ x, rtol=1e-4, atol=1e-4)
    assert convert(A, "csr").seconds >= 0


def test_row_groups_respect_budget():
    lengths = np.array([3, 5, 100, 1, 1, 1, 0, 60, 2])
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    groups = row_groups(row_ptr, 10)
    assert groups[0] == 0 and groups[-1] == len(lengths)
    for start, end in zip(groups[:-1], groups[1:], strict=False):
        assert end > start
        assert row_ptr[end] - row_ptr[start] <= 10 or end - start == 1


def test_bad_params_are_rejected():
    A = random_matrix(10, 10, 0.2, 0)
    with pytest.raises(ABIError, match="no parameter 'width'"):
        convert(A, "sell", "width=4")
    with pytest.raises(ABIError, match="4x4"):
        convert(A, "bsr", "block=4by4")
    with pytest.raises(ABIError, match="unknown format"):
        convert(A, "jds")
    with pytest.raises(ABIError, match="multiple of 32"):
        convert(A, "coo_windowed", "window=48")
    with pytest.raises(ABIError, match="rows <= 32768"):
        convert(A, "coo_panels", "rows=65536")
    with pytest.raises(ABIError, match="must be 0 or 1"):
        convert(A, "coo_panels", "column_sorted=yes")
    with pytest.raises(ABIError, match="long_rows='-1' must be an integer >= 0"):
        convert(A, "coo_panels", "long_rows=-1")
    with pytest.raises(ABIError, match="pad_rows='2' must be 0 or 1"):
        convert(A, "csr_u16", "pad_rows=2")


def test_16_bit_columns_hold_up_to_65536_columns():
    widest = sp.csr_matrix(([2.0, 3.0], ([0, 1], [0, 65_535])), shape=(2, 65_536))
    data = convert(widest, "csr_u16")
    assert data.arrays["col_idx"].tolist() == [0, 65_535]
    too_wide = sp.csr_matrix(([2.0], ([0], [65_536])), shape=(1, 65_537))
    with pytest.raises(ABIError, match="at most 65536 columns, the matrix has 65537"):
        convert(too_wide, "csr_u16")
