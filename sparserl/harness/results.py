"""What an evaluation of one kernel returns: a verdict and, when it ran correctly, its times.

Plain dataclasses, importable without a GPU (the reward and the trainer read them).
All times are in microseconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum


class Verdict(str, Enum):
    """Outcome of one evaluation, from worst to best."""

    STOPPED_EARLY = "stopped_early"  # the streaming syntax checker ended the generation
    COMPILE_ERROR = "compile_error"  # NVRTC/nvcc rejected the source
    ABI_ERROR = "abi_error"  # header or entry signature breaks docs/kernel_abi.md
    BAD_LAUNCH = "bad_launch"  # the header's geometry or shared memory cannot be launched
    RUNTIME_ERROR = "runtime_error"  # a CUDA fault (illegal address, ...) killed the worker
    TIMEOUT = "timeout"  # the kernel did not finish in time; the worker was killed
    WRONG_RESULT = "wrong_result"  # ran, but an output check failed (see `detail`)
    CORRECT = "correct"

    @property
    def compiled(self) -> bool:
        """True when the source got past the compiler (and the ABI check)."""
        return self not in (Verdict.STOPPED_EARLY, Verdict.COMPILE_ERROR, Verdict.ABI_ERROR)


@dataclass
class TimeStats:
    """Repeated timings of one side: median and spread in microseconds."""

    median_us: float
    p10_us: float
    p90_us: float
    repetitions: int

    @classmethod
    def from_samples(cls, samples_us) -> TimeStats:
        import numpy as np

        samples = np.asarray(samples_us, dtype=np.float64)
        p10, median, p90 = np.percentile(samples, [10, 50, 90])
        return cls(float(median), float(p10), float(p90), len(samples))


@dataclass
class Timing:
    """Device time (summed kernel durations per call, from CUPTI) and call latency
    (CUDA events around back-to-back calls, host overhead included), each warm and
    optionally cold (L2 flushed before every call)."""

    device_warm: TimeStats
    latency_warm: TimeStats
    device_cold: TimeStats | None = None
    latency_cold: TimeStats | None = None
    kernels_per_call: int = 1


@dataclass
class EvalResult:
    """The harness's answer for one kernel on one matrix.

    detail: a human-readable reason for any verdict but CORRECT.
    resources: registers, static/dynamic shared and local (spill) bytes of the entry kernel.
    timing: set only for CORRECT kernels that were timed.
    """

    verdict: Verdict
    detail: str = ""
    compile_seconds: float = 0.0
    resources: dict[str, int] = field(default_factory=dict)
    timing: Timing | None = None

    @property
    def shared_bytes(self) -> int:
        """Static plus dynamic shared memory per block, in bytes."""
        return self.resources.get("shared_bytes", 0) + self.resources.get("dynamic_shared_bytes", 0)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict.value
        return out


@dataclass
class TimingConfig:
    """How many timings to take. rounds x calls_per_round samples per side and measure."""

    rounds: int = 5
    calls_per_round: int = 20
    cold: bool = False

    @classmethod
    def quick(cls) -> TimingConfig:
        """Few repetitions: for rewards during training."""
        return cls(rounds=2, calls_per_round=10)
