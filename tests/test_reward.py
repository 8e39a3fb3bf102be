"""The hierarchical reward's arithmetic on every branch."""

import pytest

from sparserl.harness.results import EvalResult, TimeStats, Timing, Verdict
from sparserl.reward import RewardConfig, SpeedupStats, compute_reward


def timed(device_us: float, shared: int = 0) -> EvalResult:
    stats = TimeStats(device_us, device_us, device_us, 10)
    return EvalResult(
        Verdict.CORRECT, timing=Timing(stats, stats), resources={"shared_bytes": shared}
    )


@pytest.mark.parametrize(
    "verdict", [Verdict.COMPILE_ERROR, Verdict.STOPPED_EARLY, Verdict.ABI_ERROR]
)
def test_not_compiled(verdict):
    breakdown = compute_reward(EvalResult(verdict), None)
    assert breakdown.total == -0.5 and breakdown.correct == 0.0


@pytest.mark.parametrize("verdict", [Verdict.WRONG_RESULT, Verdict.TIMEOUT, Verdict.RUNTIME_ERROR])
def test_compiled_but_wrong(verdict):
    assert compute_reward(EvalResult(verdict), 10.0).total == 0.0


def test_efficiency_uses_speedup_z_score_and_clips():
    stats = SpeedupStats.from_reference([0.0, 1.0])  # mean 0.5, std 0.7071
    breakdown = compute_reward(timed(5.0), baseline_us=10.0, stats=stats, update_stats=False)
    assert breakdown.speedup == pytest.approx(1.0)
    assert breakdown.z_score == pytest.approx(0.5 / 0.70710678)
    assert breakdown.total == pytest.approx(1.0 + 0.5 / 0.70710678)
    huge = compute_reward(timed(0.01), baseline_us=10.0, stats=stats, update_stats=False)
    assert huge.efficiency == 2.0
    slow = compute_reward(timed(1000.0), baseline_us=10.0, stats=stats, update_stats=False)
    assert slow.efficiency == -2.0


def test_stats_update_with_samples():
    stats = SpeedupStats()
    first = compute_reward(timed(10.0), baseline_us=20.0, stats=stats)
    assert first.z_score == pytest.approx(1.0)  # no statistics yet: the raw speedup
    assert stats.count == 1 and stats.mean == pytest.approx(1.0)


def test_shared_memory_penalty_and_alpha():
    over = compute_reward(timed(10.0, shared=49 * 1024), baseline_us=10.0,
                          stats=SpeedupStats.from_reference([0.0, 0.0]))  # fmt: skip
    assert over.penalty == 0.3 and over.total == pytest.approx(1.0 - 0.3)
    mixed = compute_reward(timed(5.0), 10.0, SpeedupStats(), RewardConfig(alpha=0.25))
    assert mixed.correct == pytest.approx(0.125) and mixed.efficiency == pytest.approx(0.75)


def test_correct_kernel_needs_baseline():
    with pytest.raises(ValueError, match="baseline"):
        compute_reward(timed(5.0), baseline_us=None)
