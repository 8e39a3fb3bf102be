"""What a CUDA compile reports, shared by the nvcc (CPU) and NVRTC (GPU) paths.

Both compilers use the same front end, so both print diagnostics as
`<file>(<line>): error: <message>`, followed by the offending source line and a caret
under the column. `parse_diagnostics` reads that format; `parse_ptxas_resources` reads
the per-kernel resource usage that `ptxas -v` prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One compiler message. `line` and `column` are 1-based; None when the compiler gave none."""

    line: int | None
    column: int | None
    severity: Severity
    message: str


@dataclass(frozen=True)
class KernelResources:
    """Resource usage of one kernel as ptxas reports it (all sizes in bytes, per thread
    except `shared_bytes`, which is the static shared memory per block)."""

    registers: int
    shared_bytes: int
    local_bytes: int  # the stack frame: local arrays and spills
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int


@dataclass(frozen=True)
class CompileResult:
    """The outcome of compiling one translation unit.

    `ok` is True when the compiler produced code; `diagnostics` holds its errors and
    warnings (never raised), `log` the raw compiler output, `resources` the usage of each
    kernel by (possibly mangled) name, `seconds` the wall time of the compile.
    """

    ok: bool
    diagnostics: list[Diagnostic]
    log: str
    resources: dict[str, KernelResources]
    seconds: float

    @property
    def errors(self) -> list[Diagnostic]:
        return [diagnostic for diagnostic in self.diagnostics if diagnostic.severity == "error"]


# A header line such as 'kernel.cu(12): error: expected a ";"' or
# 'kernel.cu(3): warning #177-D: variable "i" was declared but never referenced'.
_DIAGNOSTIC_LINE = re.compile(r"^\S[^\n]*?\((\d+)\): (error|warning)[^:\n]*: (.*)$")
# The front end echoes the source line indented by two spaces, then a caret line.
_ECHO_INDENT = 2


def parse_diagnostics(log: str) -> list[Diagnostic]:
    """Every error and warning in a front-end log, with the column read from the caret line."""
    lines = log.splitlines()
    diagnostics = []
    for index, text in enumerate(lines):
        match = _DIAGNOSTIC_LINE.match(text)
        if match is None:
            continue
        line, severity, message = match.groups()
        column = _caret_column(lines[index + 1 : index + 3])
        diagnostics.append(Diagnostic(int(line), column, cast(Severity, severity), message.strip()))
    return diagnostics


def _caret_column(following: list[str]) -> int | None:
    """The 1-based column under the caret, given the echo line and the caret line."""
    if len(following) < 2:
        return None
    caret_line = following[1]
    if caret_line.strip() != "^":
        return None
    return caret_line.index("^") - _ECHO_INDENT + 1


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_resources(log: str) -> dict[str, KernelResources]:
    """Per-kernel resources from `ptxas -v` output (device functions are left out)."""
    frames: dict[str, tuple[int, int, int]] = {}
    used_lines: dict[str, str] = {}
    entry: str | None = None
    properties_of: str | None = None
    for text in log.splitlines():
        if match := _ENTRY.search(text):
            entry = match.group(1)
        elif match := _PROPERTIES.search(text):
            properties_of = match.group(1)
        elif (match := _FRAME.search(text)) and properties_of is not None:
            stack, stores, loads = (int(value) for value in match.groups())
            frames[properties_of] = (stack, stores, loads)
        elif _USED.search(text) and entry is not None:
            used_lines[entry] = text
    return {
        name: _resources(used, frames.get(name, (0, 0, 0))) for name, used in used_lines.items()
    }


def _resources(used_line: str, frame: tuple[int, int, int]) -> KernelResources:
    def number(pattern: re.Pattern[str]) -> int:
        match = pattern.search(used_line)
        return int(match.group(1)) if match else 0

    stack, spill_stores, spill_loads = frame
    return KernelResources(
        registers=number(_USED),
        shared_bytes=number(_SMEM),
        local_bytes=stack,
        spill_store_bytes=spill_stores,
        spill_load_bytes=spill_loads,
        barriers=number(_BARRIERS),
    )
