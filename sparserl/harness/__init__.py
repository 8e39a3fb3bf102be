"""The GPU harness: compile, verify and time generated SpMV/SpMM kernels.

`compile_check` (nvcc, no GPU needed) gives the compiler's verdict on any machine;
`Harness` (needs CuPy and a GPU) runs kernels in an isolated worker process.
"""

from sparserl.harness.diagnostics import CompileResult, Diagnostic, KernelResources
from sparserl.harness.nvcc import compile_check
from sparserl.harness.results import EvalResult, TimeStats, Timing, TimingConfig, Verdict

__all__ = [
    "BaselineReport",
    "CompileResult",
    "Diagnostic",
    "EvalResult",
    "Harness",
    "KernelResources",
    "TimeStats",
    "Timing",
    "TimingConfig",
    "Verdict",
    "compile_check",
]


def __getattr__(name: str):
    # The GPU pieces import CuPy: load them only when asked for.
    if name in ("Harness", "BaselineReport"):
        from sparserl.harness import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module 'sparserl.harness' has no attribute {name!r}")
