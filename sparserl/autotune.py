"""Per-matrix autotuning over the expert kernel families.

For a matrix and an operation, the `Autotuner` picks the variants that suit the
matrix's structure (each family's `applicable` rule, then a pruning of parameters
that cannot pay, see `candidates`), bakes the matrix's constants in, evaluates them
through the harness interleaved with cuSPARSE, and ranks the correct ones by warm
device time. Results are cached on disk by matrix fingerprint, op, width and GPU.

    with Harness() as harness:
        tuned = Autotuner(harness).tune(A, "spmv")
        tuned.best.variant_id, tuned.best_speedup, tuned.break_even_calls()
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from sparserl.features import fingerprint, matrix_features
from sparserl.formats import canonical_csr, convert
from sparserl.harness.results import TimingConfig, Verdict
from sparserl.kernels import KernelVariant, MatrixConstants, variants


@dataclass
class TunedVariant:
    """One correct variant with its times in microseconds and speedup over cuSPARSE-best
    (warm device time; > 1 means faster)."""

    variant: dict  # KernelVariant.to_dict() plus "format" and "format_params"
    device_warm_us: float
    latency_warm_us: float
    device_cold_us: float | None
    speedup: float

    @property
    def variant_id(self) -> str:
        return self.variant["variant_id"]

    def source(self) -> str:
        return KernelVariant.from_dict(self.variant).source()


@dataclass
class TuningResult:
    """What the autotuner found for one (matrix, op, width) on one GPU.

    ranked: the correct variants, fastest first. failed: variant id -> 'verdict: detail'.
    baseline_*: cuSPARSE-best (its algorithm name and times in microseconds).
    preprocessing_s: host seconds to convert the CSR input into each format used.
    """

    fingerprint: str
    op: str
    n_cols: int | None
    device: str
    nnz: int
    baseline_name: str
    baseline_device_warm_us: float
    baseline_device_cold_us: float | None
    baseline_latency_warm_us: float
    ranked: list[TunedVariant]
    failed: dict[str, str] = field(default_factory=dict)
    preprocessing_s: dict[str, float] = field(default_factory=dict)

    @property
    def best(self) -> TunedVariant:
        return self.ranked[0]

    @property
    def best_speedup(self) -> float:
        return self.best.speedup

    def break_even_calls(self) -> float | None:
        """Calls after which the best kernel's format conversion has paid for itself
        against cuSPARSE on CSR: 0 for a CSR kernel, None if it never does."""
        fmt = self.best.variant["format"]
        cost_us = self.preprocessing_s.get(fmt, 0.0) * 1e6
        saved_us = self.baseline_device_warm_us - self.best.device_warm_us
        if cost_us == 0.0:
            return 0.0
        return cost_us / saved_us if saved_us > 0 else None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict) -> TuningResult:
        ranked = [TunedVariant(**item) for item in record["ranked"]]
        return cls(**{**record, "ranked": ranked})


def candidates(
    A, op: str, n_cols: int | None = None, features: dict | None = None
) -> list[KernelVariant]:
    """Variants worth timing on A: the applicable families, with the matrix's constants
    baked in, at the parameter choices their `fits` keeps for A's row lengths."""
    csr = canonical_csr(A)  # sorted and summed once, for all three below
    features = features or matrix_features(csr)
    constants = MatrixConstants.from_matrix(csr)
    row_lengths = np.diff(csr.indptr)
    return [
        variant
        for variant in variants(op, n_cols, features=features, constants=constants)
        if variant.kernel_family.fits(row_lengths, variant.params)
    ]


class Autotuner:
    """Tunes kernels with `harness`; caches results as JSON under `cache_dir`."""

    def __init__(
        self, harness, cache_dir: str | Path | None = None, timing: TimingConfig | None = None
    ):
        self.harness = harness
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.timing = timing or TimingConfig(rounds=3, calls_per_round=10, cold=True)

    def tune(
        self, A, op: str = "spmv", n_cols: int | None = None, features: dict | None = None
    ) -> TuningResult:
        """Best variant for A (cached by fingerprint, op, width and GPU); `features`, when
        the caller already has A's `matrix_features`, spares computing them again."""
        pattern = fingerprint(A)
        key = f"{pattern}_{op}_{n_cols}_{self.harness.device_name.replace(' ', '_')}"
        cached = self._read_cache(key)
        if cached is not None:
            return cached
        chosen = candidates(A, op, n_cols, features)
        results, report = self.harness.compare(
            [v.source() for v in chosen], A, op, n_cols, self.timing
        )
        ranked, failed = [], {}
        best_us = report.best.device_warm.median_us
        for variant, result in zip(chosen, results, strict=True):
            if result.verdict is not Verdict.CORRECT:
                failed[variant.variant_id] = f"{result.verdict.value}: {result.detail}"
                continue
            timing = result.timing
            family = variant.kernel_family
            record = {
                **variant.to_dict(),
                "format": family.format,
                "format_params": family.format_params(variant.params),
            }
            ranked.append(TunedVariant(
                record, timing.device_warm.median_us, timing.latency_warm.median_us,
                timing.device_cold.median_us if timing.device_cold else None,
                best_us / timing.device_warm.median_us,
            ))  # fmt: skip
        if not ranked:
            raise RuntimeError(f"no expert variant was correct on this matrix: {failed}")
        ranked.sort(key=lambda tuned: tuned.device_warm_us)
        result = TuningResult(
            fingerprint=pattern, op=op, n_cols=n_cols, device=self.harness.device_name,
            nnz=int(A.nnz), baseline_name=report.best_name, baseline_device_warm_us=best_us,
            baseline_device_cold_us=(report.best.device_cold.median_us
                                     if report.best.device_cold else None),
            baseline_latency_warm_us=report.best.latency_warm.median_us,
            ranked=ranked, failed=failed, preprocessing_s=_preprocessing_seconds(A, ranked),
        )  # fmt: skip
        self._write_cache(key, result)
        return result

    def _read_cache(self, key: str) -> TuningResult | None:
        if self.cache_dir is None or not (self.cache_dir / f"{key}.json").exists():
            return None
        return TuningResult.from_dict(json.loads((self.cache_dir / f"{key}.json").read_text()))

    def _write_cache(self, key: str, result: TuningResult) -> None:
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            (self.cache_dir / f"{key}.json").write_text(json.dumps(result.to_dict()))


def _preprocessing_seconds(A, ranked: list[TunedVariant]) -> dict[str, float]:
    """Host seconds to build each non-CSR format the ranked variants use (CSR is free:
    it is what the user holds)."""
    seconds = {}
    for tuned in ranked:
        fmt, params = tuned.variant["format"], tuned.variant["format_params"]
        if fmt != "csr" and fmt not in seconds:
            seconds[fmt] = convert(A, fmt, params).seconds
    return seconds
