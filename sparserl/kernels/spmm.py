"""CSR SpMM families (C = A B, B row-major n x N, C row-major m x N), N baked per variant.

Every variant serves one N in {8, 16, 32, 64, 128}: the column count is a compile-time
constant, so the per-thread accumulators live in registers and the column loops unroll.

- csr_spmm_rowsplit: threads per (row, column chunk). The threads of a row read
  consecutive columns of each B row (coalesced) and share the row's A entries.
- csr_spmm_warp_float4: a warp per row; each lane owns 4 consecutive columns and loads
  them with one float4. When N/4 < 32 the warp's other lanes split the row's entries and
  the partial results are folded with shuffles.
- csr_spmm_warp_staged: a warp per row that loads 32 of the row's (column, value) pairs at
  a time, coalesced, into shared memory, from where every lane reads them (a broadcast)
  while it accumulates its columns.
- csr_spmm_lockstep: a warp per row, and the block's rows walk A's columns together, a
  chunk at a time between barriers, so B rows that several of them need are read from L2
  once and then hit in L1. Blocks may also split A's columns (adding into C atomically).
"""

from __future__ import annotations

from sparserl.abi import SPMM_WIDTHS
from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    WARP_CONSTANTS,
    WARP_LOWER_BOUND,
    WARP_SIZE,
    csr_row_extent,
    entry_signature,
    fill,
    header,
    kernel,
    shuffle_fold,
    size_bindings,
    unroll_pragma,
)

FLOATS_PER_VECTOR = 4  # a float4 load


# The products of `chunk_length` entries whose (column, value) pairs lanes 0.. hold in
# `lane_column` / `lane_value`, added into the float4 `sum`: shuffles hand the pairs round
# and each lane issues kLoadsInFlight B loads before it adds any. Needs kColumnLanes,
# kEntrySlices, kLoadsInFlight, b_vectors, column_lane and entry_slice.
BATCHED_PRODUCTS = """\
for (int j = 0; j < chunk_length; j += kEntrySlices * kLoadsInFlight) {
    float a[kLoadsInFlight];
    float4 b[kLoadsInFlight];
    #pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
        const int source = j + u * kEntrySlices + entry_slice;  // < 32: see static_assert
        const int column = __shfl_sync(kFullWarpMask, lane_column, source);
        a[u] = __shfl_sync(kFullWarpMask, lane_value, source);
        b[u] = __ldg(&b_vectors[(size_t)column * kColumnLanes + column_lane]);
    }
    #pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
        if (j + u * kEntrySlices + entry_slice < chunk_length) {
            sum.x += a[u] * b[u].x;
            sum.y += a[u] * b[u].y;
            sum.z += a[u] * b[u].z;
            sum.w += a[u] * b[u].w;
        }
    }
}"""


def float4_products(first: str, end: str) -> str:
    """The loop adding A's entries `first`..`end`-1 times B into the float4 `sum`: lanes
    own float4 columns (column_lane) and split the entries (entry_slice)."""
    return fill(
        """
        for (int k = $first + entry_slice; k < $end; k += kEntrySlices) {
            const float a = values[k];
            const float4 b = __ldg(&b_vectors[(size_t)col_idx[k] * kColumnLanes + column_lane]);
            sum.x += a * b.x;
            sum.y += a * b.y;
            sum.z += a * b.z;
            sum.w += a * b.w;
        }
        """,
        first=first,
        end=end,
    )


def baked_width(n_cols: int) -> str:
    return f"constexpr int kN = {n_cols};  // columns of B and C: this variant serves N = {n_cols} only"


def render_rowsplit(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size, n_cols, columns = params["block_size"], params["N"], params["columns_per_thread"]
    threads_per_row = n_cols // columns
    rows_per_block = block_size // threads_per_row
    preamble = fill(
        """
        $width
        constexpr int kColumnsPerThread = $columns;
        constexpr int kThreadsPerRow = kN / kColumnsPerThread;  // $threads
        constexpr int kRowsPerBlock = $rows;  // $block_size threads per block
        """,
        width=baked_width(n_cols),
        columns=columns,
        threads=threads_per_row,
        rows=rows_per_block,
        block_size=block_size,
    )
    body = fill(
        """
        $sizes
        const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
        // This thread's columns: first_column + i * kThreadsPerRow, so the threads of a row
        // read consecutive addresses of each B row.
        const int first_column = threadIdx.x % kThreadsPerRow;
        if (row >= num_rows) return;
        $extent
        float sums[kColumnsPerThread] = {};
        $unroll
        for (int k = row_start; k < row_end; ++k) {
            const float a = values[k];
            const float* b_row = B + (size_t)col_idx[k] * kN;
            #pragma unroll
            for (int i = 0; i < kColumnsPerThread; ++i) {
                sums[i] += a * __ldg(&b_row[first_column + i * kThreadsPerRow]);
            }
        }
        float* c_row = C + (size_t)row * kN;
        #pragma unroll
        for (int i = 0; i < kColumnsPerThread; ++i) c_row[first_column + i * kThreadsPerRow] = sums[i];
        """,
        sizes=size_bindings(("num_rows", "m", constants.m)),
        extent=csr_row_extent("row", constants.fixed_row_length),
        unroll=unroll_pragma(constants.fixed_row_length),
    )
    return kernel(
        header=header(
            op="spmm", format="csr", grid=f"ceil_div(m, {rows_per_block})", block=block_size
        ),
        strategy=ROWSPLIT.strategy,
        preamble=preamble,
        signature=entry_signature("spmm", "csr", block_size),
        body=body,
    )


def warp_per_row_preamble(n_cols: int, warps_per_block: int, column_lanes: str) -> str:
    """Constants shared by the warp-per-row kernels: lanes split columns, then entries."""
    return fill(
        """
        $warp
        $width
        constexpr int kWarpsPerBlock = $warps;  // one row per warp
        constexpr int kColumnLanes = $column_lanes;  // lanes that split the N columns
        constexpr int kEntrySlices = kWarpSize / kColumnLanes;  // lanes that split the row's entries
        """,
        warp=WARP_CONSTANTS,
        width=baked_width(n_cols),
        warps=warps_per_block,
        column_lanes=column_lanes,
    )


WARP_PER_ROW_START = """\
const int lane = threadIdx.x % kWarpSize;
const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
if (row >= num_rows) return;  // the whole warp leaves together: shuffles stay full
const int column_lane = lane % kColumnLanes;
const int entry_slice = lane / kColumnLanes;"""


def render_warp_float4(params: dict[str, int], constants: MatrixConstants) -> str:
    n_cols, warps = params["N"], params["warps_per_block"]
    preamble = warp_per_row_preamble(n_cols, warps, "kN / 4")
    body = fill(
        """
        $sizes
        $start
        // B and C rows are 16-byte aligned (N is a multiple of 4): read them as float4.
        const float4* b_vectors = reinterpret_cast<const float4*>(B);
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        $extent
        $products
        // Lanes column_lane + s * kColumnLanes hold the same columns: fold them into lane column_lane.
        $fold
        if (entry_slice == 0) {
            reinterpret_cast<float4*>(C)[(size_t)row * kColumnLanes + column_lane] = sum;
        }
        """,
        sizes=size_bindings(("num_rows", "m", constants.m)),
        start=WARP_PER_ROW_START,
        extent=csr_row_extent("row", constants.fixed_row_length),
        products=float4_products("row_start", "row_end"),
        fold=shuffle_fold(["sum.x", "sum.y", "sum.z", "sum.w"], "kWarpSize / 2", "kColumnLanes"),
    )
    return kernel(
        header=header(
            op="spmm", format="csr", grid=f"ceil_div(m, {warps})", block=warps * WARP_SIZE
        ),
        strategy=WARP_FLOAT4.strategy,
        preamble=preamble,
        signature=entry_signature("spmm", "csr", warps * WARP_SIZE),
        body=body,
    )


def render_warp_staged(params: dict[str, int], constants: MatrixConstants) -> str:
    n_cols, warps = params["N"], params["warps_per_block"]
    preamble = warp_per_row_preamble(n_cols, warps, "kN < kWarpSize ? kN : kWarpSize")
    preamble += "\nconstexpr int kColumnsPerLane = kN / kColumnLanes;"
    body = fill(
        """
        __shared__ int staged_columns[kWarpsPerBlock][kWarpSize];
        __shared__ float staged_values[kWarpsPerBlock][kWarpSize];
        $sizes
        $start
        const int warp = threadIdx.x / kWarpSize;
        float sums[kColumnsPerLane] = {};
        $extent
        for (int chunk_start = row_start; chunk_start < row_end; chunk_start += kWarpSize) {
            const int chunk_length = min(kWarpSize, row_end - chunk_start);
            if (lane < chunk_length) {  // one coalesced load of up to 32 entries
                staged_columns[warp][lane] = col_idx[chunk_start + lane];
                staged_values[warp][lane] = values[chunk_start + lane];
            }
            __syncwarp();
            for (int j = entry_slice; j < chunk_length; j += kEntrySlices) {
                const float a = staged_values[warp][j];
                const float* b_row = B + (size_t)staged_columns[warp][j] * kN;
                #pragma unroll
                for (int i = 0; i < kColumnsPerLane; ++i) {
                    sums[i] += a * __ldg(&b_row[column_lane + i * kColumnLanes]);
                }
            }
            __syncwarp();  // the chunk is read by all before the next one overwrites it
        }
        #pragma unroll
        for (int i = 0; i < kColumnsPerLane; ++i) {
            $fold
        }
        if (entry_slice == 0) {
            float* c_row = C + (size_t)row * kN;
            #pragma unroll
            for (int i = 0; i < kColumnsPerLane; ++i) c_row[column_lane + i * kColumnLanes] = sums[i];
        }
        """,
        sizes=size_bindings(("num_rows", "m", constants.m)),
        start=WARP_PER_ROW_START,
        extent=csr_row_extent("row", constants.fixed_row_length),
        fold=shuffle_fold(["sums[i]"], "kWarpSize / 2", "kColumnLanes"),
    )
    return kernel(
        header=header(
            op="spmm", format="csr", grid=f"ceil_div(m, {warps})", block=warps * WARP_SIZE
        ),
        strategy=WARP_STAGED.strategy,
        preamble=preamble,
        signature=entry_signature("spmm", "csr", warps * WARP_SIZE),
        body=body,
    )


LOCKSTEP_CHUNK_BYTES = 32 * 1024  # B bytes one chunk of A's columns spans, per block


def render_lockstep(params: dict[str, int], constants: MatrixConstants) -> str:
    n_cols, rows, splits = params["N"], params["warps_per_block"], params["column_splits"]
    preamble = fill(
        """
        $warp_row
        constexpr int kColumnSplits = $splits;  // blocks per row group, each a slice of A's columns
        constexpr int kChunkColumns = $chunk;  // A columns per lockstep step: $chunk_kb KB of B
        constexpr int kLoadsInFlight = 4;  // B rows each lane loads before it adds
        static_assert(kEntrySlices * kLoadsInFlight <= kWarpSize, "a batch fits in one chunk");

        $lower_bound
        """,
        warp_row=warp_per_row_preamble(n_cols, rows, "kN / 4"),
        splits=splits,
        chunk=LOCKSTEP_CHUNK_BYTES // (n_cols * 4),
        chunk_kb=LOCKSTEP_CHUNK_BYTES // 1024,
        lower_bound=WARP_LOWER_BOUND,
    )
    store = (
        "reinterpret_cast<float4*>(C)[(size_t)row * kColumnLanes + column_lane] = sum;"
        if splits == 1
        else "float* c = C + (size_t)row * kN + column_lane * 4;  // other splits add theirs\n"
        "atomicAdd(c, sum.x);\natomicAdd(c + 1, sum.y);\natomicAdd(c + 2, sum.z);\n"
        "atomicAdd(c + 3, sum.w);"
    )
    body = fill(
        """
        $sizes
        const int lane = threadIdx.x % kWarpSize;
        const int split = blockIdx.x % kColumnSplits;
        const int row = blockIdx.x / kColumnSplits * kWarpsPerBlock + threadIdx.x / kWarpSize;
        const bool has_row = row < num_rows;  // rows past m still join every barrier
        const int column_lane = lane % kColumnLanes;
        const int entry_slice = lane / kColumnLanes;
        const float4* b_vectors = reinterpret_cast<const float4*>(B);
        // This block's slice of A's columns, and this row's first entry in it.
        const int split_begin = (int)((long long)num_cols * split / kColumnSplits);
        const int split_end = (int)((long long)num_cols * (split + 1) / kColumnSplits);
        int next = 0, row_end = 0;
        if (has_row) {
            row_end = row_ptr[row + 1];
            next = warp_lower_bound(col_idx, row_ptr[row], row_end, split_begin, lane);
        }
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int chunk_begin = split_begin; chunk_begin < split_end; chunk_begin += kChunkColumns) {
            const int chunk_end = min(chunk_begin + kChunkColumns, split_end);
            // This row's entries with column < chunk_end, 32 at a time: each lane loads one
            // (column, value) pair; the leading lanes inside the chunk are the batch.
            while (true) {
                const int available = has_row ? min(kWarpSize, row_end - next) : 0;
                if (available == 0) break;
                const int lane_entry = next + min(lane, available - 1);
                const int lane_column = col_idx[lane_entry];
                const float lane_value = values[lane_entry];
                const bool in_chunk = lane < available && lane_column < chunk_end;
                const unsigned inside = __ballot_sync(kFullWarpMask, in_chunk);
                const int chunk_length = inside == kFullWarpMask ? kWarpSize : __ffs(~inside) - 1;
                $products
                next += chunk_length;
                if (chunk_length < kWarpSize) break;
            }
            __syncthreads();  // the block's rows enter the next chunk together
        }
        // Lanes column_lane + s * kColumnLanes hold the same columns: fold them.
        $fold
        if (has_row && entry_slice == 0) {
            $store
        }
        """,
        sizes=size_bindings(("num_rows", "m", constants.m), ("num_cols", "n", constants.n)),
        products=BATCHED_PRODUCTS,
        fold=shuffle_fold(["sum.x", "sum.y", "sum.z", "sum.w"], "kWarpSize / 2", "kColumnLanes"),
        store=store,
    )
    return kernel(
        header=header(
            op="spmm",
            format="csr",
            grid=f"ceil_div(m, {rows}) * {splits}",
            block=rows * WARP_SIZE,
            init="zero" if splits > 1 else "none",
        ),
        strategy=LOCKSTEP.strategy,
        preamble=preamble,
        signature=entry_signature("spmm", "csr", rows * WARP_SIZE),
        body=body,
    )


def rows_share_columns(features) -> bool:
    """csr_spmm_lockstep pays when a block's rows are likely to need the same B rows."""
    return feature(features, "density") >= LOCKSTEP_MIN_DENSITY


LOCKSTEP_MIN_DENSITY = 0.01

ROWSPLIT = KernelFamily(
    name="csr_spmm_rowsplit",
    op="spmm",
    format="csr",
    params="-",
    space={"N": SPMM_WIDTHS, "columns_per_thread": (1, 4), "block_size": (128, 256)},
    strategy="CSR SpMM row split: N / columns_per_thread threads per row, each accumulating "
    "columns_per_thread columns strided so a row's threads read B coalesced. Pays for short "
    "rows; a baked fixed row length drops the row pointer reads.",
    renderer=render_rowsplit,
    bakes=("m", "fixed_row_length"),
)

WARP_FLOAT4 = KernelFamily(
    name="csr_spmm_warp_float4",
    op="spmm",
    format="csr",
    params="-",
    space={"N": SPMM_WIDTHS, "warps_per_block": (4, 8)},
    strategy="CSR SpMM warp per row with float4 loads of B: each lane owns 4 columns and "
    "spare lanes split the row's entries, folded by shuffles. Pays for longer rows and "
    "wide N, where B traffic dominates.",
    renderer=render_warp_float4,
    bakes=("m", "fixed_row_length"),
)

WARP_STAGED = KernelFamily(
    name="csr_spmm_warp_staged",
    op="spmm",
    format="csr",
    params="-",
    space={"N": SPMM_WIDTHS, "warps_per_block": (4, 8)},
    strategy="CSR SpMM warp per row staging 32 (column, value) pairs at a time in shared "
    "memory, read back as broadcasts while each lane accumulates its columns. Pays for long "
    "rows, where A's index traffic would otherwise be read once per lane.",
    renderer=render_warp_staged,
    bakes=("m", "fixed_row_length"),
)

LOCKSTEP = KernelFamily(
    name="csr_spmm_lockstep",
    op="spmm",
    format="csr",
    params="-",
    space={"N": (32, 128), "warps_per_block": (8, 16), "column_splits": (1, 4)},
    strategy="CSR SpMM in lockstep: a warp per row, lanes own float4 columns; the block's "
    "rows walk A's columns together, 32 KB of B rows at a time between barriers, so B rows "
    "several of them need come from L2 once and then hit in L1. column_splits blocks share "
    "a row group, each a slice of A's columns, adding into C atomically (output zeroed "
    "first). Pays on dense-ish rows (pruned DNN layers) at wide N.",
    renderer=render_lockstep,
    bakes=("m", "n"),
    predicate=rows_share_columns,
)

FAMILIES = (ROWSPLIT, WARP_FLOAT4, WARP_STAGED, LOCKSTEP)
