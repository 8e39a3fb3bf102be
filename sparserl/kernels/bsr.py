"""BSR SpMV families for 2x2 and 4x4 blocks: a group of lanes per block row.

Each lane keeps R partial sums (one per row of the block row), walks every
`lanes_per_block_row`-th block of its block row, loads the C entries of x the block
touches once and multiplies the dense R x C block (row-major) against them. With one lane
per block row there is no reduction; with 8 or 32 the partial sums are folded with
shuffles. Rows of the padded last block row past m are not written (the ABI's rule).
"""

from __future__ import annotations

from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import (
    WARP_CONSTANTS,
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
        return kernel(
            header=header(
                op="spmv",
                format="bsr",
                params=f"block={block_rows}x{block_cols}",
                grid=f"ceil_div(n_block_rows, {block_rows_per_block})",
                block=block_size,
            ),
            strategy=STRATEGY,
            preamble=preamble,
            signature=entry_signature("spmv", "bsr", block_size),
            body=body,
        )

    return render


STRATEGY = (
    "BSR: a group of lanes per block row walks its dense blocks, reusing each loaded x "
    "entry for every row of the block; partial sums are folded with shuffles. Pays when the "
    "nonzeros cluster in small dense blocks (FEM, multi-component PDEs)."
)


MIN_FULL_2X2_FRACTION = 0.1  # below this the entries hardly cluster into dense blocks


def entries_cluster(features) -> bool:
    """Some entries lie in fully stored 2x2 tiles (4x4 blocks contain such tiles too)."""
    return feature(features, "block_2x2_fraction") >= MIN_FULL_2X2_FRACTION


def bsr_family(block_rows: int, block_cols: int) -> KernelFamily:
    return KernelFamily(
        name=f"bsr_{block_rows}x{block_cols}",
        op="spmv",
        format="bsr",
        params=f"block={block_rows}x{block_cols}",
        space={"lanes_per_block_row": (1, 8, 32), "block_size": (128, 256)},
        strategy=STRATEGY,
        renderer=bsr_renderer(block_rows, block_cols),
        bakes=("m",),
        predicate=entries_cluster,
    )


FAMILIES = (bsr_family(2, 2), bsr_family(4, 4))
