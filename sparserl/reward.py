"""The hierarchical SparseRL reward, computed from a harness `EvalResult`.

    R = R_compile + R_correct + R_eff - R_penalty

- R_compile = +0.5 if the kernel compiled, else -0.5 (a generation the streaming
  syntax checker stopped early counts as a compile failure, without compiling);
- R_correct = +0.5 if it produced the right result, else -0.5 (only when compiled);
- R_eff = clip(r_eff * z, -2, 2) (only when correct), where z is the z-score of the
  speedup s = t_base / t - 1 over cuSPARSE-best, against that matrix's statistics
  (see `SpeedupStats`);
- R_penalty = r_penalty when static + dynamic shared memory exceeds the limit.

With `alpha` set, the correctness and efficiency terms are mixed as
alpha * R_correct + (1 - alpha) * R_eff instead of added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sparserl.harness.results import EvalResult, Verdict


@dataclass
class RewardConfig:
    """Reward weights. Defaults are the paper's."""

    r_compile: float = 0.5
    r_correct: float = 0.5
    r_eff: float = 1.0
    r_penalty: float = 0.3
    shared_limit_bytes: int = 48 * 1024
    clip: float = 2.0
    alpha: float | None = None
    min_std: float = 0.05  # floor on sigma, so one lucky sample cannot blow up z


@dataclass
class RewardBreakdown:
    """Each term of the reward, and the speedup it came from (None when not timed)."""

    compile: float
    correct: float
    efficiency: float
    penalty: float
    speedup: float | None = None
    z_score: float | None = None

    @property
    def total(self) -> float:
        return self.compile + self.correct + self.efficiency - self.penalty


@dataclass
class SpeedupStats:
    """Mean and standard deviation of s = t_base / t - 1 for one matrix.

    Where mu and sigma come from: `from_reference` seeds them with speedups known
    before training (the expert variants the autotuner ranked for this matrix, which
    the SFT data holds), so the policy is scored against what experts reach; every
    correct sample the policy produces is then folded in with Welford's update.
    With no reference and fewer than two samples, mu = 0 and sigma = 1 (the raw
    speedup is used).
    """

    count: int = 0
    mean: float = 0.0
    m2: float = field(default=0.0, repr=False)

    @classmethod
    def from_reference(cls, speedups) -> SpeedupStats:
        stats = cls()
        for value in speedups:
            stats.update(value)
        return stats

    def update(self, speedup: float) -> None:
        self.count += 1
        delta = speedup - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (speedup - self.mean)

    def z_score(self, speedup: float, min_std: float) -> float:
        if self.count < 2:
            return speedup - self.mean if self.count else speedup
        std = max(math.sqrt(self.m2 / (self.count - 1)), min_std)
        return (speedup - self.mean) / std


def compute_reward(
    result: EvalResult,
    baseline_us: float | None,
    stats: SpeedupStats | None = None,
    config: RewardConfig | None = None,
    update_stats: bool = True,
) -> RewardBreakdown:
    """Score one evaluation.

    baseline_us: cuSPARSE-best device time for this matrix and op, in microseconds
        (needed only when the kernel is correct and timed).
    stats: the matrix's speedup statistics; updated with this sample when
        `update_stats` (pass the same object for every sample of the matrix).
    """
    config = config or RewardConfig()
    compiled = result.verdict.compiled
    r_compile = config.r_compile if compiled else -config.r_compile
    if not compiled:
        return RewardBreakdown(r_compile, 0.0, 0.0, 0.0)
    correct = result.verdict is Verdict.CORRECT
    r_correct = config.r_correct if correct else -config.r_correct
    penalty = config.r_penalty if result.shared_bytes > config.shared_limit_bytes else 0.0
    r_eff, speedup, z = 0.0, None, None
    if correct and result.timing is not None:
        if baseline_us is None or baseline_us <= 0:
            raise ValueError(
                "a correct, timed kernel needs the cuSPARSE-best time (baseline_us > 0)"
            )
        speedup = baseline_us / result.timing.device_warm.median_us - 1.0
        stats = stats if stats is not None else SpeedupStats()
        z = stats.z_score(speedup, config.min_std)
        if update_stats:
            stats.update(speedup)
        r_eff = max(-config.clip, min(config.clip, config.r_eff * z))
    if config.alpha is not None:
        r_correct, r_eff = config.alpha * r_correct, (1.0 - config.alpha) * r_eff
    return RewardBreakdown(r_compile, r_correct, r_eff, penalty, speedup, z)
