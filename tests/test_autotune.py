"""The autotuner's CPU side: candidate pruning by structure, and the result's arithmetic."""

from __future__ import annotations

import pytest

from sparserl.autotune import TunedVariant, TuningResult, candidates
from sparserl.datasets.synthetic import make
from sparserl.kernels import MatrixConstants


def lane_groups(chosen) -> set[int]:
    return {v.params["threads_per_row"] for v in chosen if v.family == "csr_vector"}


def test_lane_groups_follow_the_mean_row_length():
    assert lane_groups(candidates(make("uniform_random", 100_000), "spmv")) == {4, 8, 16, 32}
    assert lane_groups(candidates(make("pruned_weights", 1_000_000), "spmv")) == {32}


def hyb_widths(A) -> set[int]:
    return {v.params["width"] for v in candidates(A, "spmv") if v.family == "ell_hybrid"}


def test_hyb_is_timed_only_at_widths_whose_long_rows_pad_little():
    # 8 rows of 2,500 among rows of at most 19: from width 20 on only those 8 are long; at
    # 16 and 8, rows of 17 to 19 entries join them and would be padded to 2,500.
    assert hyb_widths(make("row_skewed", 100_000)) == {20, 24, 32}
    # Long rows of 33 to 1,065 entries at every width: the padded slab would be mostly padding.
    assert hyb_widths(make("power_law", 100_000)) == set()


def test_candidates_bake_the_matrix_and_serve_one_width():
    A = make("stencil_2d", 100_000)
    chosen = candidates(A, "spmm", 32)
    assert chosen and all(v.params["N"] == 32 for v in chosen)
    assert {v.family for v in chosen} >= {"csr_spmm_nnz_split", "csr_spmm_warp_float4"}
    constants = MatrixConstants.from_matrix(A)
    assert all(v.constants is None or v.constants.m == constants.m for v in chosen)


def test_banded_matrices_get_dia_and_scattered_ones_do_not():
    assert "dia" in {v.family for v in candidates(make("banded", 100_000), "spmv")}
    assert "dia" not in {v.family for v in candidates(make("power_law", 100_000), "spmv")}


def tuning(format: str, best_us: float, preprocessing_s: float) -> TuningResult:
    variant = {
        "variant_id": "x",
        "family": "x",
        "params": {},
        "format": format,
        "format_params": "-",
    }
    best = TunedVariant(variant, best_us, best_us + 2.0, None, 10.0 / best_us)
    return TuningResult(
        fingerprint="f", op="spmv", n_cols=None, device="d", nnz=1, baseline_name="b",
        baseline_device_warm_us=10.0, baseline_device_cold_us=None, baseline_latency_warm_us=12.0,
        ranked=[best], preprocessing_s={format: preprocessing_s} if format != "csr" else {},
    )  # fmt: skip


def test_break_even_counts_the_conversion_against_the_time_saved():
    assert tuning("ell", 5.0, 0.001).break_even_calls() == pytest.approx(200.0)  # 1000 us / 5 us
    assert tuning("csr", 5.0, 0.0).break_even_calls() == 0.0
    assert tuning("ell", 12.0, 0.001).break_even_calls() is None  # slower: never pays


def test_tuning_result_round_trips_through_a_dict():
    result = tuning("sell", 4.0, 0.002)
    assert TuningResult.from_dict(result.to_dict()) == result
    assert result.best_speedup == pytest.approx(2.5)
