"""DIA SpMV family: one thread per row, a loop over the occupied diagonals.

`data[d*m + r]` holds A[r, r + offsets[d]], so consecutive threads (rows) read
consecutive addresses of each diagonal, and x is read at consecutive columns too.
Baking the offsets puts them in a `__constant__` array (a broadcast read, the same
address for the whole warp) and fixes the loop's trip count so it unrolls.
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

MIN_DIA_FILL = 0.1  # below this the diagonal slab is over 10x the stored entries


def render_dia(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size = params["block_size"]
    baked_offsets = constants.dia_offsets
    preamble = f"constexpr int kBlockSize = {block_size};  // threads per block, one row each"
    if baked_offsets is not None:
        listed = ", ".join(str(offset) for offset in baked_offsets)
        preamble += (
            "\n// Baked: the occupied diagonals (column - row), in the order of `data`.\n"
            f"__constant__ int kDiagonalOffsets[{len(baked_offsets)}] = {{{listed}}};"
        )
    n_diagonals = len(baked_offsets) if baked_offsets is not None else None
    body = fill(
        """
        $sizes
        const int row = blockIdx.x * kBlockSize + threadIdx.x;
        if (row >= num_rows) return;
        float sum = 0.0f;
        $unroll
        for (int d = 0; d < num_diagonals; ++d) {
            const int col = row + $offset;
            // Slots outside the matrix hold 0.0, but x must not be read out of bounds.
            if (col >= 0 && col < num_cols) {
                sum += data[(size_t)d * num_rows + row] * __ldg(&x[col]);
            }
        }
        y[row] = sum;
        """,
        sizes=size_bindings(
            ("num_rows", "m", constants.m),
            ("num_cols", "n", constants.n),
            ("num_diagonals", "n_diags", n_diagonals),
        ),
        unroll=unroll_pragma(n_diagonals),
        offset="kDiagonalOffsets[d]" if baked_offsets is not None else "__ldg(&offsets[d])",
    )
    return kernel(
        header=header(op="spmv", format="dia", grid=f"ceil_div(m, {block_size})", block=block_size),
        strategy=DIA.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "dia", block_size),
        body=body,
    )


def dia_pays(features) -> bool:
    return feature(features, "dia_fill") >= MIN_DIA_FILL


DIA = KernelFamily(
    name="dia",
    op="spmv",
    format="dia",
    params="-",
    space={"block_size": (128, 256)},
    strategy="DIA: one thread per row loops over the occupied diagonals; every load is "
    "coalesced and no column index is stored. Pays on banded and stencil matrices with few "
    "diagonals; baked offsets unroll the loop.",
    renderer=render_dia,
    bakes=("m", "n", "dia_offsets"),
    predicate=dia_pays,
)

FAMILIES = (DIA,)
