"""ELL and SELL-C-sigma SpMV families: padded column-major slabs, one thread per row.

- ell: entry k of row r sits at k*m + r, so consecutive threads (rows) read consecutive
  addresses. Pays when rows have nearly equal lengths (high `ell_fill`); the padding is
  read like real entries (column 0, value 0), so the loop has no branch. A baked width
  gives a loop of fixed trip count that the compiler unrolls.
- sell: the same within slices of 32 rows (one warp per slice, one lane per row), each
  slice only as wide as its longest row after sorting rows by length inside windows of
  sigma rows. Pays on uneven rows where ELL's padding would be too large.
"""

from __future__ import annotations

from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    entry_signature,
    fill,
    header,
    kernel,
    size_bindings,
    unroll_pragma,
)

MIN_ELL_FILL = 0.1  # below this the padded slab is over 10x the stored entries
SELL_SLICE = 32  # rows per slice: one warp, one lane per row
SELL_SIGMA = 256  # rows per sorting window


def render_ell(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size = params["block_size"]
    body = fill(
        """
        $sizes
        const int row = blockIdx.x * kBlockSize + threadIdx.x;
        if (row >= num_rows) return;
        float sum = 0.0f;
        size_t slot = row;  // entry k of this row sits at k * num_rows + row
        $unroll
        for (int k = 0; k < ell_width; ++k) {
            sum += values[slot] * __ldg(&x[col_idx[slot]]);
            slot += num_rows;
        }
        y[row] = sum;
        """,
        sizes=size_bindings(
            ("num_rows", "m", constants.m), ("ell_width", "width", constants.max_row_length)
        ),
        unroll=unroll_pragma(constants.max_row_length),
    )
    return kernel(
        header=header(op="spmv", format="ell", grid=f"ceil_div(m, {block_size})", block=block_size),
        strategy=ELL.strategy,
        preamble=f"constexpr int kBlockSize = {block_size};  // threads per block, one row each",
        signature=entry_signature("spmv", "ell", block_size),
        body=body,
    )


def render_sell(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size = params["block_size"]
    preamble = fill(
        """
        constexpr int kBlockSize = $block_size;
        constexpr int kSliceHeight = $slice;  // the format's C: rows per slice, one lane each
        """,
        block_size=block_size,
        slice=SELL_SLICE,
    )
    body = """\
const int thread = blockIdx.x * kBlockSize + threadIdx.x;
const int slice = thread / kSliceHeight;
const int lane = thread % kSliceHeight;
if (slice >= n_slices) return;
// Slice `slice` is stored column-major: entry k of lane l at slice_start + k*C + l.
const int slice_start = slice_ptr[slice];
const int slice_width = (slice_ptr[slice + 1] - slice_start) / kSliceHeight;
float sum = 0.0f;
int slot = slice_start + lane;
for (int k = 0; k < slice_width; ++k) {
    sum += values[slot] * __ldg(&x[col_idx[slot]]);
    slot += kSliceHeight;
}
const int row = row_perm[thread];  // the original row of this lane; -1 for padding lanes
if (row >= 0) y[row] = sum;"""
    return kernel(
        header=header(
            op="spmv",
            format="sell",
            params=SELL.params,
            grid=f"ceil_div(n_slices * {SELL_SLICE}, {block_size})",
            block=block_size,
        ),
        strategy=SELL.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "sell", block_size),
        body=body,
    )


def ell_pays(features) -> bool:
    return feature(features, "ell_fill") >= MIN_ELL_FILL


ELL = KernelFamily(
    name="ell",
    op="spmv",
    format="ell",
    params="-",
    space={"block_size": (128, 256)},
    strategy="ELL: one thread per row over a column-major padded slab, so a warp's loads "
    "are coalesced and the loop has no branch. Pays when rows have nearly equal lengths.",
    renderer=render_ell,
    bakes=("m", "max_row_length"),
    predicate=ell_pays,
)

SELL = KernelFamily(
    name="sell",
    op="spmv",
    format="sell",
    params=f"slice={SELL_SLICE} sigma={SELL_SIGMA}",
    space={"block_size": (128, 256)},
    strategy="SELL-C-sigma with C = 32: one warp per slice, one lane per row, each slice as "
    "wide as its longest row after sorting rows by length in windows of sigma. Pays on "
    "uneven rows where ELL padding is too large.",
    renderer=render_sell,
)

FAMILIES = (ELL, SELL)
