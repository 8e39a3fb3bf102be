"""Compile one CUDA translation unit with the installed `nvcc`: the CPU twin of the NVRTC path.

Device code only (`-cubin`), C++17, with `-Xptxas -v` so every kernel's registers,
shared memory, stack and spills come back alongside the diagnostics. Nothing is cached.

    result = compile_check(source)
    result.ok, result.diagnostics, result.resources["sparserl_kernel"].registers
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from sparserl.harness.diagnostics import (
    CompileResult,
    Diagnostic,
    KernelResources,
    parse_diagnostics,
    parse_ptxas_resources,
)

__all__ = ["CompileResult", "Diagnostic", "KernelResources", "compile_check", "nvcc_path"]

SOURCE_NAME = "kernel.cu"


def nvcc_path() -> str:
    """The `nvcc` on PATH; raises RuntimeError when there is none."""
    path = shutil.which("nvcc")
    if path is None:
        raise RuntimeError(
            "nvcc was not found on PATH: install the CUDA toolkit (or add its bin/ folder to PATH)"
        )
    return path


def compile_check(source: str, *, arch: str = "sm_90", timeout_s: float = 60) -> CompileResult:
    """Compile `source` for `arch` (e.g. 'sm_90') and report diagnostics and per-kernel resources.

    Bad code never raises: it comes back as `ok=False` with the compiler's errors (a compile
    that runs past `timeout_s` seconds too). Only a missing nvcc raises RuntimeError.
    Diagnostic line numbers refer to `source`.
    """
    command = [
        nvcc_path(),
        f"-arch={arch}",
        "-std=c++17",
        "-cubin",
        "-Xptxas",
        "-v",
        "-o",
        "kernel.cubin",
        SOURCE_NAME,
    ]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sparserl_nvcc_") as folder:
        Path(folder, SOURCE_NAME).write_text(source)
        try:
            process = subprocess.run(
                command,
                cwd=folder,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as expired:
            log = _text(expired.output)
            message = f"nvcc did not finish within {timeout_s:g} s"
            seconds = time.perf_counter() - start
            return CompileResult(
                False, [Diagnostic(None, None, "error", message)], log, {}, seconds
            )
    seconds = time.perf_counter() - start
    log = process.stdout
    ok = process.returncode == 0
    diagnostics = parse_diagnostics(log)
    if not ok and not any(diagnostic.severity == "error" for diagnostic in diagnostics):
        message = log.strip() or f"nvcc exited with status {process.returncode}"
        diagnostics.append(Diagnostic(None, None, "error", message))
    resources = parse_ptxas_resources(log) if ok else {}
    return CompileResult(ok, diagnostics, log, resources, seconds)


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""
