"""Shared emission helpers: the ABI header, the entry signature and small CUDA fragments.

Kernel templates are `string.Template` texts, so CUDA's braces stay as they are and
`$name` marks a hole. A hole alone on its line gives its indentation to every line
of the fragment it receives (and an empty fragment removes the line), so multi-line
fragments nest cleanly inside loops and branches.
"""

from __future__ import annotations

import re
import textwrap
from string import Template

from sparserl.abi import ENTRY_NAME, entry_parameter_names, entry_parameter_types

WARP_SIZE = 32
FULL_UNROLL_LIMIT = 32  # a loop with a baked trip count up to this is unrolled completely
PARTIAL_UNROLL = 4  # unroll factor for longer loops with a baked trip count

WARP_CONSTANTS = """\
constexpr int kWarpSize = 32;
constexpr unsigned kFullWarpMask = 0xffffffffu;  // every lane of the warp takes part"""

_LONE_HOLE = re.compile(r"(\s*)\$(\w+)\s*")


def fill(template: str, **holes: object) -> str:
    """Dedent `template` and substitute its `$holes` (a missing hole raises KeyError)."""
    lines: list[str] = []
    for line in textwrap.dedent(template).strip("\n").split("\n"):
        lone = _LONE_HOLE.fullmatch(line)
        if lone is None:
            lines.append(Template(line).substitute(holes))
            continue
        indent, name = lone.groups()
        fragment = str(holes[name])
        lines.extend(indent + part if part else "" for part in fragment.split("\n") if fragment)
    return "\n".join(lines)


def header(
    *,
    op: str,
    format: str,
    grid: str,
    block: int,
    params: str = "-",
    shared: str = "0",
    init: str = "none",
) -> str:
    """The `/*@sparserl ... */` block of docs/kernel_abi.md with every key spelled out."""
    return "\n".join(
        [
            "/*@sparserl",
            f"op: {op}",
            f"format: {format}",
            f"params: {params}",
            f"grid: {grid}",
            f"block: {block}",
            f"shared: {shared}",
            f"init: {init}",
            "*/",
        ]
    )


def entry_signature(op: str, format: str, block_size: int) -> str:
    """`extern "C" __global__ void sparserl_kernel(...)` with the ABI's types, in order.

    Pointers get `__restrict__` (the buffers never alias), and `__launch_bounds__`
    tells the register allocator the block size the header launches with.
    """
    types = entry_parameter_types(op, format)
    names = entry_parameter_names(op, format)
    parameters = [
        f"{ctype} __restrict__ {name}" if ctype.endswith("*") else f"{ctype} {name}"
        for ctype, name in zip(types, names, strict=True)
    ]
    joined = ",\n    ".join(parameters)
    return (
        f'extern "C" __global__ void __launch_bounds__({block_size}) {ENTRY_NAME}(\n    {joined})'
    )


def kernel(*, header: str, strategy: str, signature: str, body: str, preamble: str = "") -> str:
    """Assemble a complete source: header, strategy comment, file-scope code, entry kernel."""
    comment = "\n".join("// " + line for line in textwrap.wrap(strategy, 92))
    entry = f"{signature}\n{{\n{textwrap.indent(body, '    ')}\n}}"
    return "\n\n".join(part for part in (header, comment, preamble, entry) if part) + "\n"


def size_bindings(*bindings: tuple[str, str, int | None]) -> str:
    """Declare local sizes as (local name, ABI scalar, baked value or None).

    A baked value becomes a `constexpr` the compiler folds into the code; otherwise
    the local copies the launch argument, so the body reads the same either way.
    """
    lines = []
    for local, scalar, baked in bindings:
        if baked is None:
            lines.append(f"const int {local} = {scalar};")
        else:
            lines.append(f"constexpr int {local} = {baked};  // baked for this matrix ({scalar})")
    return "\n".join(lines)


def unroll_pragma(trip_count: int | None) -> str:
    """`#pragma unroll` for a loop with a baked trip count; nothing when it is not known."""
    if trip_count is None:
        return ""
    if trip_count <= FULL_UNROLL_LIMIT:
        return "#pragma unroll"
    return f"#pragma unroll {PARTIAL_UNROLL}"


def csr_row_extent(row: str, fixed_row_length: int | None) -> str:
    """Declare `row_start` and `row_end`, the entries of CSR row `row`.

    With a baked fixed row length the extent is computed, and `row_ptr` is never read.
    """
    if fixed_row_length is None:
        return f"const int row_start = row_ptr[{row}];\nconst int row_end = row_ptr[{row} + 1];"
    return fill(
        """
        constexpr int kRowLength = $length;  // baked: every row stores exactly $length entries
        const int row_start = $row * kRowLength;
        const int row_end = row_start + kRowLength;
        """,
        length=fixed_row_length,
        row=row,
    )


def shuffle_fold(variables: list[str], highest_offset: str, lowest_offset: str) -> str:
    """Add lane `l + offset` into lane `l` for offset = highest, highest/2, ..., lowest.

    After the loop the lowest `lowest_offset` lanes of each group of `2*highest_offset`
    lanes hold the group's totals. Every lane of the warp must execute it.
    """
    adds = "\n".join(
        f"{name} += __shfl_down_sync(kFullWarpMask, {name}, offset);" for name in variables
    )
    return fill(
        """
        #pragma unroll
        for (int offset = $highest; offset >= $lowest; offset /= 2) {
            $adds
        }
        """,
        highest=highest_offset,
        lowest=lowest_offset,
        adds=adds,
    )


def block_sum_function() -> str:
    """`block_sum(value, warp_totals)`: the sum of `value` over the whole block.

    Needs kWarpSize, kFullWarpMask and kWarpsPerBlock; `warp_totals` is shared memory of
    kWarpsPerBlock floats. The total is valid in thread 0, and every thread of the block
    must call it.
    """
    return fill(
        """
        // Sum of `value` over the whole block; the total is valid in thread 0.
        // Every thread of the block must call it.
        __device__ __forceinline__ float block_sum(float value, float* warp_totals)
        {
            $fold
            const int lane = threadIdx.x % kWarpSize;
            const int warp = threadIdx.x / kWarpSize;
            if (lane == 0) warp_totals[warp] = value;
            __syncthreads();
            value = lane < kWarpsPerBlock ? warp_totals[lane] : 0.0f;
            if (warp == 0) {
                $fold
            }
            return value;
        }
        """,
        fold=shuffle_fold(["value"], "kWarpSize / 2", "1"),
    )


def batched_row_sum(col_idx: str = "col_idx", values: str = "values") -> str:
    """Add this thread's share of one CSR row's products into `sum`.

    kThreadsPerRow threads share the row `row_start .. row_end - 1`; thread
    `thread_in_row` takes every kThreadsPerRow-th entry and loads kLoadsInFlight
    (column, value) pairs before it reads their x entries, so that many loads are in
    flight at once. `col_idx` and `values` name the row's arrays.
    """
    return fill(
        """
        for (int base = row_start + thread_in_row; base < row_end;
             base += kThreadsPerRow * kLoadsInFlight) {
            // A batch of (column, value) pairs first, then their x entries, then the
            // sums: no load waits for another. Entries past the row end are clamped to
            // its last entry (a valid address) and left out of the sum by a select.
            int columns[kLoadsInFlight];
            float entry_values[kLoadsInFlight];
            float x_values[kLoadsInFlight];
            #pragma unroll
            for (int b = 0; b < kLoadsInFlight; ++b) {
                const int k = min(base + b * kThreadsPerRow, row_end - 1);
                columns[b] = $col_idx[k];
                entry_values[b] = $values[k];
            }
            #pragma unroll
            for (int b = 0; b < kLoadsInFlight; ++b) x_values[b] = __ldg(&x[columns[b]]);
            #pragma unroll
            for (int b = 0; b < kLoadsInFlight; ++b) {
                const bool in_row = base + b * kThreadsPerRow < row_end;
                sum += in_row ? entry_values[b] * x_values[b] : 0.0f;
            }
        }
        """,
        col_idx=col_idx,
        values=values,
    )


# The row's warps add up (csr_multiwarp, csr_shared_x): each warp's first lane leaves its
# folded sum in warp_totals[row_in_block][warp of the row], then the row's first thread
# stores the total into y.
WARPS_ROW_TOTAL = """\
if (threadIdx.x % kWarpSize == 0) {
    warp_totals[row_in_block][thread_in_row / kWarpSize] = sum;
}
__syncthreads();
if (thread_in_row == 0 && row < num_rows) {
    float total = 0.0f;
    #pragma unroll
    for (int w = 0; w < kWarpsPerRow; ++w) total += warp_totals[row_in_block][w];
    y[row] = total;
}"""


# A warp-wide binary search (csr_spmm_lockstep: a row's first entry in a column slice;
# the nnz-split families: the row holding a warp's first entry).
WARP_LOWER_BOUND = """\
// The first index i in [start, end) with array[i] >= value, or `end` if there is none
// (array ascends on [start, end)). The warp searches together: each step probes 32 evenly
// spaced indices, one per lane, and keeps the part after the last probe below `value`.
__device__ __forceinline__ int warp_lower_bound(const int* __restrict__ array, int start,
                                                int end, int value, int lane)
{
    int low = start, high = end;  // the answer lies in [low, high]
    while (low < high) {
        const int step = (high - low + kWarpSize - 1) / kWarpSize;
        const int probe = low + lane * step;
        const bool below = probe < high && array[probe] < value;
        const unsigned found = __ballot_sync(kFullWarpMask, below);
        if (found == 0) break;  // array[low] >= value already
        const int last_below = low + (kWarpSize - 1 - __clz(found)) * step;
        low = last_below + 1;
        high = min(last_below + step, high);  // the next probe is not below `value`
    }
    return low;
}"""
