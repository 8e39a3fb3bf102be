"""Compile kernel sources to cubins with NVRTC (device code only), with a cache by source hash.

NVRTC runs on the host and needs no CUDA context, so compiles run in a pool of CPU
processes while the GPU worker only loads cubins. Requires CuPy (the `gpu` extra).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from sparserl.harness.diagnostics import Diagnostic, parse_diagnostics


@dataclass(frozen=True)
class CompiledModule:
    """An NVRTC compile: the cubin on success, diagnostics either way. Seconds are wall time."""

    ok: bool
    cubin: bytes
    diagnostics: list[Diagnostic]
    log: str
    seconds: float


def source_hash(source: str, arch: str) -> str:
    return hashlib.sha256(f"{arch}\0{source}".encode()).hexdigest()


def cuda_include_dirs() -> list[str]:
    """CUDA's include folder, so `#include <cooperative_groups.h>` and CCCL headers resolve."""
    roots = [os.environ.get("CUDA_PATH", ""), os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    found = []
    for root in filter(None, roots):
        for sub in ("include", "include/cccl"):
            if (Path(root) / sub).is_dir():
                found.append(str(Path(root) / sub))
    return found


def nvrtc_compile(source: str, arch: str) -> CompiledModule:
    """Compile `source` for `arch` (e.g. 'sm_90') into a cubin. Never raises for bad code."""
    from cupy_backends.cuda.libs import nvrtc

    options = [f"-arch={arch}", "-std=c++17", "-default-device"]
    options += [f"--include-path={path}" for path in cuda_include_dirs()]
    start = time.perf_counter()
    program = nvrtc.createProgram(source, "kernel.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, options)
            ok = True
        except nvrtc.NVRTCError:
            ok = False
        log = nvrtc.getProgramLog(program)
        cubin = nvrtc.getCUBIN(program) if ok else b""
    finally:
        nvrtc.destroyProgram(program)
    diagnostics = parse_diagnostics(log)
    if not ok and not any(d.severity == "error" for d in diagnostics):
        diagnostics.append(Diagnostic(None, None, "error", log.strip() or "NVRTC failed"))
    return CompiledModule(ok, cubin, diagnostics, log, time.perf_counter() - start)


class CubinCache:
    """Cubins on disk under `folder`, keyed by `source_hash`; failed compiles are not cached."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> bytes | None:
        path = self.folder / f"{key}.cubin"
        return path.read_bytes() if path.exists() else None

    def put(self, key: str, cubin: bytes) -> None:
        tmp = self.folder / f"{key}.tmp{os.getpid()}"
        tmp.write_bytes(cubin)
        tmp.replace(self.folder / f"{key}.cubin")
