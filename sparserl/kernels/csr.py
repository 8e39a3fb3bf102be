"""CSR SpMV families: scalar, vector, adaptive row blocks and merge path.

- csr_scalar: one thread per row. Cheap and coalesced enough when rows are short and even.
- csr_vector: a group of 2..32 lanes per row, reduced with warp shuffles. Pays when rows
  hold tens of entries or more.
- csr_rowblocks: CSR-adaptive (Greathouse & Daga, SC'14). One block per row group of
  `csr_rowblocks`: short-row groups stage their products in shared memory and each thread
  sums a row from there; a long row gets the whole block and a block-wide reduction.
- csr_merge: merge-path (Merrill & Garland, SC'16). Every thread takes an equal share of
  the m + nnz "row ends and entries", so skewed row lengths cannot unbalance the work.
- csr_multiwarp: 1..16 warps per row, and each lane loads a batch of entries before it
  reads their x values, so several loads are in flight at once. For few, long rows
  (pruned DNN layers), where one warp per row leaves the GPU waiting on memory latency.
  csr_multiwarp_u16 is the same over csr_u16 (16-bit column indices, n <= 65536).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from sparserl.abi import MAX_U16_COLUMNS
from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    WARP_CONSTANTS,
    WARP_SIZE,
    WARPS_ROW_TOTAL,
    batched_row_sum,
    block_sum_function,
    csr_row_extent,
    entry_signature,
    fill,
    header,
    kernel,
    shuffle_fold,
    size_bindings,
    unroll_pragma,
)

ROWBLOCKS_BLOCK_NNZ = 1024  # the csr_rowblocks format parameter: entries per row group
MULTIWARP_BLOCK = 256  # csr_multiwarp's threads per block, unless one row needs more


def render_csr_scalar(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size = params["block_size"]
    body = fill(
        """
        $sizes
        const int row = blockIdx.x * kBlockSize + threadIdx.x;
        if (row >= num_rows) return;
        $extent
        float sum = 0.0f;
        $unroll
        for (int k = row_start; k < row_end; ++k) {
            sum += values[k] * __ldg(&x[col_idx[k]]);
        }
        y[row] = sum;
        """,
        sizes=size_bindings(("num_rows", "m", constants.m)),
        extent=csr_row_extent("row", constants.fixed_row_length),
        unroll=unroll_pragma(constants.fixed_row_length),
    )
    return kernel(
        header=header(op="spmv", format="csr", grid=f"ceil_div(m, {block_size})", block=block_size),
        strategy=CSR_SCALAR.strategy,
        preamble=f"constexpr int kBlockSize = {block_size};  // threads per block, one row each",
        signature=entry_signature("spmv", "csr", block_size),
        body=body,
    )


def render_csr_vector(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size, lanes = params["block_size"], params["threads_per_row"]
    rows_per_block = block_size // lanes
    body = fill(
        """
        $sizes
        const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
        const int lane = threadIdx.x % kThreadsPerRow;
        float sum = 0.0f;
        if (row < num_rows) {
            $extent
            for (int k = row_start + lane; k < row_end; k += kThreadsPerRow) {
                sum += values[k] * __ldg(&x[col_idx[k]]);
            }
        }
        // Lanes past the last row hold 0 and still shuffle: every lane must take part.
        $fold
        if (lane == 0 && row < num_rows) y[row] = sum;
        """,
        sizes=size_bindings(("num_rows", "m", constants.m)),
        extent=csr_row_extent("row", constants.fixed_row_length),
        fold=shuffle_fold(["sum"], "kThreadsPerRow / 2", "1"),
    )
    preamble = fill(
        """
        $warp
        constexpr int kThreadsPerRow = $lanes;  // lanes sharing one row
        constexpr int kRowsPerBlock = $rows;  // $block_size threads per block
        static_assert(kWarpSize % kThreadsPerRow == 0, "a row's lanes must not straddle warps");
        """,
        warp=WARP_CONSTANTS,
        lanes=lanes,
        rows=rows_per_block,
        block_size=block_size,
    )
    return kernel(
        header=header(
            op="spmv", format="csr", grid=f"ceil_div(m, {rows_per_block})", block=block_size
        ),
        strategy=CSR_VECTOR.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "csr", block_size),
        body=body,
    )


def render_csr_rowblocks(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size = params["block_size"]
    preamble = fill(
        """
        $warp
        constexpr int kBlockSize = $block_size;
        constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;
        constexpr int kBlockNnz = $block_nnz;  // the format's block_nnz: entries per row group

        $block_sum
        """,
        warp=WARP_CONSTANTS,
        block_size=block_size,
        block_nnz=ROWBLOCKS_BLOCK_NNZ,
        block_sum=block_sum_function(),
    )
    body = """\
__shared__ float products[kBlockNnz];
__shared__ float warp_totals[kWarpsPerBlock];
const int first_row = row_blocks[blockIdx.x];
const int end_row = row_blocks[blockIdx.x + 1];
const int group_start = row_ptr[first_row];
const int group_end = row_ptr[end_row];

if (end_row - first_row > 1) {
    // Several short rows, at most kBlockNnz entries in all: compute every product once,
    // coalesced, into shared memory; then each thread sums one row from there.
    for (int k = group_start + threadIdx.x; k < group_end; k += kBlockSize) {
        products[k - group_start] = values[k] * __ldg(&x[col_idx[k]]);
    }
    __syncthreads();
    for (int row = first_row + threadIdx.x; row < end_row; row += kBlockSize) {
        float sum = 0.0f;
        for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
            sum += products[k - group_start];
        }
        y[row] = sum;
    }
} else {
    // One row, possibly very long: the whole block strides over it and reduces.
    float sum = 0.0f;
    for (int k = group_start + threadIdx.x; k < group_end; k += kBlockSize) {
        sum += values[k] * __ldg(&x[col_idx[k]]);
    }
    sum = block_sum(sum, warp_totals);
    if (threadIdx.x == 0) y[first_row] = sum;
}"""
    return kernel(
        header=header(
            op="spmv",
            format="csr_rowblocks",
            params=CSR_ROWBLOCKS.params,
            grid="n_row_blocks",
            block=block_size,
        ),
        strategy=CSR_ROWBLOCKS.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "csr_rowblocks", block_size),
        body=body,
    )


def render_csr_merge(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size, items = params["block_size"], params["items_per_thread"]
    preamble = fill(
        """
        constexpr int kBlockSize = $block_size;
        constexpr int kItemsPerThread = $items;  // merge items (row ends + entries) per thread
        """,
        block_size=block_size,
        items=items,
    )
    body = fill(
        """
        $sizes
        // The merge path walks two sorted lists: row ends row_ptr[1..m] and entry indices
        // 0..nnz-1. Thread t owns the path items [t * kItemsPerThread, ... + kItemsPerThread).
        const int total_items = num_rows + num_nonzeros;
        const int thread = blockIdx.x * kBlockSize + threadIdx.x;
        const int first_item = min(thread * kItemsPerThread, total_items);
        const int end_item = min(first_item + kItemsPerThread, total_items);
        if (first_item >= end_item) return;

        // Binary search along the diagonal first_item: `row` row ends and `entry` entries
        // come before it. A row end comes before entry j when row_ptr[row + 1] <= j.
        int low = max(first_item - num_nonzeros, 0);
        int high = min(first_item, num_rows);
        while (low < high) {
            const int pivot = (low + high) / 2;
            if (row_ptr[pivot + 1] <= first_item - pivot - 1) {
                low = pivot + 1;
            } else {
                high = pivot;
            }
        }
        int row = low;
        int entry = first_item - low;

        // A row that began before this thread's share is shared with an earlier thread, and
        // so is the row still open at the end: those are added atomically (init: zero).
        bool row_is_shared = row_ptr[row] < entry;
        int open_row_first_entry = entry;
        float sum = 0.0f;
        for (int item = first_item; item < end_item; ++item) {
            if (entry < row_ptr[row + 1]) {
                sum += values[entry] * __ldg(&x[col_idx[entry]]);
                ++entry;
            } else {
                if (row_is_shared) {
                    atomicAdd(&y[row], sum);
                } else {
                    y[row] = sum;
                }
                row_is_shared = false;
                sum = 0.0f;
                ++row;
                open_row_first_entry = entry;
            }
        }
        if (row < num_rows && entry > open_row_first_entry) atomicAdd(&y[row], sum);
        """,
        sizes=size_bindings(("num_rows", "m", constants.m), ("num_nonzeros", "nnz", constants.nnz)),
    )
    return kernel(
        header=header(
            op="spmv",
            format="csr",
            grid=f"ceil_div(m + nnz, {block_size * items})",
            block=block_size,
            init="zero",
        ),
        strategy=CSR_MERGE.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "csr", block_size),
        body=body,
    )


def render_csr_multiwarp(
    params: dict[str, int],
    constants: MatrixConstants,
    format: str = "csr",
    format_params: str = "-",
) -> str:
    block_size, warps_per_row = params["block_size"], params["warps_per_row"]
    rows_per_block = block_size // (warps_per_row * WARP_SIZE)
    preamble = fill(
        """
        $warp
        constexpr int kWarpsPerRow = $warps_per_row;
        constexpr int kThreadsPerRow = kWarpsPerRow * kWarpSize;
        constexpr int kRowsPerBlock = $rows;  // $block_size threads per block
        constexpr int kLoadsInFlight = $batch;  // entries a lane loads before it reads x
        """,
        warp=WARP_CONSTANTS,
        warps_per_row=warps_per_row,
        rows=rows_per_block,
        block_size=block_size,
        batch=params["loads_in_flight"],
    )
    body = fill(
        """
        __shared__ float warp_totals[kRowsPerBlock][kWarpsPerRow];
        $sizes
        const int row_in_block = threadIdx.x / kThreadsPerRow;
        const int row = blockIdx.x * kRowsPerBlock + row_in_block;
        const int thread_in_row = threadIdx.x % kThreadsPerRow;
        float sum = 0.0f;
        if (row < num_rows) {
            $extent
            $batched_sum
        }
        // Every lane folds (lanes past the last row hold 0), then the row's warps add up.
        $fold
        $row_total
        """,
        sizes=size_bindings(("num_rows", "m", constants.m)),
        extent=csr_row_extent("row", constants.fixed_row_length),
        batched_sum=batched_row_sum(),
        fold=shuffle_fold(["sum"], "kWarpSize / 2", "1"),
        row_total=WARPS_ROW_TOTAL,
    )
    return kernel(
        header=header(
            op="spmv",
            format=format,
            params=format_params,
            grid=f"ceil_div(m, {rows_per_block})",
            block=block_size,
        ),
        strategy=strategy_for(CSR_MULTIWARP, format, format_params),
        preamble=preamble,
        signature=entry_signature("spmv", format, block_size),
        body=body,
    )


SHORT_COLUMNS_NOTE = (
    f"Column indices are stored in 16 bits (format csr_u16, n <= {MAX_U16_COLUMNS}): "
    "6 bytes per entry instead of 8."
)
PADDED_ROWS = "pad_rows=1"  # the format parameter of the padded-row variants
PADDED_ROWS_NOTE = (
    "Rows are padded to the longest one (pad_rows=1), so row r starts at r times the baked "
    "width: no row_ptr load comes before a row's entry loads."
)
MAX_ROW_PADDING = 2.0  # stored slots per entry past which padded rows are not timed


def strategy_for(family: KernelFamily, format: str, format_params: str = "-") -> str:
    """The family's strategy sentence, with the notes on 16-bit columns (csr_u16) and on
    padded rows (pad_rows=1)."""
    notes = [SHORT_COLUMNS_NOTE] if format == "csr_u16" else []
    notes += [PADDED_ROWS_NOTE] if format_params == PADDED_ROWS else []
    return " ".join([family.strategy, *notes])


def columns_fit_u16(features) -> bool:
    """csr_u16 holds matrices of at most MAX_U16_COLUMNS columns."""
    return feature(features, "n_cols") <= MAX_U16_COLUMNS


def with_short_columns(family: KernelFamily, renderer) -> KernelFamily:
    """`family` again over csr_u16: the same parameters and code, with 16-bit column indices
    (a quarter fewer matrix bytes), for matrices of at most MAX_U16_COLUMNS columns. `renderer` is
    the family's renderer; it takes the format as a keyword."""
    return replace(
        family,
        name=f"{family.name}_u16",
        format="csr_u16",
        strategy=strategy_for(family, "csr_u16"),
        renderer=partial(renderer, format="csr_u16"),
        predicate=lambda features: family.predicate(features) and columns_fit_u16(features),
    )


def padding_fits(row_lengths) -> bool:
    """Padded rows are worth timing when rows differ in length (else the baked fixed row
    length already skips row_ptr) and padding costs at most MAX_ROW_PADDING slots per entry."""
    if not len(row_lengths) or row_lengths.min() == row_lengths.max():
        return False
    return len(row_lengths) * int(row_lengths.max()) <= MAX_ROW_PADDING * int(row_lengths.sum())


def with_padded_rows(family: KernelFamily, renderer) -> KernelFamily:
    """`family` (a CSR family with a batch of loads per lane) again over its format with
    pad_rows=1, the longest row's length baked as the fixed row length. The entry loads
    then start without waiting on row_ptr: one dependent memory trip fewer, which is most
    of the time left on a latency-bound matrix (pruned DNN layers of 1e5-1e6 entries).
    `renderer` is the family's renderer; it takes the format and its parameters as keywords.
    Unbaked, the kernel reads row_ptr, which pad_rows=1 keeps right (r * width)."""

    def render(params: dict[str, int], constants: MatrixConstants) -> str:
        width = replace(constants, fixed_row_length=constants.max_row_length, max_row_length=None)
        return renderer(params, width, format=family.format, format_params=PADDED_ROWS)

    return replace(
        family,
        name=f"{family.name}_padded",
        params=PADDED_ROWS,
        strategy=f"{family.strategy} {PADDED_ROWS_NOTE}",
        renderer=render,
        bakes=tuple(name for name in family.bakes if name != "fixed_row_length")
        + ("max_row_length",),
        fits=lambda row_lengths, params: (
            family.fits(row_lengths, params) and padding_fits(row_lengths)
        ),
    )


def rows_are_long(features) -> bool:
    """csr_multiwarp pays when the mean row has a warp's worth of entries, or when some rows
    do and there are few enough rows that a warp each is cheap (the longest rows then set
    the kernel's time, and a batch of loads in flight shortens them)."""
    if feature(features, "row_length_mean") >= WARP_SIZE:
        return True
    return (
        feature(features, "n_rows") <= FEW_ROWS and feature(features, "row_length_max") >= WARP_SIZE
    )


def lane_group_fits(row_lengths, params) -> bool:
    """A group of lanes per row is worth timing within 4x of the mean row length; 32 is
    always kept, for the longest rows."""
    lanes = params["threads_per_row"]
    mean_row = max(float(row_lengths.mean()) if len(row_lengths) else 0.0, 1.0)
    return lanes == WARP_SIZE or mean_row / 4 <= lanes <= 4 * mean_row


def block_holds_rows(params) -> bool:
    """csr_multiwarp's block is 256 threads, or one row's warps when they are more."""
    return params["block_size"] == max(MULTIWARP_BLOCK, params["warps_per_row"] * WARP_SIZE)


def sixteen_warps_fit(row_lengths, params) -> bool:
    """16 warps per row are worth timing only when the mean row fills half their lanes."""
    mean_row = float(row_lengths.mean()) if len(row_lengths) else 0.0
    return params["warps_per_row"] < 16 or mean_row >= 16 * WARP_SIZE / 2


FEW_ROWS = 16384  # a warp per row: about two waves of resident warps on an H100 (132 x 64)


CSR_SCALAR = KernelFamily(
    name="csr_scalar",
    op="spmv",
    format="csr",
    params="-",
    space={"block_size": (128, 256)},
    strategy="CSR scalar: one thread per row walks the row's entries. Pays for short, even "
    "rows; a baked fixed row length removes the row pointer reads and unrolls the loop.",
    renderer=render_csr_scalar,
    bakes=("m", "fixed_row_length"),
)

CSR_VECTOR = KernelFamily(
    name="csr_vector",
    op="spmv",
    format="csr",
    params="-",
    space={"threads_per_row": (2, 4, 8, 16, 32), "block_size": (128, 256)},
    strategy="CSR vector: a group of lanes shares each row, strides over its entries "
    "(coalesced) and reduces with __shfl_down_sync. Pays when rows hold about as many "
    "entries as the group has lanes, or more.",
    renderer=render_csr_vector,
    bakes=("m", "fixed_row_length"),
    fits=lane_group_fits,
)

CSR_ROWBLOCKS = KernelFamily(
    name="csr_rowblocks",
    op="spmv",
    format="csr_rowblocks",
    params=f"block_nnz={ROWBLOCKS_BLOCK_NNZ}",
    space={"block_size": (128, 256, 512)},
    strategy="CSR-adaptive: one block per row group. A group of short rows stages its "
    "products in shared memory, then each thread sums one row; a long row alone in its "
    "group is reduced by the whole block. Pays on mixed row lengths.",
    renderer=render_csr_rowblocks,
)

CSR_MERGE = KernelFamily(
    name="csr_merge",
    op="spmv",
    format="csr",
    params="-",
    space={"items_per_thread": (4, 8, 16), "block_size": (128, 256)},
    strategy="Merge-path CSR: each thread takes an equal share of the m + nnz row ends and "
    "entries, found by a binary search on row_ptr; rows cut by a share boundary are "
    "finished with atomicAdd (output zeroed first). Pays on heavily skewed row lengths.",
    renderer=render_csr_merge,
    bakes=("m", "nnz"),
)

CSR_MULTIWARP = KernelFamily(
    name="csr_multiwarp",
    op="spmv",
    format="csr",
    params="-",
    space={
        "warps_per_row": (1, 2, 4, 8, 16),
        "loads_in_flight": (4, 8),
        "block_size": (MULTIWARP_BLOCK, 2 * MULTIWARP_BLOCK),
    },
    strategy="CSR multi-warp: warps_per_row warps share each row; each lane loads "
    "loads_in_flight (column, value) pairs before it reads their x entries, so that many "
    "loads are in flight; warps fold with shuffles, then add up through shared memory. "
    "Pays for few, long rows, where one warp per row waits on memory latency.",
    renderer=render_csr_multiwarp,
    bakes=("m", "fixed_row_length"),
    predicate=rows_are_long,
    fits=sixteen_warps_fit,
    valid=block_holds_rows,
)

CSR_MULTIWARP_U16 = with_short_columns(CSR_MULTIWARP, render_csr_multiwarp)
CSR_MULTIWARP_U16_PADDED = with_padded_rows(CSR_MULTIWARP_U16, render_csr_multiwarp)

FAMILIES = (
    CSR_SCALAR,
    CSR_VECTOR,
    CSR_ROWBLOCKS,
    CSR_MERGE,
    CSR_MULTIWARP,
    CSR_MULTIWARP_U16,
    CSR_MULTIWARP_U16_PADDED,
)
