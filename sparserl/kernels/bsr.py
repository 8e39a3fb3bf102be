"""BSR SpMV families for 2x2 and 4x4 blocks: a group of lanes per block row.

`bsr_RxC`: each lane keeps R partial sums (one per row of the block row), walks every
`lanes_per_block_row`-th block of its block row, loads the C entries of x the block
touches once and multiplies the dense R x C block (row-major) against them. With one lane
per block row there is no reduction; with 8 or 32 the partial sums are folded with
shuffles.

`bsr_RxC_vector`: each lane takes one row of a block at a time, as one float2 or float4
load (and the matching C entries of x as another), so a warp's value loads are
contiguous: its 32 lanes read 32 consecutive rows of stored blocks (512 bytes of 4x4
blocks). Lane `l` always holds row `l % R` of its blocks; the lanes of one row are folded
with shuffles at the end. With 128 lanes a block row takes four warps, whose totals add
up through shared memory: more warps in flight when block rows are few and long.

Rows of the padded last block row past m are not written (the ABI's rule).
"""

from __future__ import annotations

from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    WARP_CONSTANTS,
    WARP_SIZE,
    entry_signature,
    fill,
    header,
    kernel,
    shuffle_fold,
    size_bindings,
)


def bsr_renderer(block_rows: int, block_cols: int):
    """The renderer of the `block_rows` x `block_cols` family."""

    def render(params: dict[str, int], constants: MatrixConstants) -> str:
        block_size, lanes = params["block_size"], params["lanes_per_block_row"]
        block_rows_per_block = block_size // lanes
        preamble = fill(
            """
            $warp
            constexpr int kBlockRows = $rows;  // R: rows of one dense block
            constexpr int kBlockCols = $cols;  // C: columns of one dense block
            constexpr int kLanesPerBlockRow = $lanes;  // lanes sharing one block row
            constexpr int kBlockRowsPerBlock = $per_block;  // $block_size threads per block
            static_assert(kWarpSize % kLanesPerBlockRow == 0, "a block row's lanes must not straddle warps");
            """,
            warp=WARP_CONSTANTS,
            rows=block_rows,
            cols=block_cols,
            lanes=lanes,
            per_block=block_rows_per_block,
            block_size=block_size,
        )
        body = fill(
            """
            $sizes
            const int block_row = blockIdx.x * kBlockRowsPerBlock + threadIdx.x / kLanesPerBlockRow;
            const int lane = threadIdx.x % kLanesPerBlockRow;
            float sums[kBlockRows] = {};
            if (block_row < n_block_rows) {
                const int blocks_end = block_row_ptr[block_row + 1];
                for (int b = block_row_ptr[block_row] + lane; b < blocks_end; b += kLanesPerBlockRow) {
                    const float* block = values + (size_t)b * (kBlockRows * kBlockCols);
                    const int first_col = block_col_idx[b] * kBlockCols;  // x is padded to whole blocks
                    float x_part[kBlockCols];
                    #pragma unroll
                    for (int c = 0; c < kBlockCols; ++c) x_part[c] = __ldg(&x[first_col + c]);
                    #pragma unroll
                    for (int r = 0; r < kBlockRows; ++r) {
                        #pragma unroll
                        for (int c = 0; c < kBlockCols; ++c) sums[r] += block[r * kBlockCols + c] * x_part[c];
                    }
                }
            }
            // Lanes past the last block row hold zeros and still shuffle: every lane takes part.
            #pragma unroll
            for (int r = 0; r < kBlockRows; ++r) {
                $fold
            }
            if (lane == 0 && block_row < n_block_rows) {
                #pragma unroll
                for (int r = 0; r < kBlockRows; ++r) {
                    const int row = block_row * kBlockRows + r;
                    if (row < num_rows) y[row] = sums[r];
                }
            }
            """,
            sizes=size_bindings(("num_rows", "m", constants.m)),
            fold=shuffle_fold(["sums[r]"], "kLanesPerBlockRow / 2", "1"),
        )
        return bsr_kernel(block_rows, block_cols, block_size, block_rows_per_block, STRATEGY,
                          preamble, body)  # fmt: skip

    return render


VECTOR_TYPES = {2: ("float2", ("x", "y")), 4: ("float4", ("x", "y", "z", "w"))}

# A block row's lanes in one warp: the lanes of each row fold with shuffles.
WARP_GROUP_FITS = 'static_assert(kWarpSize % kLanesPerBlockRow == 0, "a block row\'s lanes must not straddle warps");'
GROUP_TOTAL = fill(
    """
    // Lanes past the last block row hold zeros and still shuffle: every lane takes
    // part. Lane r < R ends with row r's total.
    $fold
    if (lane < kBlockRows && block_row < n_block_rows) {
        const int row = block_row * kBlockRows + lane;
        if (row < num_rows) y[row] = sum;
    }
    """,
    fold=shuffle_fold(["sum"], "kLanesPerBlockRow / 2", "kBlockRows"),
)

# A block row's lanes over several warps: each warp folds its lanes, and the block row's
# first R threads add the warps' totals up through shared memory.
WARPS_PER_BLOCK_ROW = """\
constexpr int kWarpsPerBlockRow = kLanesPerBlockRow / kWarpSize;
static_assert(kLanesPerBlockRow % kWarpSize == 0, "a block row takes whole warps");"""
WARPS_TOTAL = fill(
    """
    // Lanes past the last block row hold zeros and still shuffle: every lane takes
    // part. Lane r < R of each warp ends with the warp's share of row r; the block
    // row's lane r adds the shares up.
    $fold
    __shared__ float warp_totals[kBlockRowsPerBlock][kWarpsPerBlockRow][kBlockRows];
    const int block_row_in_block = threadIdx.x / kLanesPerBlockRow;
    if (threadIdx.x % kWarpSize < kBlockRows) {
        warp_totals[block_row_in_block][lane / kWarpSize][threadIdx.x % kWarpSize] = sum;
    }
    __syncthreads();
    if (lane < kBlockRows && block_row < n_block_rows) {
        float total = 0.0f;
        #pragma unroll
        for (int w = 0; w < kWarpsPerBlockRow; ++w) total += warp_totals[block_row_in_block][w][lane];
        const int row = block_row * kBlockRows + lane;
        if (row < num_rows) y[row] = total;
    }
    """,
    fold=shuffle_fold(["sum"], "kWarpSize / 2", "kBlockRows"),
)


def bsr_vector_renderer(block_rows: int, block_cols: int):
    """The renderer of the `block_rows` x `block_cols` vector family."""
    vector, components = VECTOR_TYPES[block_cols]

    def render(params: dict[str, int], constants: MatrixConstants) -> str:
        block_size, lanes = params["block_size"], params["lanes_per_block_row"]
        block_rows_per_block = block_size // lanes
        preamble = fill(
            """
            $warp
            constexpr int kBlockRows = $rows;  // R: rows of one dense block ($cols columns: one $vector)
            constexpr int kLanesPerBlockRow = $lanes;  // lanes sharing one block row
            constexpr int kBlocksPerStep = kLanesPerBlockRow / kBlockRows;  // blocks a step covers
            constexpr int kLoadsInFlight = $loads;  // steps whose loads go out together
            constexpr int kBlockRowsPerBlock = $per_block;  // $block_size threads per block
            $lanes_fit
            static_assert(kLanesPerBlockRow % kBlockRows == 0, "each lane keeps one row of the block");

            // One row of a dense block times the block's entries of x.
            __device__ __forceinline__ float row_dot(const $vector a, const $vector b) {
                return $dot;
            }
            """,
            warp=WARP_CONSTANTS,
            rows=block_rows,
            cols=block_cols,
            vector=vector,
            lanes=lanes,
            loads=params["loads_in_flight"],
            per_block=block_rows_per_block,
            block_size=block_size,
            dot=" + ".join(f"a.{c} * b.{c}" for c in components),
            lanes_fit=WARP_GROUP_FITS if lanes <= WARP_SIZE else WARPS_PER_BLOCK_ROW,
        )
        body = fill(
            """
            $sizes
            const int block_row = blockIdx.x * kBlockRowsPerBlock + threadIdx.x / kLanesPerBlockRow;
            const int lane = threadIdx.x % kLanesPerBlockRow;
            const int row_of_block = lane % kBlockRows;  // this lane's row in every block it takes
            // values and x are 16-byte aligned (ABI buffers) and x is padded to whole blocks.
            const $vector* value_rows = reinterpret_cast<const $vector*>(values);
            const $vector* x_blocks = reinterpret_cast<const $vector*>(x);
            float sum = 0.0f;
            if (block_row < n_block_rows) {
                const int blocks_end = block_row_ptr[block_row + 1];
                for (int base = block_row_ptr[block_row] + lane / kBlockRows; base < blocks_end;
                     base += kBlocksPerStep * kLoadsInFlight) {
                    // A batch of (block column, row of values) first, then their x entries:
                    // no load waits for another. Blocks past the row's end are clamped to
                    // its last block and left out of the sum by a select.
                    int block_columns[kLoadsInFlight];
                    $vector entry_rows[kLoadsInFlight];
                    #pragma unroll
                    for (int b = 0; b < kLoadsInFlight; ++b) {
                        const int k = min(base + b * kBlocksPerStep, blocks_end - 1);
                        block_columns[b] = __ldg(&block_col_idx[k]);
                        entry_rows[b] = __ldg(&value_rows[k * kBlockRows + row_of_block]);
                    }
                    #pragma unroll
                    for (int b = 0; b < kLoadsInFlight; ++b) {
                        const float product = row_dot(entry_rows[b], __ldg(&x_blocks[block_columns[b]]));
                        sum += base + b * kBlocksPerStep < blocks_end ? product : 0.0f;
                    }
                }
            }
            $total
            """,
            sizes=size_bindings(("num_rows", "m", constants.m)),
            vector=vector,
            total=GROUP_TOTAL if lanes <= WARP_SIZE else WARPS_TOTAL,
        )
        return bsr_kernel(block_rows, block_cols, block_size, block_rows_per_block,
                          VECTOR_STRATEGY, preamble, body)  # fmt: skip

    return render


def bsr_kernel(block_rows: int, block_cols: int, block_size: int, block_rows_per_block: int,
               strategy: str, preamble: str, body: str) -> str:  # fmt: skip
    """A complete bsr source: one thread block per `block_rows_per_block` block rows."""
    return kernel(
        header=header(
            op="spmv",
            format="bsr",
            params=f"block={block_rows}x{block_cols}",
            grid=f"ceil_div(n_block_rows, {block_rows_per_block})",
            block=block_size,
        ),
        strategy=strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "bsr", block_size),
        body=body,
    )


STRATEGY = (
    "BSR: a group of lanes per block row walks its dense blocks, reusing each loaded x "
    "entry for every row of the block; partial sums are folded with shuffles. Pays when the "
    "nonzeros cluster in small dense blocks (FEM, multi-component PDEs)."
)

VECTOR_STRATEGY = (
    "BSR, one row of a block per lane: each lane loads a whole row of a dense block and the "
    "block's entries of x as one vector each, so a warp's value loads are contiguous; the "
    "lanes of each row are folded with shuffles. Pays on larger matrices of small dense "
    "blocks, where the value stream is most of the traffic."
)


MIN_FULL_2X2_FRACTION = 0.1  # below this the entries hardly cluster into dense blocks


def entries_cluster(features) -> bool:
    """Some entries lie in fully stored 2x2 tiles (4x4 blocks contain such tiles too)."""
    return feature(features, "block_2x2_fraction") >= MIN_FULL_2X2_FRACTION


def bsr_family(block_rows: int, block_cols: int, *, vector: bool = False) -> KernelFamily:
    """`bsr_RxC` (lanes walk whole blocks) or, with `vector`, `bsr_RxC_vector` (a lane per
    row of a block)."""
    if vector:
        space = {"lanes_per_block_row": (8, 32, 128), "loads_in_flight": (2, 4, 6)}
        strategy, renderer = VECTOR_STRATEGY, bsr_vector_renderer(block_rows, block_cols)
    else:
        space = {"lanes_per_block_row": (1, 8, 32)}
        strategy, renderer = STRATEGY, bsr_renderer(block_rows, block_cols)
    return KernelFamily(
        name=f"bsr_{block_rows}x{block_cols}" + ("_vector" if vector else ""),
        op="spmv",
        format="bsr",
        params=f"block={block_rows}x{block_cols}",
        space=space | {"block_size": (128, 256)},
        strategy=strategy,
        renderer=renderer,
        bakes=("m",),
        predicate=entries_cluster,
    )


FAMILIES = tuple(
    bsr_family(size, size, vector=vector) for vector in (False, True) for size in (2, 4)
)
