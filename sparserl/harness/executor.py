"""Runs compiled kernels on the device: load, launch, verify, time. Lives in a worker process.

Nothing here protects the caller from a kernel that hangs or faults: the worker that
holds an `Executor` is killed or dies instead (see `sparserl.harness.worker`).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cupy
import numpy as np
import scipy.sparse as sp

from sparserl.abi import KernelHeader
from sparserl.formats import FormatData, ValueLayout, canonical_csr
from sparserl.harness.check import (
    GUARD_ELEMENTS,
    GUARD_FLOAT,
    compare,
    guards_intact,
    random_dense_input,
    random_values,
    reference,
)
from sparserl.harness.cusparse import CusparseBaseline
from sparserl.harness.results import EvalResult, Timing, TimingConfig, Verdict
from sparserl.harness.timing import Timer, copy_bandwidth_gbs

N_TRIALS = 3
CUDA_ERROR_NOT_READY = 600  # cudaErrorNotReady: the event's work is still running


class KernelTimeout(Exception):
    """A kernel did not finish in time; the worker must exit (it cannot stop the kernel)."""


MAX_CACHED_FORMATS = 3 * N_TRIALS  # per matrix: (format, params, trial) buffers, and layouts
DEFAULT_SHARED_LIMIT = 48 * 1024


def _guarded(host: np.ndarray, guard) -> tuple[cupy.ndarray, cupy.ndarray]:
    """Device copy of `host` with GUARD_ELEMENTS slots of `guard` before and after.
    Returns (whole buffer, payload view)."""
    flat = host.ravel()
    whole = cupy.full(flat.size + 2 * GUARD_ELEMENTS, guard, dtype=flat.dtype)
    payload = whole[GUARD_ELEMENTS : GUARD_ELEMENTS + flat.size]
    payload.set(flat)
    return whole, payload


def _guard_for(array: np.ndarray):
    # A read past an index array yields its type's largest index (a fault for int32; for a
    # 16-bit index, column 65535, past x unless n = 65536); past a float array, NaN.
    if array.dtype.kind in "iu":
        return np.iinfo(array.dtype).max
    return np.float32(np.nan)


@dataclass
class Trial:
    """One set of fresh random values for A and the dense input (host arrays), with the
    float64 answer and its tolerance (device arrays)."""

    matrix: sp.csr_matrix
    dense: np.ndarray
    expected: cupy.ndarray
    tolerance: cupy.ndarray


class DeviceMatrix:
    """A matrix held by the worker: N_TRIALS fresh random value sets on its pattern, the
    dense inputs of each trial per output width, and device buffers built once each."""

    def __init__(self, pattern: sp.csr_matrix, seed: int | None = None):
        self.rng = np.random.default_rng(seed)
        pattern = canonical_csr(pattern)  # the entry order every ValueLayout fills in
        self.value_sets = []
        for _ in range(N_TRIALS):
            A = pattern.copy()
            A.data = random_values(self.rng, A.nnz)
            self.value_sets.append(A)
        self._trials: dict[tuple[int, int | None], Trial] = {}
        self._layouts: dict[tuple, ValueLayout] = {}
        self._formats: dict[tuple, tuple[FormatData, list[cupy.ndarray]]] = {}
        self._dense: dict[tuple, cupy.ndarray] = {}
        self.baselines: dict[int | None, CusparseBaseline] = {}

    def trial(self, index: int, n_cols: int | None) -> Trial:
        if (index, n_cols) not in self._trials:
            self._keep_only_width(n_cols)
            self.refresh_dense(index, n_cols)
        return self._trials[(index, n_cols)]

    def _keep_only_width(self, n_cols: int | None) -> None:
        """Drop trials, dense buffers and baselines of other output widths: at 10^7 nnz
        one width's answers and buffers already take gigabytes."""
        self._trials = {key: t for key, t in self._trials.items() if key[1] == n_cols}
        self._dense = {key: d for key, d in self._dense.items() if key[2] == n_cols}
        self.baselines = {key: b for key, b in self.baselines.items() if key == n_cols}
        cupy.get_default_memory_pool().free_all_blocks()

    def refresh_dense(self, index: int, n_cols: int | None) -> Trial:
        """Give trial `index` a fresh dense input (device buffers updated in place)."""
        A = self.value_sets[index]
        dense = random_dense_input(self.rng, A.shape[1], n_cols)
        trial = Trial(A, dense, *reference(cupyx_csr(A), cupy.asarray(dense)))
        self._trials[(index, n_cols)] = trial
        for (_, i, width), payload in self._dense.items():
            if (i, width) == (index, n_cols):
                payload[: dense.size].set(dense.ravel())  # row-major: padding rows stay zero
        return trial

    def format_buffers(self, header: KernelHeader, index: int) -> tuple[FormatData, list]:
        """The value set `index` in the header's format: (format data, guarded device arrays).
        The pattern is converted once per format; each value set is gathered into it."""
        layout_key = (header.format, tuple(sorted(header.params.items())))
        key = (*layout_key, index)
        if key not in self._formats:
            if layout_key not in self._layouts:
                layout = ValueLayout.of(self.value_sets[0], header.format, header.params)
                _bounded_put(self._layouts, layout_key, layout)  # bound host memory
            data = self._layouts[layout_key].fill(self.value_sets[index].data)
            arrays = [_guarded(array, _guard_for(array))[1] for array in data.arrays.values()]
            _bounded_put(self._formats, key, (data, arrays))  # bound device memory
        return self._formats[key]

    def dense_buffer(self, data: FormatData, index: int, n_cols: int | None) -> cupy.ndarray:
        """Guarded device copy of trial `index`'s dense input, padded to `data.dense_rows`."""
        key = (data.dense_rows, index, n_cols)
        if key not in self._dense:
            dense = self.trial(index, n_cols).dense
            padded = np.zeros((data.dense_rows, *dense.shape[1:]), dtype=np.float32)
            padded[: dense.shape[0]] = dense
            self._dense[key] = _guarded(padded, np.float32(np.nan))[1]
        return self._dense[key]


def _bounded_put(cache: dict, key, value) -> None:
    """cache[key] = value, first dropping the oldest entries past MAX_CACHED_FORMATS."""
    while len(cache) >= MAX_CACHED_FORMATS:
        cache.pop(next(iter(cache)))
    cache[key] = value


class Executor:
    """Loads cubins and runs them against matrices on the current device."""

    def __init__(self, kernel_timeout_s: float = 10.0):
        self.kernel_timeout_s = kernel_timeout_s
        self.device = cupy.cuda.Device()
        self.timer = Timer()
        self.matrices: dict[str, DeviceMatrix] = {}
        self.kernels: dict[str, tuple] = {}  # kernel id -> (function, header, launch sides)
        self._scratch = Path(tempfile.mkdtemp(prefix="sparserl-cubins-"))
        props = cupy.cuda.runtime.getDeviceProperties(self.device.id)
        self.max_shared_optin = int(props["sharedMemPerBlockOptin"])
        self.name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        self._warm_up()

    def _warm_up(self) -> None:
        """Verify and time two known-good kernels on a small matrix, so that CuPy's own
        kernel compiles, cuSPARSE's set-up and the profiler's start happen now and not
        inside a verification that runs under a timeout."""
        from sparserl.abi import parse_header
        from sparserl.harness.nvrtc import nvrtc_compile
        from sparserl.kernels import KernelVariant

        major, minor = self.device.compute_capability
        A = sp.random(300, 200, density=0.05, format="csr", dtype=np.float32, random_state=0)
        self.add_matrix("__warm_up__", A, seed=0)
        for op, n_cols, variant in (
            ("spmv", None, KernelVariant("csr_scalar", {"block_size": 128})),
            (
                "spmm",
                8,
                KernelVariant(
                    "csr_spmm_rowsplit", {"N": 8, "columns_per_thread": 1, "block_size": 128}
                ),
            ),
        ):
            source = variant.source()
            module = nvrtc_compile(source, f"sm_{major}{minor}")
            result = self.verify(
                f"__warm_up_{op}__", module.cubin, parse_header(source), "__warm_up__", n_cols
            )
            if result.verdict is not Verdict.CORRECT:
                raise RuntimeError(f"the harness failed its own warm-up kernel: {result.detail}")
            self.time([f"__warm_up_{op}__"], "__warm_up__", n_cols, True, TimingConfig(1, 2))
        self.matrices.pop("__warm_up__")

    def add_matrix(self, key: str, A: sp.csr_matrix, seed: int | None = None) -> list[str]:
        """Hold A under `key`; returns the keys dropped to keep device memory bounded."""
        self.matrices.pop(key, None)
        self.matrices[key] = DeviceMatrix(A, seed)
        evicted = []
        while len(self.matrices) > 2:
            evicted.append(next(iter(self.matrices)))
            self.matrices.pop(evicted[-1])
        cupy.get_default_memory_pool().free_all_blocks()
        return evicted

    def copy_bandwidth_gbs(self) -> float:
        return copy_bandwidth_gbs()

    def verify(
        self, kernel_id: str, cubin: bytes, header: KernelHeader, key: str, n_cols
    ) -> EvalResult:
        """Launch on every trial and check outputs, guards and inputs. Keeps the kernel for timing."""
        matrix = self.matrices[key]
        function = self._load(kernel_id, cubin)
        resources = _resources(function)
        data, _ = matrix.format_buffers(header, 0)
        sizes = dict(data.sizes, **({"N": n_cols} if n_cols else {}))
        launch = header.launch(sizes)
        resources["dynamic_shared_bytes"] = launch.shared_bytes
        problem = self._launch_problem(function, launch, resources)
        if problem:
            return EvalResult(Verdict.BAD_LAUNCH, problem, resources=resources)
        if launch.shared_bytes > DEFAULT_SHARED_LIMIT:
            function.max_dynamic_shared_size_bytes = launch.shared_bytes
        for index in range(N_TRIALS):
            problem = self._run_and_check(function, header, launch, matrix, index, n_cols)
            if problem:
                return EvalResult(
                    Verdict.WRONG_RESULT, f"trial {index}: {problem}", resources=resources
                )
        self.kernels[kernel_id] = (function, header, launch, key, n_cols)
        return EvalResult(Verdict.CORRECT, resources=resources)

    def recheck(self, kernel_id: str) -> str:
        """After timing: run trial 1 again with a fresh dense input; '' when still right.

        A kernel that cached its result from an earlier launch fails here."""
        function, header, launch, key, n_cols = self.kernels[kernel_id]
        matrix = self.matrices[key]
        matrix.refresh_dense(1, n_cols)
        problem = self._run_and_check(function, header, launch, matrix, 1, n_cols)
        return f"re-check after timing: {problem}" if problem else ""

    def time(self, kernel_ids: list[str], key: str, n_cols, baseline: bool, config: TimingConfig):
        """Time verified kernels (and, if asked, every working cuSPARSE algorithm and cupyx)
        on trial 0, interleaved. Returns ({side name: Timing}, cuSPARSE problems by name)."""
        matrix = self.matrices[key]
        trial = matrix.trial(0, n_cols)
        sides = {kid: self._launcher(kid) for kid in kernel_ids}
        rejected = {}
        if baseline:
            cusparse_side = self._baseline(matrix, trial, n_cols)
            sides.update({f"cusparse:{call.name}": call.call for call in cusparse_side.calls})
            rejected = cusparse_side.rejected
            sides["cupyx"] = self._cupyx_call(trial)
        timings: dict[str, Timing] = self.timer.measure(sides, config)
        return timings, rejected

    # ------------------------------------------------------------------ internals

    def _load(self, kernel_id: str, cubin: bytes):
        path = self._scratch / f"{kernel_id}.cubin"
        path.write_bytes(cubin)
        return cupy.RawModule(path=str(path)).get_function("sparserl_kernel")

    def _wait_for_kernel(self) -> None:
        """Wait for the launch to finish; raise KernelTimeout after `kernel_timeout_s`.
        Only the kernel's own run counts against the timeout, not host-side set-up.
        A fault ends the wait at once and raises from `synchronize`."""
        done = cupy.cuda.Event()
        done.record()
        deadline = time.monotonic() + self.kernel_timeout_s
        while cupy.cuda.runtime.eventQuery(done.ptr) == CUDA_ERROR_NOT_READY:
            if time.monotonic() > deadline:
                raise KernelTimeout(f"the kernel ran longer than {self.kernel_timeout_s:.1f} s")
            time.sleep(0.0005)
        done.synchronize()

    def _launch_problem(self, function, launch, resources) -> str:
        if launch.block > resources["max_threads_per_block"]:
            return (
                f"block {launch.block} exceeds the kernel's limit of "
                f"{resources['max_threads_per_block']} threads (registers or __launch_bounds__)"
            )
        total_shared = launch.shared_bytes + resources["shared_bytes"]
        if total_shared > self.max_shared_optin:
            return (
                f"asks for {total_shared} bytes of shared memory per block; "
                f"{self.name} allows {self.max_shared_optin}"
            )
        return ""

    def _arguments(self, header, matrix, index, output, n_cols):
        """(the entry kernel's arguments in order, the dense input buffer among them)."""
        data, arrays = matrix.format_buffers(header, index)
        dense = matrix.dense_buffer(data, index, n_cols)
        scalars = [np.int32(value) for value in data.scalar_args()]
        if n_cols:
            scalars.append(np.int32(n_cols))
        return (*arrays, dense, output, *scalars), dense

    def _run_and_check(self, function, header, launch, matrix, index, n_cols) -> str:
        trial = matrix.trial(index, n_cols)
        output_whole, output = _guarded(
            np.full(trial.expected.shape, np.nan, np.float32), GUARD_FLOAT
        )
        args, dense = self._arguments(header, matrix, index, output, n_cols)
        dense_before = dense.copy()
        if header.zero_init:
            output.fill(0)
        function((launch.grid,), (launch.block,), args, shared_mem=launch.shared_bytes)
        self._wait_for_kernel()
        if not guards_intact(output_whole, output.size):
            return "wrote outside the output buffer (guard region changed)"
        if not bool(cupy.array_equal(dense_before, dense, equal_nan=True)):
            return "modified its dense input"
        return compare(output.reshape(trial.expected.shape), trial.expected, trial.tolerance)

    def _launcher(self, kernel_id: str):
        function, header, launch, key, n_cols = self.kernels[kernel_id]
        matrix = self.matrices[key]
        output = cupy.empty(matrix.trial(0, n_cols).expected.shape, dtype=cupy.float32)
        args, _ = self._arguments(header, matrix, 0, output, n_cols)
        grid, block, shared = (launch.grid,), (launch.block,), launch.shared_bytes
        if header.zero_init:
            return lambda: (output.fill(0), function(grid, block, args, shared_mem=shared))
        return lambda: function(grid, block, args, shared_mem=shared)

    def _baseline(self, matrix: DeviceMatrix, trial: Trial, n_cols) -> CusparseBaseline:
        if n_cols not in matrix.baselines:
            matrix.baselines[n_cols] = CusparseBaseline(trial)
        return matrix.baselines[n_cols]

    def _cupyx_call(self, trial: Trial):
        A = cupyx_csr(trial.matrix)
        dense = cupy.asarray(trial.dense)
        return lambda: A @ dense


def cupyx_csr(A: sp.csr_matrix):
    """A device copy of a scipy CSR matrix as a cupyx CSR matrix."""
    import cupyx.scipy.sparse

    return cupyx.scipy.sparse.csr_matrix(A)


def _resources(function) -> dict[str, int]:
    attributes = function.attributes
    return {
        "registers": int(attributes["num_regs"]),
        "shared_bytes": int(attributes["shared_size_bytes"]),
        "local_bytes": int(attributes["local_size_bytes"]),
        "max_threads_per_block": int(attributes["max_threads_per_block"]),
    }
