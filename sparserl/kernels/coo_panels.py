"""COO-panels SpMV family: a block per chunk of a (column panel x row group) tile.

When the columns of a large matrix are scattered, every entry's x read is a 32-byte
sector fetched from L2 into the SM: x is too big for an SM's L1 to keep, and one
SM's rows touch all of it. The `coo_panels` format cuts the columns into panels of
`columns` and the rows into groups of `rows`; the entries of one (panel, row group)
tile are stored together, in chunks of at most `chunk`. A block takes one chunk, so
its x reads stay inside one panel (16-256 KB of x) and many of its entries share each
sector. It adds its products into a shared-memory partial sum per row of the tile,
then adds those into y with one vector atomic per four rows (the output is zeroed
first).

A tile pays when it holds many entries per x sector and per row, and there must still
be a few chunks per SM. So the tile shapes come in two regimes, by the matrix's size:
- below LARGE_NNZ entries: tiles of 4096-8192 rows x 4096-32768 columns, chunks of 4096;
- from LARGE_NNZ on (x of megabytes, entries 1e-5 dense): tiles of 8192-12288 rows x
  32768-65536 columns, chunks of 32 entries per thread (16384 or 32768). 12288 row sums
  are 48 KB, the most a block keeps without the reward's shared-memory penalty.

Two orders of the entries inside a tile, two ways of summing:
- column_sorted=0 (row, then column): a warp's entries come in runs of equal rows, which
  a segmented shuffle scan sums, so a long row costs one shared atomic per warp pass.
- column_sorted=1 (column, then row): neighbouring lanes read neighbouring x entries, and
  each product is added with its own shared atomic (rows rarely repeat within a warp).

A row with thousands of entries in one tile (the hubs of a power-law graph, the long rows
of a skewed matrix) turns column order's shared atomics into a queue on one address:
row_skewed 1e7 took 446 us that way against 100 us in row order. With long_rows=L
(column order only), the rows with at least L entries in a tile are stored after the
tile's other entries, in row order, in chunks of their own that the scan sums.
"""

from __future__ import annotations

from sparserl.kernels.family import KernelFamily, MatrixConstants, feature
from sparserl.kernels.render import WARP_CONSTANTS, entry_signature, fill, header, kernel

MIN_NNZ = 100_000  # smaller matrices are launch-bound: the zeroing and flush do not pay
MIN_COLUMN_SPREAD = 32768  # bandwidth (columns) past which x no longer fits an SM's L1 share
LOADS_IN_FLIGHT = 4  # entries a thread loads before it reads their x values
LARGE_NNZ = 4_000_000  # from here on the large tiles (see the module docstring)
SMALL_CHUNK = 4096  # entries per chunk below LARGE_NNZ
LARGE_CHUNK_PER_THREAD = 32  # entries per thread of a chunk from LARGE_NNZ on
SMALL_TILES = {"rows": (4096, 8192), "columns": (4096, 32768)}
LARGE_TILES = {"rows": (8192, 12288), "columns": (32768, 65536)}
LONG_ROW_ENTRIES = 64  # a row's entries in one tile from which column order queues on it


def render_coo_panels(params: dict[str, int], constants: MatrixConstants) -> str:
    block_size, tile_rows = params["block_size"], params["rows"]
    column_sorted, long_rows = params["column_sorted"], params["long_rows"]
    preamble = fill(
        """
        $warp
        constexpr int kBlockSize = $block_size;
        constexpr int kTileRows = $tile_rows;  // the format's rows: one partial sum per row
        constexpr int kLoadsInFlight = $batch;
        constexpr int kLocalColumnBits = 16;  // local_idx = local row << 16 | local column
        constexpr int kLocalColumnMask = (1 << kLocalColumnBits) - 1;
        """,
        warp=WARP_CONSTANTS if column_sorted == 0 or long_rows else "",  # for the scan
        block_size=block_size,
        tile_rows=tile_rows,
        batch=LOADS_IN_FLIGHT,
    )
    body = fill(
        """
        __shared__ __align__(16) float row_sums[kTileRows];
        const int chunk = blockIdx.x;
        if (chunk >= n_chunks) return;  // only when the matrix has no entries
        const int chunk_start = chunk_ptr[chunk];
        const int chunk_end = chunk_ptr[chunk + 1];
        $first_row
        const float* x_panel = x + chunk_column[chunk];  // every column of the chunk is in it
        const int tile_rows = min(kTileRows, m - first_row);
        for (int i = threadIdx.x; i < kTileRows; i += kBlockSize) row_sums[i] = 0.0f;
        __syncthreads();

        $accumulate

        // Flush: four rows per vector atomic (y + first_row is 16-byte aligned, as
        // kTileRows is a multiple of 4); rows without entries in this chunk add nothing.
        __syncthreads();
        for (int i = 4 * threadIdx.x; i < tile_rows; i += 4 * kBlockSize) {
            const float4 sums = *reinterpret_cast<const float4*>(&row_sums[i]);
            if (sums.x == 0.0f && sums.y == 0.0f && sums.z == 0.0f && sums.w == 0.0f) continue;
            float* out = y + first_row + i;
            if (i + 4 <= tile_rows) {
                atomicAdd(reinterpret_cast<float4*>(out), sums);
            } else {  // the matrix's last rows: no vector past y's end
                atomicAdd(&out[0], sums.x);
                if (i + 1 < tile_rows) atomicAdd(&out[1], sums.y);
                if (i + 2 < tile_rows) atomicAdd(&out[2], sums.z);
            }
        }
        """,
        first_row=first_row_of_chunk(long_rows),
        accumulate=accumulate(column_sorted, long_rows),
    )
    return kernel(
        header=header(
            op="spmv",
            format="coo_panels",
            params=COO_PANELS.format_params(params),
            grid="max(n_chunks, 1)",
            block=block_size,
            init="zero",
        ),
        strategy=COO_PANELS.strategy,
        preamble=preamble,
        signature=entry_signature("spmv", "coo_panels", block_size),
        body=body,
    )


def first_row_of_chunk(long_rows: int) -> str:
    """The chunk's first row; with long rows split off, also whether it holds them."""
    if not long_rows:
        return "const int first_row = chunk_row[chunk];"
    return """\
// A chunk of a tile's long rows (in row order) stores its first row as ~first_row (< 0).
const bool long_row_chunk = chunk_row[chunk] < 0;
const int first_row = long_row_chunk ? ~chunk_row[chunk] : chunk_row[chunk];"""


def accumulate(column_sorted: int, long_rows: int) -> str:
    """The chunk's products into row_sums: by the scan in row order, by an atomic each in
    column order, and with long rows split off, by the scan on their chunks."""
    if column_sorted == 0:
        return segmented_accumulate()
    if not long_rows:
        return atomic_accumulate()
    return fill(
        """
        if (long_row_chunk) {  // a few rows of many entries: a shared atomic per run
            $segmented
        } else {
            $atomic
        }
        """,
        segmented=segmented_accumulate(),
        atomic=atomic_accumulate(),
    )


def segmented_accumulate() -> str:
    """Row-sorted chunk: each warp takes kLoadsInFlight x 32 consecutive entries per pass
    and sums runs of equal rows with a segmented scan before the shared atomics."""
    return """\
// Each warp takes 32 * kLoadsInFlight consecutive entries per pass: the loads first, then
// the x reads, then per batch a scan that sums each run of equal rows across lanes.
const int lane = threadIdx.x % kWarpSize;
const int warp = threadIdx.x / kWarpSize;
for (int base = chunk_start + warp * kWarpSize * kLoadsInFlight; base < chunk_end;
     base += kBlockSize * kLoadsInFlight) {
    int local[kLoadsInFlight];
    float products[kLoadsInFlight];
    #pragma unroll
    for (int b = 0; b < kLoadsInFlight; ++b) {
        const int k = min(base + b * kWarpSize + lane, chunk_end - 1);  // past the end: dropped
        local[b] = local_idx[k];
        products[b] = values[k];
    }
    #pragma unroll
    for (int b = 0; b < kLoadsInFlight; ++b) {
        products[b] *= __ldg(&x_panel[local[b] & kLocalColumnMask]);
    }
    #pragma unroll
    for (int b = 0; b < kLoadsInFlight; ++b) {
        const bool inside = base + b * kWarpSize + lane < chunk_end;
        const int row = inside ? local[b] >> kLocalColumnBits : -1;
        float run = products[b];
        #pragma unroll
        for (int offset = 1; offset < kWarpSize; offset *= 2) {  // sum of the run up to this lane
            const float other = __shfl_up_sync(kFullWarpMask, run, offset);
            const int other_row = __shfl_up_sync(kFullWarpMask, row, offset);
            if (lane >= offset && other_row == row) run += other;
        }
        const int next_row = __shfl_down_sync(kFullWarpMask, row, 1);
        if (inside && (lane == kWarpSize - 1 || next_row != row)) atomicAdd(&row_sums[row], run);
    }
}"""


def atomic_accumulate() -> str:
    """Column-sorted chunk: each product goes into its row's sum with a shared atomic."""
    return """\
// Each thread takes entries kBlockSize apart, kLoadsInFlight of them per pass.
for (int base = chunk_start + threadIdx.x; base < chunk_end;
     base += kBlockSize * kLoadsInFlight) {
    int local[kLoadsInFlight];
    float products[kLoadsInFlight];
    #pragma unroll
    for (int b = 0; b < kLoadsInFlight; ++b) {
        const int k = min(base + b * kBlockSize, chunk_end - 1);  // past the end: dropped
        local[b] = local_idx[k];
        products[b] = values[k];
    }
    #pragma unroll
    for (int b = 0; b < kLoadsInFlight; ++b) {
        products[b] *= __ldg(&x_panel[local[b] & kLocalColumnMask]);
    }
    #pragma unroll
    for (int b = 0; b < kLoadsInFlight; ++b) {
        if (base + b * kBlockSize < chunk_end) {
            atomicAdd(&row_sums[local[b] >> kLocalColumnBits], products[b]);
        }
    }
}"""


def columns_are_scattered(features) -> bool:
    """Large enough not to be launch-bound, and with entries far enough from the diagonal
    that a row's x reads spread past what an SM's L1 keeps."""
    return (
        feature(features, "nnz") >= MIN_NNZ and feature(features, "bandwidth") >= MIN_COLUMN_SPREAD
    )


def regime_of(params) -> dict[str, tuple[int, ...]] | None:
    """The tile regime (SMALL_TILES or LARGE_TILES) a parameter choice belongs to, or None
    when its tile shape and chunk mix the two."""
    if params["chunk"] == SMALL_CHUNK:
        tiles = SMALL_TILES
    elif params["chunk"] == LARGE_CHUNK_PER_THREAD * params["block_size"]:
        tiles = LARGE_TILES
    else:
        return None
    shape_in_regime = params["rows"] in tiles["rows"] and params["columns"] in tiles["columns"]
    return tiles if shape_in_regime else None


def is_a_kernel(params) -> bool:
    """Tile shape and chunk size come from the same regime, and long rows are split off
    only from column order (row order sums them by the scan already)."""
    return regime_of(params) is not None and (params["long_rows"] == 0 or params["column_sorted"])


def fits_size_and_rows(row_lengths, params) -> bool:
    """The small tiles below LARGE_NNZ entries, the large ones from there on; long rows
    split off only where some row is that long."""
    large = int(row_lengths.sum()) >= LARGE_NNZ
    long_rows = params["long_rows"]
    worth_splitting = long_rows == 0 or (len(row_lengths) > 0 and row_lengths.max() >= long_rows)
    return regime_of(params) is (LARGE_TILES if large else SMALL_TILES) and worth_splitting


COO_PANELS = KernelFamily(
    name="coo_panels",
    op="spmv",
    format="coo_panels",
    params="rows=$rows columns=$columns column_sorted=$column_sorted chunk=$chunk "
    "long_rows=$long_rows",
    space={
        "rows": (4096, 8192, 12288),
        "columns": (4096, 32768, 65536),
        "column_sorted": (0, 1),
        "block_size": (512, 1024),
        "chunk": (SMALL_CHUNK, 16384, 32768),
        "long_rows": (0, LONG_ROW_ENTRIES),
    },
    strategy="COO panels: the matrix cut into tiles of `rows` rows x `columns` columns, a "
    "block per chunk (at most `chunk` entries) of a tile, so its x reads stay in one "
    "panel. Products are summed per row in shared memory (runs of a row-sorted chunk by a "
    "shuffle scan first; with `long_rows`, a column-sorted tile's rows of that many entries "
    "are kept in row order for the scan) and added to the zeroed y with one vector atomic "
    "per four rows. Pays on large matrices with scattered columns, where x sectors fetched "
    "from L2 are the time.",
    renderer=render_coo_panels,
    predicate=columns_are_scattered,
    fits=fits_size_and_rows,
    valid=is_a_kernel,
)

FAMILIES = (COO_PANELS,)
