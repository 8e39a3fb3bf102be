"""The harness on a real GPU: verdicts of the adversarial suite, correct kernels in every
format, the cuSPARSE baseline and timing. Skipped without a GPU (marker `gpu`)."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparserl.harness import Harness, TimingConfig, Verdict

pytestmark = pytest.mark.gpu

ADVERSARIAL = Path(__file__).parent / "adversarial"


def expected_verdict(path: Path) -> Verdict:
    first = path.read_text().splitlines()[0]
    assert first.startswith("// expect: "), f"{path.name} must start with '// expect: <verdict>'"
    return Verdict(first.removeprefix("// expect: ").strip())


@pytest.fixture(scope="module")
def harness():
    with Harness(timeout_s=5.0, seed=0) as harness:
        yield harness


@pytest.fixture(scope="module")
def matrices(shared_data):
    from sparserl.io import load_matrix

    rng = np.random.default_rng(0)
    skewed = sp.random(3000, 2000, density=0.002, random_state=rng, format="lil", dtype=np.float32)
    skewed[7, :] = 1.0  # one dense row
    return {
        "bcsstk01": load_matrix(shared_data / "suitesparse" / "HB__bcsstk01.mtx.gz"),
        "skewed": sp.csr_matrix(skewed),
    }


@pytest.mark.parametrize("path", sorted(ADVERSARIAL.glob("*.cu")), ids=lambda p: p.stem)
def test_adversarial_verdicts(harness, matrices, path):
    expected = expected_verdict(path)
    for name, A in matrices.items():
        result = harness.evaluate(path.read_text(), A, "spmv", timing=TimingConfig.quick())
        assert result.verdict is expected, (
            f"{path.name} on {name}: {result.verdict} ({result.detail})"
        )


def test_worker_survives_a_fault(harness, matrices):
    bad = (ADVERSARIAL / "illegal_address.cu").read_text()
    good = (ADVERSARIAL / "correct_csr_scalar.cu").read_text()
    results = harness.evaluate_many([good, bad, good.replace("sum = 0.0f", "sum = -0.0f")],
                                    matrices["skewed"], "spmv")  # fmt: skip
    assert [r.verdict for r in results] == [Verdict.CORRECT, Verdict.RUNTIME_ERROR, Verdict.CORRECT]
    assert all(r.timing is not None for r in (results[0], results[2]))


def test_every_expert_variant_is_correct(harness, matrices):
    """Every kernel family x parameter choice, plain and with the matrix's constants baked in."""
    from sparserl.kernels import MatrixConstants, variants

    for name, A in matrices.items():
        for op, n_cols in (("spmv", None), ("spmm", 8), ("spmm", 32)):
            chosen = variants(op, n_cols) + variants(
                op, n_cols, constants=MatrixConstants.from_matrix(A)
            )
            formats = {variant.kernel_family.format for variant in chosen}
            assert {"csr", "ell", "sell"} <= formats if op == "spmv" else {"csr"} <= formats
            results = harness.evaluate_many([v.source() for v in chosen], A, op, n_cols, time=False)
            wrong = [f"{v.variant_id}: {r.verdict.value} {r.detail}"
                     for v, r in zip(chosen, results, strict=True) if r.verdict is not Verdict.CORRECT]  # fmt: skip
            assert not wrong, f"{name} {op} N={n_cols}:\n" + "\n".join(wrong)


def test_baseline_and_comparison(harness, matrices):
    source = (ADVERSARIAL / "correct_csr_scalar.cu").read_text()
    # The same source twice (a tuner may meet one kernel under two names): both timed.
    results, report = harness.compare([source, source], matrices["bcsstk01"], "spmv",
                                      timing=TimingConfig(rounds=2, calls_per_round=10, cold=True))  # fmt: skip
    timing = results[0].timing
    assert results[0].verdict is Verdict.CORRECT and results[1].timing is timing
    assert report.best.device_warm.median_us > 0 and report.cupyx.latency_warm.median_us > 0
    assert timing.device_cold is not None and timing.device_warm.repetitions == 20
    # device time (kernels only) never exceeds the event-timed latency of the same call
    assert timing.device_warm.median_us <= timing.latency_warm.median_us * 1.05
    spmm_report = harness.baseline(matrices["skewed"], "spmm", 32, TimingConfig(2, 5))
    assert spmm_report.algorithms, spmm_report.rejected
