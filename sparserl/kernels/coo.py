"""COO SpMV family: a run of consecutive entries per thread, finished with atomicAdd.

Entries are sorted by row, so a thread that owns `entries_per_thread` consecutive entries
sums each run of equal rows locally and adds it to y with one atomicAdd; rows that span
threads simply receive several adds. The harness zeroes y first (`init: zero`). The
work per thread is the same whatever the row lengths, which pays on power-law rows; with
one entry per thread it is the classic one-atomic-per-entry kernel.
"""

from __future__ import annotations

from sparserl.kernels.family import KernelFamily, MatrixConstants
from sparserl.kernels.render import entry_signature, fill, header, kernel, size_bindings


def render_coo(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size, entries = params["block_size"], params["entries_per_thread"]
    preamble = fill(
        """
        constexpr int kBlockSize = $block_size;
        constexpr int kEntriesPerThread = $entries;  // consecutive entries each thread owns
        """,
        block_size=block_size,
        entries=entries,
    )
    body = fill(
        """
        $sizes
        const int first_entry = (blockIdx.x * kBlockSize + threadIdx.x) * kEntriesPerThread;
        if (first_entry >= num_nonzeros) return;
        const int end_entry = min(first_entry + kEntriesPerThread, num_nonzeros);
        int current_row = row_idx[first_entry];
        float sum = 0.0f;
        for (int k = first_entry; k < end_entry; ++k) {
            const int row = row_idx[k];
            if (row != current_row) {  // the run of current_row ends here
                atomicAdd(&y[current_row], sum);
                current_row = row;
                sum = 0.0f;
            }
            sum += values[k] * __ldg(&x[col_idx[k]]);
        }
        atomicAdd(&y[current_row], sum);
        """,
        sizes=size_bindings(("num_nonzeros", "nnz", constants.nnz)),
    )
    return kernel(
        header=header(
            op="spmv",
            format="coo",
            grid=f"max(ceil_div(nnz, {block_size * entries}), 1)",  # one block even when nnz = 0
            block=block_size,
            init="zero",
        ),
        strategy=COO.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "coo", block_size),
        body=body,
    )


COO = KernelFamily(
    name="coo",
    op="spmv",
    format="coo",
    params="-",
    space={"entries_per_thread": (1, 4, 16), "block_size": (256,)},
    strategy="COO with atomics: each thread sums a run of consecutive entries per row and "
    "adds it to y atomically (output zeroed first). Balanced whatever the row lengths; pays "
    "on power-law rows and very sparse matrices with many empty rows.",
    renderer=render_coo,
    bakes=("nnz",),
)

FAMILIES = (COO,)
