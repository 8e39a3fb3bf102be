"""COO-windowed SpMV family: a warp per window of row-aligned COO slots, summed with shuffles.

The `coo_windowed` format packs whole rows into windows of `window` slots (padding
after the last row that fits), so no row is shared between two warps and no atomics
or zeroing are needed. Each lane loads its window/32 consecutive slots (row, column
and value, as vector loads), then every x entry at once: two dependent memory trips
before the reduction, against three for CSR (row pointer, entries, x). That is what
the time of a small matrix is made of. A lane sums its own runs of equal rows; runs
that cross lanes are summed along chains of lanes with one shuffle scan. A row longer
than a window fills windows of its own: the warp of its first window adds them up,
LONG_ROW_SLOTS slots per pass, and the warps of the others leave at once; the first
pass's loads are issued before the first window's x values are used, so they overlap.
With a baked longest row that fits a window, the long-row code is left out (a quarter
of the registers).
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
)

MAX_NNZ = 100_000  # above this the matrix is no longer launch-bound and CSR families win,
MAX_SHORT_ROW_NNZ = 1_000_000  # except up to here when every row fits the widest window
MAX_ROW_LENGTH = 2048  # a longer row takes one warp many dependent trips
WIDEST_WINDOW = 128
LONG_ROW_SLOTS = 512  # slots of a long row a warp loads in one pass (16 per lane)


def chain_lanes(max_row_length: int | None, slots_per_lane: int) -> str:
    """`kMaxChainLanes`: the most lanes one row's run can span. The sums along chains of
    lanes take log2 of it shuffle steps, so a baked short longest row saves steps."""
    if max_row_length is None:
        return "constexpr int kMaxChainLanes = kWarpSize;"
    span = min(-(-(max(max_row_length, 1) - 1) // slots_per_lane) + 1, WARP_SIZE)
    return (
        f"constexpr int kMaxChainLanes = {span};  // baked: the longest row has "
        f"{max_row_length} entries"
    )


def lane_slot_loads(slots_per_lane: int) -> str:
    """Load lane `lane`'s consecutive slots of rows, columns and values (vector loads)."""
    targets = (("row_idx", "int", "rows"), ("col_idx", "int", "columns"))
    targets += (("values", "float", "products"),)
    if slots_per_lane == 1:
        return "\n".join(f"{target}[0] = {array}[base + lane];" for array, _, target in targets)
    lines = []
    for array, ctype, target in targets:
        vector = f"{ctype}{slots_per_lane}"
        lines.append(f"const {vector} {target}_{vector} = reinterpret_cast<const {vector}*>(")
        lines.append(f"    {array} + base)[lane];")
        fields = "xyzw"[:slots_per_lane]
        lines.append(
            " ".join(f"{target}[{k}] = {target}_{vector}.{f};" for k, f in enumerate(fields))
        )
    return "\n".join(lines)


def render_coo_windowed(params: dict[str, int], constants: MatrixConstants) -> str:
    window, warps_per_block = params["window"], params["warps_per_block"]
    slots_per_lane = window // WARP_SIZE
    rows_span_windows = constants.max_row_length is None or constants.max_row_length > window
    preamble = fill(
        """
        $warp
        constexpr int kWarpsPerBlock = $warps_per_block;
        constexpr int kWindow = $window;  // slots per warp window (the format's window)
        constexpr int kSlotsPerLane = $slots_per_lane;  // consecutive slots, in row order
        constexpr int kPaddingRow = -1;  // row_idx of a padding slot (column 0, value 0.0)
        $long_row_slots
        $chain_lanes
        """,
        warp=WARP_CONSTANTS,
        warps_per_block=warps_per_block,
        window=window,
        slots_per_lane=slots_per_lane,
        long_row_slots=(
            f"constexpr int kLongRowSlotsPerLane = {LONG_ROW_SLOTS // WARP_SIZE};"
            "  // per pass over a long row"
            if rows_span_windows
            else f"// baked: no row is longer than a window ({constants.max_row_length} entries)"
        ),
        chain_lanes=chain_lanes(constants.max_row_length, slots_per_lane),
    )
    body = fill(
        """
        const int lane = threadIdx.x % kWarpSize;
        const int window = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
        if (window >= n_windows) return;  // whole warps leave together
        const int base = window * kWindow;
        // Every load of the window at once: the lane's slots$neighbour_note
        // and the x entries of the lane's columns.
        int rows[kSlotsPerLane], columns[kSlotsPerLane];
        float products[kSlotsPerLane];
        $loads
        $neighbour_rows
        float x_values[kSlotsPerLane];  // in flight while the runs of equal rows are found
        #pragma unroll
        for (int k = 0; k < kSlotsPerLane; ++k) x_values[k] = __ldg(&x[columns[k]]);
        $long_row

        // The lane's runs of equal rows: its first run (head) may have begun in earlier
        // lanes and its last (tail) may go on in later ones; a run between them is whole.
        const int head_row = rows[0];
        const int tail_row = rows[kSlotsPerLane - 1];
        float head = 0.0f, tail = 0.0f;
        #pragma unroll
        for (int k = 0; k < kSlotsPerLane; ++k) {
            products[k] *= x_values[k];
            if (rows[k] == head_row) head += products[k];
            if (rows[k] == tail_row) tail += products[k];
        }
        #pragma unroll
        for (int k = 1; k + 1 < kSlotsPerLane; ++k) {
            if (rows[k] != rows[k - 1] && rows[k] != tail_row && rows[k] != kPaddingRow) {
                float run = 0.0f;
                #pragma unroll
                for (int i = k; i + 1 < kSlotsPerLane; ++i) run += rows[i] == rows[k] ? products[i] : 0.0f;
                y[rows[k]] = run;
            }
        }
        // Runs that cross lanes: a chain of lanes shares one run. Sum the tails along each
        // chain (a scan that restarts where a chain starts), then each lane's head adds
        // what its chain carried in.
        const int previous_tail_row = __shfl_up_sync(kFullWarpMask, tail_row, 1);
        const int next_head_row = __shfl_down_sync(kFullWarpMask, head_row, 1);
        const bool head_continues = lane > 0 && head_row == previous_tail_row;
        const bool whole_lane = head_row == tail_row;
        const bool tail_goes_on = lane < kWarpSize - 1 && tail_row == next_head_row;
        const unsigned chain_starts = __ballot_sync(kFullWarpMask, !(whole_lane && head_continues));
        const unsigned lanes_up_to_here = (2u << lane) - 1u;  // wraps to all lanes for lane 31
        const int chain_start = kWarpSize - 1 - __clz(chain_starts & lanes_up_to_here);
        float chain = tail;
        #pragma unroll
        for (int offset = 1; offset < kMaxChainLanes; offset *= 2) {
            const float other = __shfl_up_sync(kFullWarpMask, chain, offset);
            if (offset <= lane - chain_start) chain += other;
        }
        const float carried = __shfl_up_sync(kFullWarpMask, chain, 1);
        const float head_total = head + (head_continues ? carried : 0.0f);
        if (head_row != kPaddingRow && !(whole_lane && tail_goes_on)) y[head_row] = head_total;
        if (!whole_lane && tail_row != kPaddingRow && !tail_goes_on) y[tail_row] = tail;
        """,
        loads=lane_slot_loads(slots_per_lane),
        neighbour_note=", the rows just before and after the window," if rows_span_windows else "",
        neighbour_rows=NEIGHBOUR_ROWS if rows_span_windows else "",
        long_row=long_row() if rows_span_windows else "",
    )
    return kernel(
        header=header(
            op="spmv",
            format="coo_windowed",
            params=COO_WINDOWED.format_params(params),
            grid=f"ceil_div(n_windows, {warps_per_block})",
            block=32 * warps_per_block,
        ),
        strategy=COO_WINDOWED.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "coo_windowed", 32 * warps_per_block),
        body=body,
    )


# The row that ends just before the window and the one that starts just after it: a long
# row spans windows when it is one of them.
NEIGHBOUR_ROWS = """\
const int num_slots = n_windows * kWindow;
const int row_before = base > 0 ? row_idx[base - 1] : kPaddingRow;
const int row_after = base + kWindow < num_slots ? row_idx[base + kWindow] : kPaddingRow;"""


def long_row() -> str:
    """A window inside a long row leaves; the first window of one sums the whole row."""
    return fill(
        """
        const int first_row = __shfl_sync(kFullWarpMask, rows[0], 0);
        if (first_row != kPaddingRow && first_row == row_before) return;  // a long row's tail

        if (first_row != kPaddingRow && first_row == row_after) {
            // A long row: this window and the next ones hold it alone (padding adds 0).
            // Each pass has every load in flight; a slot of the next row, or past the end,
            // adds nothing. This window's products are added once the first pass's loads
            // are issued, so its x reads and those loads overlap.
            float sum = 0.0f;
            bool row_goes_on = true;
            for (int next = base + kWindow; row_goes_on; next += kLongRowSlotsPerLane * kWarpSize) {
                int slot_rows[kLongRowSlotsPerLane], slot_columns[kLongRowSlotsPerLane];
                float slot_values[kLongRowSlotsPerLane];
                #pragma unroll
                for (int i = 0; i < kLongRowSlotsPerLane; ++i) {
                    const int slot = next + i * kWarpSize + lane;
                    const bool inside = slot < num_slots;
                    slot_rows[i] = inside ? row_idx[slot] : kPaddingRow;
                    slot_columns[i] = inside ? col_idx[slot] : 0;
                    slot_values[i] = inside ? values[slot] : 0.0f;
                }
                if (next == base + kWindow) {
                    #pragma unroll
                    for (int k = 0; k < kSlotsPerLane; ++k) sum += products[k] * x_values[k];
                }
                #pragma unroll
                for (int i = 0; i < kLongRowSlotsPerLane; ++i) {
                    const float product = slot_values[i] * __ldg(&x[slot_columns[i]]);
                    sum += slot_rows[i] == first_row ? product : 0.0f;
                }
                const int last_row = slot_rows[kLongRowSlotsPerLane - 1];
                row_goes_on = __shfl_sync(kFullWarpMask, last_row, kWarpSize - 1) == first_row;
            }
            $fold
            if (lane == 0) y[first_row] = sum;
            return;
        }
        """,
        fold=shuffle_fold(["sum"], "kWarpSize / 2", "1"),
    )


def small_or_short_rows(features) -> bool:
    """Launch-bound matrices whose longest row spans few windows, and matrices up to
    MAX_SHORT_ROW_NNZ whose every row fits the widest window (meshes, road-like graphs):
    there the two memory trips still beat CSR's three (2-18 % ahead of the best other
    family on six such matrices on the H100)."""
    nnz, longest = feature(features, "nnz"), feature(features, "row_length_max")
    return (nnz < MAX_NNZ and longest <= MAX_ROW_LENGTH) or (
        nnz < MAX_SHORT_ROW_NNZ and longest <= WIDEST_WINDOW
    )


COO_WINDOWED = KernelFamily(
    name="coo_windowed",
    op="spmv",
    format="coo_windowed",
    params="window=$window",
    space={"window": (32, 64, WIDEST_WINDOW), "warps_per_block": (4, 8)},
    strategy="COO in row-aligned warp windows: each lane loads its slots' rows, columns and "
    "values at once, then their x entries, and shuffles sum the runs of equal rows. Two "
    "memory trips instead of CSR's three; pays on small matrices, where latency is the time, "
    "and on larger ones whose rows are all short.",
    renderer=render_coo_windowed,
    bakes=("max_row_length",),
    predicate=small_or_short_rows,
)

FAMILIES = (COO_WINDOWED,)
