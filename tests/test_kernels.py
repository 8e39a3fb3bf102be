"""The expert kernel families: ABI conformance, nvcc compiles, ids, pruning, baked constants.

Compiles use the real nvcc (`sparserl.harness.compile_check`); the GPU test runs every
variant through the real harness against scipy's float64 product.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

from sparserl.abi import (
    MAX_U16_COLUMNS,
    SPMM_WIDTHS,
    check_entry_signature,
    parse_format_params,
    parse_header,
)
from sparserl.features import matrix_features
from sparserl.formats import convert
from sparserl.harness import compile_check
from sparserl.io import load_matrix
from sparserl.kernels import (
    FAMILIES,
    KernelVariant,
    MatrixConstants,
    all_variant_sources,
    all_variants,
    example_matrix,
    variants,
)
from sparserl.kernels.coo_panels import COO_PANELS, LARGE_NNZ, LONG_ROW_ENTRIES
from sparserl.kernels.csr_shared_x import MAX_STAGED_COLUMNS

ALL_VARIANTS = all_variants()
COMPILE_THREADS = 2  # the CI machine has two cores


def skewed_matrix(seed: int = 0) -> sp.csr_matrix:
    """1500 x 1300 with power-law row lengths, empty rows and one full row (1300 > 1024
    entries, so csr_rowblocks sees both its single-row and multi-row groups)."""
    rng = np.random.default_rng(seed)
    m, n = 1500, 1300
    lengths = np.minimum(rng.zipf(1.8, m) - 1, n)
    lengths[::7] = 0
    lengths[100] = n
    rows = np.repeat(np.arange(m), lengths)
    cols = np.concatenate([rng.choice(n, size=k, replace=False) for k in lengths])
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(m, n))


def banded_matrix(m: int = 1001, offsets=(-9, -1, 0, 1, 2, 9)) -> sp.csr_matrix:
    """A square band matrix with a few diagonals, m not a multiple of any block size."""
    return sp.diags([np.full(m, 1.0 + k) for k in range(len(offsets))], offsets, (m, m)).tocsr()


def block_matrix(seed: int = 1) -> sp.csr_matrix:
    """Dense 4x4 blocks scattered over a 1002 x 998 matrix (both not multiples of 4)."""
    rng = np.random.default_rng(seed)
    pattern = sp.random(251, 250, density=0.02, random_state=rng, format="csr")
    dense_block = np.ones((4, 4))
    return sp.csr_matrix(sp.kron(pattern, dense_block))[:1002, :998]


def ragged_block_matrix(seed: int = 5) -> sp.csr_matrix:
    """Dense 4x4 blocks over a 1002 x 998 matrix (both not multiples of 4), block rows of
    0 to 250 blocks: every batch of loads meets block rows that end inside it."""
    rng = np.random.default_rng(seed)
    n_block_rows, n_block_cols = 251, 250
    lengths = rng.integers(0, n_block_cols + 1, size=n_block_rows)
    lengths[::9] = 0
    rows = np.repeat(np.arange(n_block_rows), lengths)
    cols = np.concatenate([rng.choice(n_block_cols, size=k, replace=False) for k in lengths])
    pattern = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_block_rows, n_block_cols))
    return sp.csr_matrix(sp.kron(pattern, np.ones((4, 4))))[:1002, :998]


def compile_all(sources: list[str]):
    with ThreadPoolExecutor(COMPILE_THREADS) as pool:
        return list(pool.map(compile_check, sources))


def assert_compiles_clean(variants_to_compile: list[KernelVariant]) -> None:
    results = compile_all([variant.source() for variant in variants_to_compile])
    for variant, result in zip(variants_to_compile, results, strict=True):
        assert result.ok, f"{variant.variant_id}:\n{result.log}"
        assert not result.diagnostics, f"{variant.variant_id}: {result.diagnostics}"
        kernel = result.resources["sparserl_kernel"]
        assert kernel.spill_store_bytes == 0 and kernel.spill_load_bytes == 0, variant.variant_id
        assert kernel.local_bytes == 0, f"{variant.variant_id} uses a stack frame"


# ------------------------------------------------------------------ ABI conformance


@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: v.variant_id)
def test_header_and_signature_follow_the_abi(variant: KernelVariant):
    source = variant.source()
    family = variant.kernel_family
    header = parse_header(source)
    check_entry_signature(source, header.op, header.format)
    assert (header.op, header.format) == (family.op, family.format)
    assert header.params == parse_format_params(family.format, family.format_params(variant.params))
    # The geometry evaluates for a real matrix converted the way the harness does it.
    data = convert(skewed_matrix(), header.format, header.params)
    sizes = dict(data.sizes, N=variant.params.get("N", 1))
    launch = header.launch(sizes)
    expected_block = variant.params.get("block_size") or 32 * variant.params["warps_per_block"]
    assert launch.block == expected_block


def test_variant_ids_are_unique_and_rerender_identically():
    ids = [variant.variant_id for variant in ALL_VARIANTS]
    assert len(set(ids)) == len(ids)
    for variant in ALL_VARIANTS:
        again = KernelVariant.from_dict(variant.to_dict())
        assert again.variant_id == variant.variant_id
        assert again.source() == variant.source()
    assert list(all_variant_sources()) == [variant.source() for variant in ALL_VARIANTS]


def test_every_family_contributes_plain_and_baked_variants():
    plain = {v.family for v in ALL_VARIANTS if v.constants is None}
    baked = {v.family for v in ALL_VARIANTS if v.constants is not None}
    assert plain == set(FAMILIES)
    assert baked == {name for name, family in FAMILIES.items() if family.bakes}
    n_plain = sum(len(list(family.parameter_grid())) for family in FAMILIES.values())
    assert len(ALL_VARIANTS) == n_plain + len(baked)


# ------------------------------------------------------------------ nvcc


def representative_variants() -> list[KernelVariant]:
    """Per family the last point of its grid (largest parameters), plus every baked one."""
    last = {v.family: v for v in ALL_VARIANTS if v.constants is None}
    return list(last.values()) + [v for v in ALL_VARIANTS if v.constants is not None]


def test_representative_variants_compile_without_spills():
    assert_compiles_clean(representative_variants())


@pytest.mark.slow
def test_every_variant_compiles_without_spills():
    assert_compiles_clean(ALL_VARIANTS)


# ------------------------------------------------------------------ selection and params


def test_spmm_variants_are_selected_by_width():
    for width in SPMM_WIDTHS:
        chosen = variants("spmm", n_cols=width)
        assert chosen and all(v.params["N"] == width for v in chosen)
        serving = {f.name for f in FAMILIES.values() if f.op == "spmm" and width in f.space["N"]}
        assert {v.family for v in chosen} == serving
        assert all(f"constexpr int kN = {width};" in v.source() for v in chosen)
    with pytest.raises(ValueError, match="N=48"):
        variants("spmm", n_cols=48)
    with pytest.raises(ValueError, match="only applies to op='spmm'"):
        variants("spmv", n_cols=32)


def test_applicability_prunes_by_structure():
    scattered = {v.family for v in variants("spmv", features=matrix_features(skewed_matrix()))}
    banded = {v.family for v in variants("spmv", features=matrix_features(banded_matrix()))}
    blocks = {v.family for v in variants("spmv", features=matrix_features(block_matrix()))}
    general = {
        "csr_scalar",
        "csr_vector",
        "csr_rowblocks",
        "csr_merge",
        "csr_nnz_split",
        "sell",
        "coo",
        "coo_windowed",  # all three are small: launch-bound
        "csr_shared_x",  # and narrow: x fits a block's shared memory
        "csr_shared_x_u16",  # and n <= 65536: column indices fit 16 bits
        "csr_shared_x_u16_padded",  # (whether padding pays is left to the row lengths)
    }
    # Padding would blow up ELL and DIA; there are no dense blocks; the few long rows of
    # its 1500 call for several warps each, or for HYB's block per long row.
    multiwarp = {"csr_multiwarp", "csr_multiwarp_u16", "csr_multiwarp_u16_padded"}
    assert scattered == general | multiwarp | {"ell_hybrid"}
    assert banded >= general | {"ell", "dia"} and not {"csr_multiwarp", "ell_hybrid"} & banded
    bsr = {"bsr_2x2", "bsr_4x4", "bsr_2x2_vector", "bsr_4x4_vector"}
    assert blocks >= general | {"ell"} | bsr and "ell_hybrid" not in blocks
    with pytest.raises(KeyError, match="ell_fill"):
        FAMILIES["ell"].applicable({"n_rows": 10})


def test_windowed_coo_is_tried_on_small_matrices_and_on_larger_ones_of_short_rows():
    def tried(A):
        return "coo_windowed" in {v.family for v in variants("spmv", features=matrix_features(A))}

    assert tried(skewed_matrix())  # 13,719 entries, longest row 1,300
    about_140_a_row = sp.random(2000, 2000, density=0.07, random_state=0, format="csr")
    assert not tried(about_140_a_row)
    one_huge_row = sp.lil_matrix((3000, 3000))
    one_huge_row[0, :] = 1.0
    assert not tried(one_huge_row.tocsr())
    # 120,000 entries: tried while every row fits the widest window (128), not past it
    short_rows = sp.random(12_000, 12_000, density=1e-3, random_state=0, format="lil")
    assert short_rows.nnz > 100_000 and tried(short_rows.tocsr())
    short_rows[0, :129] = 1.0
    assert not tried(short_rows.tocsr())


def test_windowed_coo_leaves_out_the_long_row_code_when_no_row_spans_windows():
    family, params = FAMILIES["coo_windowed"], {"window": 64, "warps_per_block": 4}
    fits = family.render(params, MatrixConstants(max_row_length=64))
    spans = family.render(params, MatrixConstants(max_row_length=65))
    assert "row_after" not in fits and "kLongRowSlotsPerLane" not in fits
    assert "row_after" in spans and "row_after" in family.render(params)  # not baked: kept


def test_multiwarp_blocks_hold_whole_rows():
    family = FAMILIES["csr_multiwarp"]
    grid = list(family.parameter_grid())
    assert {params["warps_per_row"] for params in grid} == {1, 2, 4, 8, 16}
    assert all(params["block_size"] == max(256, 32 * params["warps_per_row"]) for params in grid)
    with pytest.raises(ValueError, match="not a valid combination"):
        family.render({"warps_per_row": 16, "loads_in_flight": 4, "block_size": 256})
    # 16 warps per row are timed only where the mean row fills half their lanes.
    sixteen = {"warps_per_row": 16, "loads_in_flight": 4, "block_size": 512}
    assert family.fits(np.full(10, 256), sixteen) and not family.fits(np.full(10, 255), sixteen)


def test_16_bit_column_families_are_tried_only_where_columns_fit_16_bits():
    def tried(A):
        return {v.family for v in variants("spmv", features=matrix_features(A))}

    narrow = sp.random(100, 65_536, density=0.01, random_state=0, format="csr")
    wide = sp.random(100, 65_537, density=0.01, random_state=0, format="csr")
    assert "csr_multiwarp_u16" in tried(narrow) and "csr_multiwarp" in tried(narrow)
    assert "csr_multiwarp_u16" not in tried(wide) and "csr_multiwarp" in tried(wide)


def scattered_matrix(seed: int = 2) -> sp.csr_matrix:
    """70,001 x 70,003 with about 4 random columns per row and 5 rows of 20,000 entries:
    many (panel, row group) tiles, long rows cut into chunks, and m not a multiple of 4."""
    rng = np.random.default_rng(seed)
    A = sp.random(70_001, 70_003, density=4 / 70_003, random_state=rng, format="lil")
    for row in rng.choice(70_001, size=5, replace=False):
        A[row, rng.choice(70_003, size=20_000, replace=False)] = 1.0
    return sp.csr_matrix(A)


def test_panels_are_tried_only_on_large_matrices_with_scattered_columns():
    def tried(A):
        return "coo_panels" in {v.family for v in variants("spmv", features=matrix_features(A))}

    assert tried(scattered_matrix())
    assert not tried(banded_matrix(m=100_000))  # x reads stay near the diagonal
    assert not tried(skewed_matrix())  # 13,719 entries: launch-bound


def test_panel_tiles_and_chunks_grow_with_the_matrix():
    """Below LARGE_NNZ entries the small tiles with chunks of 4096; from there on the large
    ones with 32 entries per thread, their row sums within the reward's 48 KB."""

    def kept(row_lengths):
        grid = COO_PANELS.parameter_grid()
        return [params for params in grid if COO_PANELS.fits(row_lengths, params)]

    small = kept(np.full(100_000, 10))
    large = kept(np.full(LARGE_NNZ // 10, 10))
    assert len(small) == len(large) == 16
    assert all(p["long_rows"] == 0 for p in small + large)  # no row is long enough to split
    assert {(p["rows"], p["columns"], p["chunk"]) for p in small} == {
        (rows, columns, 4096) for rows in (4096, 8192) for columns in (4096, 32768)
    }
    assert all(p["chunk"] == 32 * p["block_size"] and p["columns"] >= 32768 for p in large)
    (tallest,) = compile_all([COO_PANELS.render(max(large, key=lambda p: p["rows"]))])
    assert tallest.resources["sparserl_kernel"].shared_bytes <= 48 * 1024


def test_panels_split_long_rows_off_only_column_sorted_tiles_of_matrices_that_have_them():
    grid = list(COO_PANELS.parameter_grid())
    with_long_rows = np.append(np.full(100_000, 10), [LONG_ROW_ENTRIES] * 3)
    kept = [p for p in grid if COO_PANELS.fits(with_long_rows, p)]
    split = [p for p in kept if p["long_rows"]]
    assert len(kept) == 24 and len(split) == 8
    assert all(p["column_sorted"] == 1 for p in split)


def test_rows_are_padded_only_where_they_differ_and_padding_at_most_doubles_the_entries():
    padded = [family for family in FAMILIES.values() if family.name.endswith("_padded")]
    assert {family.name for family in padded} == {
        "csr_multiwarp_u16_padded",
        "csr_shared_x_u16_padded",
    }
    pruned_layer = np.random.default_rng(0).binomial(4608, 0.1, size=512)  # 461 +- 20
    one_long_row = np.append(np.full(511, 461), 1000)  # 2.2 slots per entry once padded
    for family in padded:
        grid = list(family.parameter_grid())
        unpadded = FAMILIES[family.name.removesuffix("_padded")]
        assert grid == list(unpadded.parameter_grid())
        assert [family.fits(pruned_layer, p) for p in grid] == [
            unpadded.fits(pruned_layer, p) for p in grid
        ]
        assert not any(family.fits(np.full(512, 461), p) for p in grid)  # already fixed
        assert not any(family.fits(one_long_row, p) for p in grid)


def test_padded_rows_bake_the_longest_row_and_read_row_ptr_only_unbaked():
    family = FAMILIES["csr_multiwarp_u16_padded"]
    params = {"block_size": 256, "loads_in_flight": 4, "warps_per_row": 8}
    baked = family.render(params, MatrixConstants.from_matrix(skewed_matrix()))
    plain = family.render(params)
    assert "params: pad_rows=1" in baked and "params: pad_rows=1" in plain
    assert "kRowLength = 1300;" in baked and "row_ptr[" not in baked
    assert "row_ptr[row]" in plain


def widest_staged_x_matrix(seed: int = 3) -> sp.csr_matrix:
    """300 x MAX_STAGED_COLUMNS (x fills the shared-memory budget; n not a multiple of 8)
    with row lengths from 0 to 2,000: every lane group and batch sees rows past its width."""
    rng = np.random.default_rng(seed)
    m, n = 300, MAX_STAGED_COLUMNS
    lengths = rng.integers(0, 2000, size=m)
    lengths[::11] = 0
    rows = np.repeat(np.arange(m), lengths)
    cols = np.concatenate([rng.choice(n, size=k, replace=False) for k in lengths])
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(m, n))


def widest_u16_matrix(seed: int = 4) -> sp.csr_matrix:
    """200 x 65,536 (the most columns 16-bit indices hold), rows of 0 to 3,000 entries, the
    last column in every fifth row: a 16-bit index read as signed would go negative."""
    rng = np.random.default_rng(seed)
    m, n = 200, MAX_U16_COLUMNS
    lengths = rng.integers(0, 3000, size=m)
    lengths[::13] = 0
    columns = [rng.choice(n - 1, size=k, replace=False) for k in lengths]
    columns = [
        np.append(c[:-1], n - 1) if r % 5 == 0 and len(c) else c for r, c in enumerate(columns)
    ]
    rows = np.repeat(np.arange(m), [len(c) for c in columns])
    cols = np.concatenate(columns)
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(m, n))


def test_shared_x_is_tried_only_where_x_fits_shared_memory():
    def tried(A):
        return "csr_shared_x" in {v.family for v in variants("spmv", features=matrix_features(A))}

    assert tried(sp.random(512, 4608, density=0.1, random_state=0, format="csr"))  # a layer
    assert tried(widest_staged_x_matrix())
    assert not tried(sp.random(300, MAX_STAGED_COLUMNS + 1, density=0.01, format="csr"))
    assert not tried(sp.csr_matrix((300, 1000)))  # no entries


def test_shared_b_tiles_are_tried_only_where_rows_share_columns():
    layer = sp.random(512, 4608, density=0.1, random_state=0, format="csr")  # a pruned layer
    tiled = {v.family for v in variants("spmm", 128, features=matrix_features(layer))}
    assert {"csr_spmm_shared_tile", "column_tiles_spmm"} <= tiled
    for sparse in (skewed_matrix(), banded_matrix()):
        families = {v.family for v in variants("spmm", 128, features=matrix_features(sparse))}
        assert not {"csr_spmm_shared_tile", "column_tiles_spmm"} & families


def test_off_grid_parameters_are_rejected_with_the_family_name():
    with pytest.raises(ValueError, match="csr_vector.*threads_per_row=3"):
        FAMILIES["csr_vector"].render({"threads_per_row": 3, "block_size": 128})
    with pytest.raises(ValueError, match="missing \\['block_size'\\]"):
        KernelVariant("csr_vector", {"threads_per_row": 4})
    with pytest.raises(ValueError, match="unknown kernel family 'csr_magic'"):
        KernelVariant("csr_magic", {})


# ------------------------------------------------------------------ baked constants


def test_constants_from_matrix_match_the_harness_formats(shared_data):
    real = load_matrix(shared_data / "suitesparse" / "HB__bcsstk01.mtx.gz")
    for A in (real, example_matrix()):
        constants = MatrixConstants.from_matrix(A)
        dia = convert(A, "dia")
        assert constants.dia_offsets == tuple(dia.arrays["offsets"].tolist())
        assert constants.max_row_length == convert(A, "ell").sizes["width"]
        assert (constants.m, constants.n, constants.nnz) == (*A.shape, dia.sizes["nnz"])
    assert MatrixConstants.from_matrix(example_matrix()).fixed_row_length == 5
    skewed = MatrixConstants.from_matrix(skewed_matrix())
    assert skewed.fixed_row_length is None
    assert skewed.dia_offsets is None  # far more than MAX_BAKED_DIAGONALS diagonals


def test_baked_constants_change_the_code():
    constants = MatrixConstants.from_matrix(example_matrix())
    scalar = KernelVariant("csr_scalar", {"block_size": 128}, constants).source()
    body = scalar[scalar.index("sparserl_kernel(") :]
    assert "row_ptr[" not in body.split("{", 1)[1]  # the row extent is computed, not read
    assert "constexpr int num_rows = 4096;" in scalar
    dia = KernelVariant("dia", {"block_size": 128}, constants).source()
    listed = ", ".join(str(offset) for offset in constants.dia_offsets)
    assert f"kDiagonalOffsets[9] = {{{listed}}}" in dia
    # Constants a family cannot use are dropped, so the variant equals the plain one.
    sell = KernelVariant("sell", {"block_size": 128}, constants)
    assert sell.constants is None
    assert sell == KernelVariant("sell", {"block_size": 128})


# ------------------------------------------------------------------ GPU


@pytest.mark.gpu
def test_every_variant_is_correct_on_the_gpu():
    """Every plain variant on three structures, every baked one on its own matrix."""
    from sparserl.harness import Harness, Verdict

    plain = [v for v in ALL_VARIANTS if v.constants is None]
    baked = [v for v in ALL_VARIANTS if v.constants is not None]
    cases = [(A, plain) for A in (skewed_matrix(), banded_matrix(), block_matrix())]
    cases.append((example_matrix(), baked))
    failures = []
    with Harness(seed=0) as harness:
        for A, chosen in cases:
            for op, width in [("spmv", None)] + [("spmm", w) for w in SPMM_WIDTHS]:
                group = [v for v in chosen if v.kernel_family.op == op]
                group = [v for v in group if width is None or v.params["N"] == width]
                sources = [v.source() for v in group]
                results = harness.evaluate_many(sources, A, op, width, time=False)
                failures += [
                    f"{v.variant_id} on {A.shape}: {r.verdict.value} {r.detail}"
                    for v, r in zip(group, results, strict=True)
                    if r.verdict is not Verdict.CORRECT
                ]
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("family", "make_matrix"),
    [
        # many (panel, row group) tiles, long rows cut into chunks, m not a multiple of 4
        ("coo_panels", scattered_matrix),
        # x as wide as the shared-memory budget allows, empty and long rows
        ("csr_shared_x", widest_staged_x_matrix),
        ("csr_shared_x_u16", widest_staged_x_matrix),
        # every column index a 16-bit index can hold, long and empty rows
        ("csr_multiwarp_u16", widest_u16_matrix),
        ("csr_multiwarp_u16_padded", widest_u16_matrix),
        ("csr_shared_x_u16_padded", widest_staged_x_matrix),
        # every batch length, empty block rows, a padded last block row and block column
        ("bsr_2x2_vector", ragged_block_matrix),
        ("bsr_4x4_vector", ragged_block_matrix),
    ],
)
def test_family_is_correct_on_the_structure_it_is_for(family, make_matrix):
    """Every variant of `family` on a matrix at the edge of what it was built for, plain
    and baked with the matrix's constants."""
    from sparserl.harness import Harness, Verdict

    A = make_matrix()
    grid = list(FAMILIES[family].parameter_grid())
    chosen = [KernelVariant(family, p) for p in grid]
    chosen += [KernelVariant(family, p, MatrixConstants.from_matrix(A)) for p in grid]
    with Harness(seed=0) as harness:
        results = harness.evaluate_many([v.source() for v in chosen], A, "spmv", None, time=False)
    failures = [
        f"{v.variant_id}: {r.verdict.value} {r.detail}"
        for v, r in zip(chosen, results, strict=True)
        if r.verdict is not Verdict.CORRECT
    ]
    assert grid and not failures, "\n".join(failures)


@pytest.mark.gpu
def test_every_applicable_variant_is_correct_on_every_shared_suitesparse_matrix(shared_data):
    """Each shared SuiteSparse matrix, SpMV and SpMM N = 8, 32, 128: every plain variant of
    the families the autotuner would try on it (its applicability pruning) is correct."""
    from sparserl.datasets.local import LocalMatrixCollection
    from sparserl.harness import Harness, Verdict

    collection = LocalMatrixCollection(shared_data / "suitesparse")
    failures, checked = [], 0
    with Harness(seed=0) as harness:
        for name in collection.names():
            A = collection.load(name)
            features = matrix_features(A)
            for op, width in [("spmv", None)] + [("spmm", w) for w in (8, 32, 128)]:
                group = variants(op, n_cols=width, features=features)
                results = harness.evaluate_many(
                    [v.source() for v in group], A, op, width, time=False
                )
                checked += len(group)
                failures += [
                    f"{v.variant_id} on {name}: {r.verdict.value} {r.detail}"
                    for v, r in zip(group, results, strict=True)
                    if r.verdict is not Verdict.CORRECT
                ]
    print(f"{checked} (variant, matrix, op) checks on {len(collection)} matrices")
    assert len(collection) >= 100 and not failures, "\n".join(failures)
