"""nnz-split CSR families: every warp takes the same number of entries, whatever the rows.

A warp owns `entries_per_warp` consecutive entries of the CSR arrays. It finds the row
holding its first entry with a warp-wide search on `row_ptr` (32 probes per step, so
about log32(m) dependent loads), then walks the row segments that fall in its share:
a segment is summed by the warp, and its total is stored, or added atomically when
the row is cut by a share boundary (the output is zeroed first, `init: zero`).
Long rows are thus spread over many warps, and few-but-long rows (pruned DNN layers)
keep the whole GPU busy.

- csr_nnz_split (SpMV): the share's products are staged in shared memory (coalesced
  loads); a lane sums each short row segment, the whole warp each long one.
- csr_spmm_nnz_split (SpMM): as csr_spmm_warp_float4, lanes own 4 columns each and
  spare lanes split the segment's entries.
"""

from __future__ import annotations

from sparserl.abi import SPMM_WIDTHS
from sparserl.kernels.family import KernelFamily, MatrixConstants
from sparserl.kernels.render import (
    WARP_CONSTANTS,
    WARP_LOWER_BOUND,
    WARP_SIZE,
    entry_signature,
    fill,
    header,
    kernel,
    shuffle_fold,
    size_bindings,
)
from sparserl.kernels.spmm import BATCHED_PRODUCTS, baked_width, float4_products

WARP_SHARE_START = """\
const int lane = threadIdx.x % kWarpSize;
const int warp = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
const int first_entry = warp * kEntriesPerWarp;
if (first_entry >= num_nonzeros) return;  // the whole warp leaves together
const int end_entry = min(first_entry + kEntriesPerWarp, num_nonzeros);
// The row holding first_entry: the last r with row_ptr[r] <= first_entry (row_ptr[0] = 0
// and row_ptr[num_rows] = nnz bound the search to [1, num_rows)).
int row = warp_lower_bound(row_ptr, 1, num_rows, first_entry + 1, lane) - 1;"""


def share_preamble(params: dict[str, int]) -> str:
    return fill(
        """
        $warp
        constexpr int kWarpsPerBlock = $warps;
        constexpr int kEntriesPerWarp = $entries;  // each warp's share of the entries
        """,
        warp=WARP_CONSTANTS,
        warps=params["warps_per_block"],
        entries=params["entries_per_warp"],
    )


def share_kernel(family: KernelFamily, params: dict[str, int], preamble: str, body: str) -> str:
    """Assemble an nnz-split source: the header (one warp per share of the entries, output
    zeroed first), the family's preamble, the row search and the entry kernel."""
    entries, warps = params["entries_per_warp"], params["warps_per_block"]
    return kernel(
        header=header(
            op=family.op,
            format="csr",
            grid=f"max(ceil_div(nnz, {entries * warps}), 1)",
            block=warps * WARP_SIZE,
            init="zero",
        ),
        strategy=family.strategy,
        preamble=preamble + "\n\n" + WARP_LOWER_BOUND,
        signature=entry_signature(family.op, "csr", warps * WARP_SIZE),
        body=body,
    )


def render_csr_nnz_split(params: dict[str, int], constants: MatrixConstants) -> str:
    preamble = fill(
        """
        $share
        constexpr int kLongSegment = kWarpSize;  // longer row segments are summed by the warp
        """,
        share=share_preamble(params),
    )
    body = fill(
        """
        __shared__ float staged_products[kWarpsPerBlock][kEntriesPerWarp];
        float* products = staged_products[threadIdx.x / kWarpSize];
        $sizes
        $start
        // 1. Every product of the share, coalesced, into shared memory.
        for (int k = first_entry + lane; k < end_entry; k += kWarpSize) {
            products[k - first_entry] = values[k] * __ldg(&x[col_idx[k]]);
        }
        __syncwarp();
        // 2. The share's rows, 32 at a time, a lane each. A lane sums a short segment alone;
        // long segments are then summed by the whole warp, one after another.
        for (int base_row = row;; base_row += kWarpSize) {
            const int lane_row = base_row + lane;
            const bool in_share = lane_row < num_rows && row_ptr[lane_row] < end_entry;
            if (__ballot_sync(kFullWarpMask, in_share) == 0) break;
            int segment_start = 0, segment_end = 0;
            bool whole_row = false;
            if (in_share) {
                const int lane_row_start = row_ptr[lane_row];
                const int lane_row_end = row_ptr[lane_row + 1];
                segment_start = max(lane_row_start, first_entry) - first_entry;
                segment_end = min(lane_row_end, end_entry) - first_entry;
                whole_row = lane_row_start >= first_entry && lane_row_end <= end_entry;
            }
            const bool is_long = segment_end - segment_start > kLongSegment;
            if (in_share && !is_long) {
                float sum = 0.0f;
                for (int k = segment_start; k < segment_end; ++k) sum += products[k];
                if (whole_row) {
                    y[lane_row] = sum;  // the whole row is in this warp's share
                } else {
                    atomicAdd(&y[lane_row], sum);  // other warps add the rest of the row
                }
            }
            for (unsigned long_lanes = __ballot_sync(kFullWarpMask, is_long); long_lanes != 0;
                 long_lanes &= long_lanes - 1) {
                const int owner = __ffs(long_lanes) - 1;
                const int long_start = __shfl_sync(kFullWarpMask, segment_start, owner);
                const int long_end = __shfl_sync(kFullWarpMask, segment_end, owner);
                float sum = 0.0f;
                for (int k = long_start + lane; k < long_end; k += kWarpSize) sum += products[k];
                $fold
                const float total = __shfl_sync(kFullWarpMask, sum, 0);  // the fold ends in lane 0
                if (lane == owner) {
                    if (whole_row) {
                        y[lane_row] = total;
                    } else {
                        atomicAdd(&y[lane_row], total);
                    }
                }
            }
        }
        """,
        sizes=size_bindings(("num_rows", "m", constants.m), ("num_nonzeros", "nnz", constants.nnz)),
        start=WARP_SHARE_START,
        fold=shuffle_fold(["sum"], "kWarpSize / 2", "1"),
    )
    return share_kernel(CSR_NNZ_SPLIT, params, preamble, body)


def spmm_share_kernel(
    family: KernelFamily,
    params: dict[str, int],
    constants,
    segment_loop: str,
    preamble_extra: str = "",
) -> str:
    """An nnz-split SpMM source: walk the share's row segments, run `segment_loop` on each
    (it adds entries segment_start..segment_end-1 of the row into the float4 `sum`), fold
    the entry slices and store, or add atomically when a share boundary cuts the row."""
    preamble = fill(
        """
        $share
        $width
        constexpr int kColumnLanes = kN / 4 < kWarpSize ? kN / 4 : kWarpSize;  // float4 each
        constexpr int kEntrySlices = kWarpSize / kColumnLanes;  // lanes that split a segment
        static_assert(kColumnLanes * 4 == kN, "every column lane owns exactly one float4");
        $extra
        """,
        share=share_preamble(params),
        width=baked_width(params["N"]),
        extra=preamble_extra,
    )
    body = fill(
        """
        $sizes
        $start
        const int column_lane = lane % kColumnLanes;
        const int entry_slice = lane / kColumnLanes;
        // B and C rows are 16-byte aligned (N is a multiple of 4): read them as float4.
        const float4* b_vectors = reinterpret_cast<const float4*>(B);
        int row_start = row_ptr[row];
        while (true) {
            const int row_end = row_ptr[row + 1];
            const int segment_start = max(row_start, first_entry);
            const int segment_end = min(row_end, end_entry);
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            $segment_loop
            // Lanes column_lane + s * kColumnLanes hold the same columns: fold them.
            $fold
            if (entry_slice == 0) {
                float* c = C + (size_t)row * kN + column_lane * 4;
                if (row_start >= first_entry && row_end <= end_entry) {
                    *reinterpret_cast<float4*>(c) = sum;  // the whole row is in this share
                } else {
                    atomicAdd(c, sum.x);  // other warps add the rest of the row
                    atomicAdd(c + 1, sum.y);
                    atomicAdd(c + 2, sum.z);
                    atomicAdd(c + 3, sum.w);
                }
            }
            if (row_end >= end_entry) break;
            ++row;
            row_start = row_end;
        }
        """,
        sizes=size_bindings(("num_rows", "m", constants.m), ("num_nonzeros", "nnz", constants.nnz)),
        start=WARP_SHARE_START,
        segment_loop=segment_loop,
        fold=shuffle_fold(["sum.x", "sum.y", "sum.z", "sum.w"], "kWarpSize / 2", "kColumnLanes"),
    )
    return share_kernel(family, params, preamble, body)


def render_csr_spmm_nnz_split(params: dict[str, int], constants: MatrixConstants) -> str:
    segment_loop = float4_products("segment_start", "segment_end")
    return spmm_share_kernel(CSR_SPMM_NNZ_SPLIT, params, constants, segment_loop)


def render_csr_spmm_nnz_batched(params: dict[str, int], constants: MatrixConstants) -> str:
    extra = fill(
        """
        constexpr int kLoadsInFlight = $batch;  // B rows each lane loads before it adds
        static_assert(kEntrySlices * kLoadsInFlight <= kWarpSize, "a batch fits in one chunk");
        """,
        batch=params["loads_in_flight"],
    )
    segment_loop = fill(
        """
        // 32 entries at a time: each lane loads one (column, value) pair, coalesced; the warp
        // hands them round by shuffles, and each lane issues kLoadsInFlight B loads before it
        // adds any, so the loads overlap instead of waiting for each other. Lanes past the chunk
        // repeat its first column (a valid address); a select leaves their products out.
        for (int chunk = segment_start; chunk < segment_end; chunk += kWarpSize) {
            const int chunk_length = min(kWarpSize, segment_end - chunk);
            const int lane_entry = chunk + min(lane, chunk_length - 1);
            const int lane_column = col_idx[lane_entry];
            const float lane_value = values[lane_entry];
            $products
        }
        """,
        products=BATCHED_PRODUCTS,
    )
    return spmm_share_kernel(CSR_SPMM_NNZ_BATCHED, params, constants, segment_loop, extra)


CSR_NNZ_SPLIT = KernelFamily(
    name="csr_nnz_split",
    op="spmv",
    format="csr",
    params="-",
    space={"entries_per_warp": (128, 256, 512), "warps_per_block": (4,)},
    strategy="nnz-split CSR: each warp takes entries_per_warp consecutive entries, finds its "
    "first row by a warp-wide search on row_ptr and stages the products in shared memory; "
    "a lane sums each short row segment, the warp each long one; rows cut by a share "
    "boundary are finished with atomicAdd (output zeroed first). Pays on skewed rows and "
    "on few, long rows.",
    renderer=render_csr_nnz_split,
    bakes=("m", "nnz"),
)

CSR_SPMM_NNZ_SPLIT = KernelFamily(
    name="csr_spmm_nnz_split",
    op="spmm",
    format="csr",
    params="-",
    space={"N": SPMM_WIDTHS, "entries_per_warp": (32, 128, 512), "warps_per_block": (4,)},
    strategy="nnz-split CSR SpMM: each warp takes entries_per_warp consecutive entries, finds "
    "its first row by a warp-wide search; lanes own float4 columns of B and C, spare lanes "
    "split each row segment; rows cut by a share boundary are added atomically (output "
    "zeroed first). Pays on skewed rows and on few, long rows.",
    renderer=render_csr_spmm_nnz_split,
    bakes=("m", "nnz"),
)

CSR_SPMM_NNZ_BATCHED = KernelFamily(
    name="csr_spmm_nnz_batched",
    op="spmm",
    format="csr",
    params="-",
    space={
        "N": (32, 128),
        "entries_per_warp": (128, 512),
        "loads_in_flight": (4, 8),
        "warps_per_block": (4,),
    },  # fmt: skip
    strategy="nnz-split CSR SpMM with batched loads: as csr_spmm_nnz_split, but each lane "
    "takes 32 (column, value) pairs at a time, hands them round by shuffles and issues "
    "loads_in_flight B row loads before adding any. Pays for wide N on long rows, where B "
    "traffic waits on memory latency.",
    renderer=render_csr_spmm_nnz_batched,
    bakes=("m", "nnz"),
)

FAMILIES = (CSR_NNZ_SPLIT, CSR_SPMM_NNZ_SPLIT, CSR_SPMM_NNZ_BATCHED)
