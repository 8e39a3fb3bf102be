"""CSR SpMV with x staged in shared memory, for matrices with few columns.

Every entry's x read is a gather: the lanes of a warp ask for 32 unrelated addresses.
From L1 that costs about one pass per distinct cache line the warp touches, so the x
reads of a warp cost up to 32 passes. From shared memory the same gather costs one pass
per bank conflict, three or four for random columns. When x is small enough to fit a
block's shared memory (n <= MAX_STAGED_COLUMNS), each block first copies all of it in
with coalesced float4 loads (four per thread in flight), and the row loop reads x from
there. The copy's loads are issued right after the first batch of (column, value) loads,
so both are in flight together and x costs no extra dependent memory trip. Rows are shared by threads_per_row threads
as in csr_vector (a group within a warp) or csr_multiwarp (several warps, added up
through shared memory). Pays for pruned DNN layers (n of 1024 to 4608) and small
SuiteSparse matrices. csr_shared_x_u16 is the same over csr_u16 (16-bit column indices).
"""

from __future__ import annotations

from sparserl.abi import array_type
from sparserl.kernels.csr import (
    lane_group_fits,
    strategy_for,
    with_padded_rows,
    with_short_columns,
)
from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    WARP_CONSTANTS,
    WARP_SIZE,
    WARPS_ROW_TOTAL,
    csr_row_extent,
    entry_signature,
    fill,
    header,
    kernel,
    shuffle_fold,
    size_bindings,
)

SHARED_MEMORY_BUDGET = 48 * 1024  # bytes a block may use without the reward's penalty
RESERVED_SHARED_BYTES = 256  # static shared memory of the kernel (the row warps' totals)
MAX_STAGED_COLUMNS = (SHARED_MEMORY_BUDGET - RESERVED_SHARED_BYTES) // 4  # floats of x


def render_csr_shared_x(
    params: dict[str, int],
    constants: MatrixConstants,
    format: str = "csr",
    format_params: str = "-",
) -> str:
    block_size, lanes = params["block_size"], params["threads_per_row"]
    warps_per_row = max(lanes // WARP_SIZE, 1)
    preamble = fill(
        """
        $warp
        constexpr int kBlockSize = $block_size;
        constexpr int kThreadsPerRow = $lanes;
        constexpr int kRowsPerBlock = kBlockSize / kThreadsPerRow;
        constexpr int kLoadsInFlight = $batch;  // (column, value) pairs a thread loads at once
        static_assert(kWarpSize % kThreadsPerRow == 0 || kThreadsPerRow % kWarpSize == 0,
                      "a row's threads are part of one warp or whole warps");

        // Load this thread's batch of (column, value) pairs from entry `base` on, every
        // kThreadsPerRow-th. Slots at or past `end` are clamped to a valid entry and must be
        // left out of the sum (the matrix has at least one entry).
        __device__ __forceinline__ void load_batch(
            const $index* __restrict__ col_idx, const float* __restrict__ values, int base,
            int end, int* columns, float* entry_values)
        {
            #pragma unroll
            for (int b = 0; b < kLoadsInFlight; ++b) {
                const int k = max(min(base + b * kThreadsPerRow, end - 1), 0);
                columns[b] = col_idx[k];
                entry_values[b] = values[k];
            }
        }
        """,
        warp=WARP_CONSTANTS,
        block_size=block_size,
        lanes=lanes,
        batch=params["loads_in_flight"],
        index=array_type(format, "col_idx"),
    )
    body = fill(
        """
        extern __shared__ float4 staged_x4[];  // all n entries of x (the header's shared bytes)
        float* staged_x = reinterpret_cast<float*>(staged_x4);
        $sizes
        const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
        const int thread_in_row = threadIdx.x % kThreadsPerRow;
        // Threads past the last row read the last row's extent but own no entries: they
        // still take part in the barriers.
        const int clamped_row = min(row, num_rows - 1);
        $extent
        const int share_end = row < num_rows ? row_end : row_start;

        // The first batch of entries, then the copy of x: both sets of loads in flight.
        int base = row_start + thread_in_row;
        int columns[kLoadsInFlight];
        float entry_values[kLoadsInFlight];
        load_batch(col_idx, values, base, share_end, columns, entry_values);
        // Rounds of kStageLoads float4 per thread: a round's loads are all in flight before
        // its first store waits on one.
        const float4* x4 = reinterpret_cast<const float4*>(x);  // 16-byte aligned (ABI buffers)
        constexpr int kStageLoads = 4;
        const int num_x4 = num_cols / 4;
        for (int first = threadIdx.x; first < num_x4; first += kStageLoads * kBlockSize) {
            float4 parts[kStageLoads];
            #pragma unroll
            for (int s = 0; s < kStageLoads; ++s) {
                parts[s] = __ldg(&x4[min(first + s * kBlockSize, num_x4 - 1)]);
            }
            #pragma unroll
            for (int s = 0; s < kStageLoads; ++s) {
                if (first + s * kBlockSize < num_x4) staged_x4[first + s * kBlockSize] = parts[s];
            }
        }
        for (int i = num_x4 * 4 + threadIdx.x; i < num_cols; i += kBlockSize) {
            staged_x[i] = __ldg(&x[i]);  // the last n % 4 entries
        }
        __syncthreads();

        float sum = 0.0f;
        while (base < share_end) {
            #pragma unroll
            for (int b = 0; b < kLoadsInFlight; ++b) {
                const float product = entry_values[b] * staged_x[columns[b]];
                sum += base + b * kThreadsPerRow < share_end ? product : 0.0f;
            }
            base += kThreadsPerRow * kLoadsInFlight;
            if (base < share_end) {
                load_batch(col_idx, values, base, share_end, columns, entry_values);
            }
        }
        $reduce
        """,
        sizes=size_bindings(("num_rows", "m", constants.m), ("num_cols", "n", constants.n)),
        extent=csr_row_extent("clamped_row", constants.fixed_row_length),
        reduce=_warp_group_total() if warps_per_row == 1 else _multiwarp_total(warps_per_row),
    )
    return kernel(
        header=header(
            op="spmv",
            format=format,
            params=format_params,
            grid=f"ceil_div(m, {block_size // lanes})",
            block=block_size,
            shared="4 * n",
        ),
        strategy=strategy_for(CSR_SHARED_X, format, format_params),
        preamble=preamble,
        signature=entry_signature("spmv", format, block_size),
        body=body,
    )


def _warp_group_total() -> str:
    """Rows of at most a warp's lanes: the group folds with shuffles, its first lane stores."""
    return fill(
        """
        // Every lane folds (lanes past the last row hold 0).
        $fold
        if (thread_in_row == 0 && row < num_rows) y[row] = sum;
        """,
        fold=shuffle_fold(["sum"], "kThreadsPerRow / 2", "1"),
    )


def _multiwarp_total(warps_per_row: int) -> str:
    """Rows of several warps: each warp folds, then the row's first thread adds the warps'
    totals from shared memory."""
    return fill(
        """
        constexpr int kWarpsPerRow = $warps;
        __shared__ float warp_totals[kRowsPerBlock][kWarpsPerRow];
        $fold
        const int row_in_block = threadIdx.x / kThreadsPerRow;
        $row_total
        """,
        warps=warps_per_row,
        fold=shuffle_fold(["sum"], "kWarpSize / 2", "1"),
        row_total=WARPS_ROW_TOTAL,
    )


def x_fits_shared_memory(features) -> bool:
    """Staging pays only when all of x fits one block's shared memory, and the matrix has
    an entry (the batch loads clamp to entry 0)."""
    return 1 <= feature(features, "n_cols") <= MAX_STAGED_COLUMNS and feature(features, "nnz") >= 1


CSR_SHARED_X = KernelFamily(
    name="csr_shared_x",
    op="spmv",
    format="csr",
    params="-",
    space={
        "threads_per_row": (8, 32, 128, 256),
        "loads_in_flight": (2, 4),
        "block_size": (256, 512, 1024),
    },
    strategy="CSR with x in shared memory: each block copies all of x into shared memory "
    "(coalesced float4 loads, issued together with its first batch of (column, value) "
    "loads), then threads_per_row threads share each row and gather x from shared memory "
    "instead of L1, folding with shuffles (and through shared memory across warps). Pays "
    f"when x fits (n <= {MAX_STAGED_COLUMNS}): pruned DNN layers, small matrices.",
    renderer=render_csr_shared_x,
    bakes=("m", "n", "fixed_row_length"),
    predicate=x_fits_shared_memory,
    fits=lane_group_fits,
)

CSR_SHARED_X_U16 = with_short_columns(CSR_SHARED_X, render_csr_shared_x)
CSR_SHARED_X_U16_PADDED = with_padded_rows(CSR_SHARED_X_U16, render_csr_shared_x)

FAMILIES = (CSR_SHARED_X, CSR_SHARED_X_U16, CSR_SHARED_X_U16_PADDED)
