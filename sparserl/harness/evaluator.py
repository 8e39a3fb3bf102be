"""`Harness`: evaluate generated kernels on one GPU — ABI check, compile, verify, time.

    with Harness() as harness:
        result = harness.evaluate(source, A, op="spmv")          # an EvalResult
        report = harness.baseline(A, op="spmm", n_cols=32)       # cuSPARSE-best and friends

Compiles run in a pool of CPU processes (NVRTC, cached by source hash); kernels run
in one GPU worker process (see `sparserl.harness.worker`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import scipy.sparse as sp

from sparserl.abi import ABIError, KernelHeader, check_entry_signature, parse_header
from sparserl.features import fingerprint
from sparserl.formats import canonical_csr
from sparserl.harness.nvrtc import CompiledModule, CubinCache, nvrtc_compile, source_hash
from sparserl.harness.results import EvalResult, Timing, TimingConfig, Verdict
from sparserl.harness.worker import LaunchFailed, Worker, WorkerCrashed, WorkerTimeout

DEFAULT_CACHE = (
    Path(os.environ.get("SPARSERL_CACHE", Path.home() / ".cache" / "sparserl")) / "cubins"
)


@dataclass
class BaselineReport:
    """cuSPARSE timings for one matrix and op: every working algorithm, the best one
    (by warm device time), the plain `cupyx` product for reference, and algorithms
    that failed or gave wrong results, with the reason."""

    algorithms: dict[str, Timing]
    cupyx: Timing
    rejected: dict[str, str] = field(default_factory=dict)

    @property
    def best_name(self) -> str:
        return min(self.algorithms, key=lambda name: self.algorithms[name].device_warm.median_us)

    @property
    def best(self) -> Timing:
        return self.algorithms[self.best_name]


class Harness:
    """Evaluates kernels on GPU `device` (one worker process per Harness).

    timeout_s: how long one launch may run before the kernel counts as hung (the worker
        times the kernel itself; the parent waits longer, for set-up, before giving up).
    compile_workers: CPU processes for NVRTC (default: all cores).
    seed: seeds the random trial inputs (None: fresh every run).
    """

    def __init__(
        self,
        device: int = 0,
        timeout_s: float = 10.0,
        compile_workers: int | None = None,
        cache_dir: str | Path | None = None,
        seed: int | None = None,
    ):
        self.worker = Worker(device, seed, kernel_timeout_s=timeout_s)
        self.timeout_s = timeout_s
        self.cache = CubinCache(cache_dir or DEFAULT_CACHE)
        self._compilers = ProcessPoolExecutor(
            compile_workers or os.cpu_count(), mp_context=mp.get_context("spawn")
        )
        self._verified: dict[str, tuple[CompiledModule, KernelHeader]] = {}
        self._matrices: dict[str, sp.csr_matrix] = {}
        self._loaded_in: dict[str, int] = {}  # kernel id -> worker generation that holds it

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.worker.close()
        self._compilers.shutdown(cancel_futures=True)

    # ------------------------------------------------------------------ public

    def evaluate(self, source: str, matrix, op: str = "spmv", n_cols: int | None = None, **kwargs):
        """Evaluate one kernel; see `evaluate_many`."""
        return self.evaluate_many([source], matrix, op, n_cols, **kwargs)[0]

    def evaluate_many(
        self,
        sources: list[str],
        matrix,
        op: str = "spmv",
        n_cols: int | None = None,
        time: bool = True,
        timing: TimingConfig | None = None,
    ) -> list[EvalResult]:
        """Evaluate kernels for one matrix: compiles in parallel, then verifies each in the
        worker, then (if `time`) times the correct ones together, interleaved, with
        `timing` (default `TimingConfig.quick()`). Returns one EvalResult per source."""
        A, key = self._prepare(matrix, op, n_cols)
        results, correct = self._verify_all(sources, A, key, op, n_cols)
        if time and correct:
            self._time_and_recheck(results, correct, key, n_cols, timing or TimingConfig.quick())
        return results

    def baseline(self, matrix, op: str = "spmv", n_cols: int | None = None,
                 timing: TimingConfig | None = None) -> BaselineReport:  # fmt: skip
        """Time every working cuSPARSE algorithm and the plain cupyx product."""
        A, key = self._prepare(matrix, op, n_cols)
        self._load(A, key)
        timings, rejected = self._call("time", [], key, n_cols, True, timing or TimingConfig())
        return _baseline_report(timings, rejected)

    def compare(self, sources: list[str], matrix, op: str = "spmv", n_cols: int | None = None,
                timing: TimingConfig | None = None):  # fmt: skip
        """Evaluate kernels and time them interleaved with cuSPARSE in the same worker and
        session: the fair comparison benchmarks use. Returns (results, BaselineReport)."""
        A, key = self._prepare(matrix, op, n_cols)
        results, correct = self._verify_all(sources, A, key, op, n_cols)
        timings, rejected = self._time_and_recheck(
            results, correct, key, n_cols, timing or TimingConfig(), baseline=True
        )
        return results, _baseline_report(timings, rejected)

    def copy_bandwidth_gbs(self) -> float:
        """Device-to-device copy bandwidth (bytes read + written per second / 1e9)."""
        return self._call("copy_bandwidth_gbs")

    @property
    def arch(self) -> str:
        """The GPU's architecture, e.g. 'sm_90' (starts the worker)."""
        return (self.worker.info or self.worker.start()).arch

    @property
    def device_name(self) -> str:
        return (self.worker.info or self.worker.start()).name

    # ------------------------------------------------------------------ steps

    def _prepare(self, matrix, op: str, n_cols: int | None):
        if op not in ("spmv", "spmm"):
            raise ValueError(f"op must be 'spmv' or 'spmm', got {op!r}")
        if (op == "spmm") != (n_cols is not None):
            raise ValueError(
                "n_cols (the width of B) is required for spmm and not allowed for spmv"
            )
        if not sp.issparse(matrix):
            raise TypeError(f"matrix must be a scipy.sparse matrix, got {type(matrix).__name__}")
        A = canonical_csr(matrix)
        return A, fingerprint(A)

    def _verify_all(self, sources, A, key, op, n_cols):
        """ABI-check, compile (in parallel) and verify each source on A. Returns one
        EvalResult per source and the (result index, kernel id) of the correct ones."""
        self._load(A, key)
        headers = [self._check_abi(source, op) for source in sources]
        compiled = self._compile(
            [s for s, h in zip(sources, headers, strict=True) if isinstance(h, KernelHeader)]
        )
        results, correct = [], []
        for source, header in zip(sources, headers, strict=True):
            if not isinstance(header, KernelHeader):
                results.append(header)
                continue
            module = compiled[source_hash(source, self.arch)]
            if not module.ok:
                detail = "; ".join(f"line {d.line}: {d.message}" for d in module.diagnostics[:3])
                results.append(EvalResult(Verdict.COMPILE_ERROR, detail, module.seconds))
                continue
            kernel_id = source_hash(source, self.arch)[:16]
            self._verified[kernel_id] = (module, header)
            result = self._verify(kernel_id, A, key, n_cols)
            results.append(result)
            if result.verdict is Verdict.CORRECT:
                correct.append((len(results) - 1, kernel_id))
        return results, correct

    def _check_abi(self, source: str, op: str) -> KernelHeader | EvalResult:
        try:
            header = parse_header(source)
            if header.op != op:
                raise ABIError(f"the header says op '{header.op}' but '{op}' was asked for")
            check_entry_signature(source, header.op, header.format)
        except ABIError as error:
            return EvalResult(Verdict.ABI_ERROR, str(error))
        return header

    def _compile(self, sources: list[str]) -> dict[str, CompiledModule]:
        arch = self.arch
        modules, pending = {}, {}
        for source in sources:
            key = source_hash(source, arch)
            cubin = self.cache.get(key)
            if cubin is not None:
                modules[key] = CompiledModule(True, cubin, [], "", 0.0)
            elif key not in pending:
                pending[key] = self._compilers.submit(nvrtc_compile, source, arch)
        for key, future in pending.items():
            modules[key] = future.result()
            if modules[key].ok:
                self.cache.put(key, modules[key].cubin)
        return modules

    def _load(self, A, key: str) -> None:
        self._matrices[key] = A
        if key not in self.worker.loaded:
            evicted = self._call("add_matrix", key, A, timeout_s=max(60.0, A.nnz / 1e6 * 10))
            self.worker.loaded.difference_update(evicted)
            self.worker.loaded.add(key)

    def _verify(self, kernel_id, A, key, n_cols) -> EvalResult:
        module, header = self._verified[kernel_id]
        self._load(A, key)
        try:
            result = self._call("verify", kernel_id, module.cubin, header, key, n_cols,
                                timeout_s=self._backstop_s(A))  # fmt: skip
        except WorkerTimeout as error:
            result = EvalResult(Verdict.TIMEOUT, str(error))
        except WorkerCrashed as error:
            result = EvalResult(Verdict.RUNTIME_ERROR, str(error))
        except LaunchFailed as error:
            result = EvalResult(Verdict.BAD_LAUNCH, str(error))
        result.compile_seconds = module.seconds
        self._loaded_in[kernel_id] = self.worker.generation
        return result

    def _time_and_recheck(self, results, correct, key, n_cols, timing, baseline=False):
        """Time the verified kernels `correct` ((result index, kernel id) pairs) and, if
        `baseline`, cuSPARSE with them; then re-check each kernel's output."""
        A = self._matrices[key]
        self._load(A, key)
        for _, kernel_id in correct:
            if self._loaded_in[kernel_id] != self.worker.generation:
                # A later kernel crashed the worker, which lost this one: load it again.
                self._verify(kernel_id, A, key, n_cols)
        ids = list(dict.fromkeys(kernel_id for _, kernel_id in correct))  # a repeat: timed once
        budget = 120.0 + A.nnz / 1e6 * 20
        timings, rejected = self._call("time", ids, key, n_cols, baseline, timing, timeout_s=budget)
        for index, kernel_id in correct:
            results[index].timing = timings[kernel_id]
            problem = self._call("recheck", kernel_id, timeout_s=self._backstop_s(A))
            if problem:
                results[index].verdict = Verdict.WRONG_RESULT
                results[index].detail = problem
        return {name: t for name, t in timings.items() if name not in ids}, rejected

    def _backstop_s(self, A) -> float:
        """How long the parent waits for one verification before killing the worker: the
        worker itself reports a kernel that runs past `timeout_s`, so this only catches a
        worker stuck elsewhere. Covers every trial's launch plus set-up on A's size."""
        return 4 * self.timeout_s + 60.0 + A.nnz / 1e6 * 10

    def _call(self, method: str, *args, timeout_s: float | None = None):
        return self.worker.call(method, *args, timeout_s=timeout_s or self.timeout_s)


def _baseline_report(timings: dict[str, Timing], rejected: dict[str, str]) -> BaselineReport:
    algorithms = {
        name.removeprefix("cusparse:"): timing
        for name, timing in timings.items()
        if name.startswith("cusparse:")
    }
    if not algorithms:
        raise RuntimeError(f"no cuSPARSE algorithm worked for this matrix: {rejected}")
    return BaselineReport(algorithms, timings["cupyx"], rejected)
