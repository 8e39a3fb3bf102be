"""The GPU worker process and the parent's handle on it.

Untrusted kernels run only in the worker. A kernel that hangs is killed with its
worker by the parent's timeout; a CUDA fault (illegal address, ...) poisons the
worker's CUDA context, so the worker reports it and exits. Either way the parent
starts a fresh worker on the next request: its own process never touches CUDA.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from dataclasses import dataclass

# Launch failures that leave the CUDA context usable.
_RECOVERABLE = ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "CUDA_ERROR_INVALID_VALUE")


class WorkerTimeout(Exception):
    """The worker did not answer in time; it has been killed."""


class WorkerCrashed(Exception):
    """The worker died or reported a CUDA fault; the message says which."""


class LaunchFailed(Exception):
    """The launch itself was refused (resources, invalid geometry); the worker lives on."""


@dataclass
class DeviceInfo:
    """What the worker found: device name, compute capability (e.g. 'sm_90'), L2 bytes."""

    name: str
    arch: str
    l2_bytes: int


def _serve(conn, device_id: int, seed: int | None, kernel_timeout_s: float) -> None:
    """Worker main loop: answer (method, args) requests with ('ok', value) or an error tag."""
    import cupy

    cupy.cuda.Device(device_id).use()
    from sparserl.harness.executor import Executor, KernelTimeout

    executor = Executor(kernel_timeout_s)
    major, minor = cupy.cuda.Device().compute_capability
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    conn.send(("ok", DeviceInfo(executor.name, f"sm_{major}{minor}", l2)))
    while True:
        try:
            method, args = conn.recv()
        except EOFError:
            return
        if method == "stop":
            return
        try:
            if method == "add_matrix":
                value = executor.add_matrix(*args[:2], seed=seed)
            else:
                value = getattr(executor, method)(*args)
            conn.send(("ok", value))
        except KernelTimeout as error:
            conn.send(("kernel_timeout", str(error)))
            return  # the kernel still runs; only the end of this process stops it
        except (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError) as error:
            message = str(error)
            if any(code in message for code in _RECOVERABLE):
                conn.send(("launch_failed", message))
                continue
            conn.send(("cuda_error", message))
            return  # the context may be poisoned: never run anything else in it
        except Exception:
            conn.send(("error", traceback.format_exc()))


class Worker:
    """One worker process on one GPU. Restarts itself lazily after a crash or timeout."""

    def __init__(
        self,
        device_id: int = 0,
        seed: int | None = None,
        kernel_timeout_s: float = 10.0,
        start_timeout_s: float = 120.0,
    ):
        self.device_id = device_id
        self.seed = seed
        self.kernel_timeout_s = kernel_timeout_s
        self.start_timeout_s = start_timeout_s
        self._process = None
        self._conn = None
        self.info: DeviceInfo | None = None
        self.loaded: set[str] = set()  # matrix keys the current process holds
        self.generation = 0  # how many worker processes have been started

    def call(self, method: str, *args, timeout_s: float):
        """Run `method` of the worker's Executor with `args`; raises on timeout or crash."""
        self.start()
        self._conn.send((method, args))
        if not self._conn.poll(timeout_s):
            self._kill()
            raise WorkerTimeout(f"no answer from the GPU worker within {timeout_s:.1f} s")
        try:
            tag, value = self._conn.recv()
        except (EOFError, ConnectionResetError):
            self._kill()
            raise WorkerCrashed("the GPU worker died (a CUDA fault or a crash)") from None
        if tag == "ok":
            return value
        if tag == "kernel_timeout":
            self._kill()
            raise WorkerTimeout(value)
        if tag == "launch_failed":
            raise LaunchFailed(value)
        if tag == "cuda_error":
            self._kill()
            raise WorkerCrashed(value)
        raise RuntimeError(f"the GPU worker failed:\n{value}")

    def start(self) -> DeviceInfo:
        """Start the worker process if it is not running; returns what it found."""
        if self._process is not None and self._process.is_alive():
            return self.info
        self._kill()
        self.generation += 1
        context = mp.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child, self.device_id, self.seed, self.kernel_timeout_s),
            daemon=True,
        )
        process.start()
        child.close()
        self._process, self._conn = process, parent
        if not parent.poll(self.start_timeout_s):
            self._kill()
            raise WorkerCrashed("the GPU worker did not start")
        tag, value = parent.recv()
        if tag != "ok":
            self._kill()
            raise WorkerCrashed(f"the GPU worker failed to start: {value}")
        self.info = value
        self.loaded = set()
        return value

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(timeout=10)
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None
        self.loaded = set()

    def close(self) -> None:
        if self._process is not None and self._process.is_alive():
            try:
                self._conn.send(("stop", ()))
                self._process.join(timeout=10)
            except (BrokenPipeError, OSError):
                pass
        self._kill()
