"""HYB SpMV family: an ELL slab for the short rows, a whole block for each long row.

- ell_hybrid: the `hyb` format keeps rows of at most `width` entries in a column-major
  ELL slab, and the longer rows in a row-major slab padded to the longest of them, so
  no row's start needs a pointer read. Short rows get kThreadsPerShortRow threads each
  (1 or 4) and a fixed trip count the compiler unrolls: all of a row's loads are in
  flight at once. Blocks past the ELL slab's each take one long row: their threads
  share it with batches of loads in flight and reduce through shared memory. One
  launch, no atomics, no zeroed output. Pays where a few rows are far longer than the
  rest (circuit, optimisation and redistricting matrices): ELL alone would pad every
  row to the longest, CSR-adaptive pays a row-pointer trip, and one thread or warp per
  row leaves the long rows as the tail.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    WARP_CONSTANTS,
    batched_row_sum,
    block_sum_function,
    entry_signature,
    fill,
    header,
    kernel,
    shuffle_fold,
)

ELL_WIDTHS = (8, 16, 20, 24, 32)  # the format's width: longer rows leave the slab
LONG_ROW_FACTOR = 4  # the family is tried when the longest row is this many times the mean
LONG_ROW_LOADS_IN_FLIGHT = 8  # (column, value) pairs a thread loads before reading x
MAX_LONG_ROW = 8192  # a longer row keeps its one block busy for over four passes
MAX_LONG_SLAB_PADDING = 4  # long slab slots per long-row entry worth timing


def render_ell_hybrid(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size, width = params["block_size"], params["width"]
    threads_per_short_row = params["threads_per_short_row"]
    preamble = fill(
        """
        $warp
        constexpr int kBlockSize = $block_size;
        constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;
        constexpr int kEllWidth = $width;  // the format's width: slots per short row
        constexpr int kThreadsPerShortRow = $short_threads;  // each takes every such slot
        constexpr int kThreadsPerRow = kBlockSize;  // a long row gets the whole block
        constexpr int kLoadsInFlight = $batch;

        $block_sum
        """,
        warp=WARP_CONSTANTS,
        block_size=block_size,
        width=width,
        short_threads=threads_per_short_row,
        batch=LONG_ROW_LOADS_IN_FLIGHT,
        block_sum=block_sum_function(),
    )
    body = fill(
        """
        __shared__ float warp_totals[kWarpsPerBlock];
        const int n_ell_blocks = (n_ell_rows * kThreadsPerShortRow + kBlockSize - 1) / kBlockSize;
        if (blockIdx.x < n_ell_blocks) {
            // Short rows: kThreadsPerShortRow threads each. Slot k of ELL row s sits at
            // k * n_ell_rows + s, so a warp's loads are coalesced; padding is column 0,
            // value 0. Thread `part` of a row takes slots part, part + kThreadsPerShortRow...
            const int thread = blockIdx.x * kBlockSize + threadIdx.x;
            const int slot = thread / kThreadsPerShortRow;
            const int part = thread % kThreadsPerShortRow;
            const bool has_row = slot < n_ell_rows;
            const int row = has_row ? ell_row[slot] : 0;  // read first: in flight with the entries
            float sum = 0.0f;
            if (has_row) {
                #pragma unroll
                for (int j = 0; j < kEllWidth / kThreadsPerShortRow; ++j) {
                    const int index = (j * kThreadsPerShortRow + part) * n_ell_rows + slot;
                    sum += ell_values[index] * __ldg(&x[ell_col_idx[index]]);
                }
            }
            $short_fold
            if (has_row && part == 0) y[row] = sum;
            return;
        }

        // A long row: the whole block strides over it, then reduces.
        const int long_index = blockIdx.x - n_ell_blocks;
        if (long_index >= n_long_rows) return;  // only when the matrix has no rows
        // Row k fills slots k * long_width .. + long_width - 1 of the long slab (padding
        // adds 0), so the block starts loading its entries at once.
        const int row = long_row[long_index];
        const int row_start = long_index * long_width;
        const int row_end = row_start + long_width;
        const int thread_in_row = threadIdx.x;
        float sum = 0.0f;
        $batched_sum
        sum = block_sum(sum, warp_totals);
        if (threadIdx.x == 0) y[row] = sum;
        """,
        short_fold=short_row_fold(threads_per_short_row),
        batched_sum=batched_row_sum("long_col_idx", "long_values"),
    )
    return kernel(
        header=header(
            op="spmv",
            format="hyb",
            params=ELL_HYBRID.format_params(params),
            grid=f"max(ceil_div(n_ell_rows * {threads_per_short_row}, {block_size})"
            " + n_long_rows, 1)",
            block=block_size,
        ),
        strategy=ELL_HYBRID.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "hyb", block_size),
        body=body,
    )


def short_row_fold(threads_per_short_row: int) -> str:
    """Add up the partial sums of a short row's threads (adjacent lanes); nothing for one."""
    if threads_per_short_row == 1:
        return ""
    comment = "// The threads of a short row add up (every lane takes part, row or not)."
    return comment + "\n" + shuffle_fold(["sum"], "kThreadsPerShortRow / 2", "1")


def long_slab_is_compact(row_lengths: np.ndarray, params: Mapping[str, int]) -> bool:
    """The long slab (every long row padded to the longest) holds at most
    MAX_LONG_SLAB_PADDING slots per entry: a width whose long rows differ widely in
    length would read mostly padding."""
    long_lengths = row_lengths[row_lengths > params["width"]]
    if len(long_lengths) == 0:
        return True
    slots = len(long_lengths) * int(long_lengths.max())
    return slots <= MAX_LONG_SLAB_PADDING * int(long_lengths.sum())


def has_few_long_rows(features) -> bool:
    """Some row is LONG_ROW_FACTOR times longer than the mean row and longer than the
    narrowest ELL width (padding every row to the longest would waste most of ELL), but
    none is longer than MAX_LONG_ROW (one block per row would leave it as the tail)."""
    longest = feature(features, "row_length_max")
    mean = feature(features, "row_length_mean")
    return longest >= LONG_ROW_FACTOR * mean and min(ELL_WIDTHS) < longest <= MAX_LONG_ROW


ELL_HYBRID = KernelFamily(
    name="ell_hybrid",
    op="spmv",
    format="hyb",
    params="width=$width",
    space={
        "width": ELL_WIDTHS,
        "threads_per_short_row": (1, 4),
        "block_size": (128, 256, 512),
    },
    strategy="HYB: rows of at most `width` entries in a column-major ELL slab, 1 or 4 "
    "threads each with an unrolled loop; every longer row, padded to the longest, gets a "
    "block of its own that strides over it with batched loads and reduces through shared "
    "memory. One launch, no atomics. Pays when a few rows are far longer than the rest.",
    renderer=render_ell_hybrid,
    predicate=has_few_long_rows,
    fits=long_slab_is_compact,
)

FAMILIES = (ELL_HYBRID,)
