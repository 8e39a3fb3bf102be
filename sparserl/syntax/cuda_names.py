"""The names CUDA code may use without declaring them, and those common headers add.

nvcc puts `cuda_runtime.h` (and with it the math library, the vector types, the
intrinsics and parts of the C library) into every translation unit. The names it
declares at global scope and the macros it defines are stored in `cuda_names.txt`,
generated from the installed compiler, together with the names each of a few common
headers (`cuda_fp16.h`, `cooperative_groups.h`, `cstdint`, ...) adds:

    python -c "import sparserl.syntax.cuda_names as n; n.write(n.generate())"   # ~30 s

One line per name: `<kind> <name>` for the always-present names, `<kind> <name>
<header>,<header>...` for names only those headers add. Kinds: type, function (any
value), namespace, macro, name (a declared name whose kind the scan could not tell). Headers add only their public names: reserved ones (`__x`,
`_X`) are left out, and the checker accepts any reserved name once a header is included.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from pathlib import Path

from sparserl.syntax.header_scan import global_names
from sparserl.syntax.vocabulary import KEYWORDS

NAMES_FILE = Path(__file__).with_name("cuda_names.txt")
KINDS = ("type", "function", "namespace", "macro", "name")  # 'name': of unknown kind
_UNDEFINED = re.compile(r'identifier "(\w+)" is undefined')
# Headers whose names are stored; an #include of any other header leaves the checker
# unable to know which names exist.
KNOWN_HEADERS = (
    "cuda_runtime.h",
    "cuda_fp16.h",
    "cuda_bf16.h",
    "cooperative_groups.h",
    "cooperative_groups/reduce.h",
    "cooperative_groups/memcpy_async.h",
    "mma.h",
    "cuda_pipeline.h",
    "math_constants.h",
    "cstdint",
    "stdint.h",
    "cfloat",
    "float.h",
    "climits",
    "limits.h",
    "cmath",
    "math.h",
    "cstdio",
    "stdio.h",
    "cstdlib",
    "stdlib.h",
    "cstring",
    "string.h",
    "cassert",
    "assert.h",
)
_RESERVED = re.compile(r"^(__|_[A-Z])")


def is_reserved(name: str) -> bool:
    """Names reserved for the implementation: '__x' and '_X'."""
    return _RESERVED.match(name) is not None


@functools.cache
def builtin_kinds() -> dict[str, str]:
    """Kind of every name in scope in every CUDA translation unit."""
    return _stored_names()[""]


def header_kinds(header: str) -> dict[str, str] | None:
    """Kind of every public name `header` adds, or None for a header not in KNOWN_HEADERS."""
    if header not in KNOWN_HEADERS:
        return None
    return _stored_names().get(header, {})


@functools.cache
def _stored_names() -> dict[str, dict[str, str]]:
    """The names of `cuda_names.txt` by header ('' for the always-present ones)."""
    by_header: dict[str, dict[str, str]] = {"": {}}
    for number, line in enumerate(NAMES_FILE.read_text().splitlines(), start=1):
        fields = line.split(" ")
        if len(fields) not in (2, 3) or fields[0] not in KINDS:
            raise ValueError(
                f"{NAMES_FILE}:{number}: expected '<kind> <name> [<headers>]', got {line!r}"
            )
        for header in fields[2].split(",") if len(fields) == 3 else [""]:
            by_header.setdefault(header, {})[fields[1]] = fields[0]
    return by_header


def generate(nvcc: str = "nvcc", arch: str = "sm_90") -> dict[str, dict[str, str]]:
    """Collect the names from the installed compiler, by header ('' for the base)."""
    base = _declared_names(nvcc, arch, None)
    by_header = {"": base}
    for header in KNOWN_HEADERS:
        added = _declared_names(nvcc, arch, header)
        by_header[header] = {
            name: kind for name, kind in added.items() if name not in base and not is_reserved(name)
        }
    return by_header


def write(by_header: dict[str, dict[str, str]], path: Path = NAMES_FILE) -> None:
    """Store names by header ('' for the base), one line per name and kind."""
    headers_of: dict[tuple[str, str], list[str]] = {}
    for header, names in by_header.items():
        for name, kind in names.items():
            headers_of.setdefault((kind, name), []).append(header)
    lines = []
    for (kind, name), headers in sorted(
        headers_of.items(), key=lambda item: (item[0][1], item[0][0])
    ):
        lines.append(f"{kind} {name}" if "" in headers else f"{kind} {name} {','.join(headers)}")
    path.write_text("\n".join(lines) + "\n")


def _declared_names(nvcc: str, arch: str, header: str | None) -> dict[str, str]:
    """Kind of each global name in a translation unit holding only `#include <header>`.

    The header scan proposes names and kinds; the compiler then judges every identifier
    the preprocessed code mentions (`name;` in a function body: "identifier is undefined"
    or not), so a name the scan missed still counts, with kind 'name'.
    """
    include = f"#include <{header}>\n" if header else "\n"
    scanned, identifiers = global_names(
        _nvcc(nvcc, ["-E", "-Xcompiler", "-dD"], arch, include, check=True)
    )
    candidates = sorted(
        name
        for name in identifiers - set(scanned) | {n for n, k in scanned.items() if k != "macro"}
        if name not in KEYWORDS
    )
    probe = (
        include + "void sparserl_probe() {\n" + "".join(f"{name};\n" for name in candidates) + "}\n"
    )
    log = _nvcc(
        nvcc,
        ["-cubin", "-o", "/dev/null", "-Xcudafe", "--error_limit=1000000"],
        arch,
        probe,
        check=False,
    )
    if (
        "parsing restarts here" in log
    ):  # a keyword the vocabulary lacks swallowed the lines after it
        raise RuntimeError(f"the name probe for {header or 'the base'} lost its way:\n{log[:2000]}")
    undefined = set(_UNDEFINED.findall(log))
    names = {name: scanned.get(name, "name") for name in candidates if name not in undefined}
    names.update({name: kind for name, kind in scanned.items() if kind == "macro"})
    return names


def _nvcc(nvcc: str, options: list[str], arch: str, source: str, check: bool) -> str:
    """Run nvcc on `source`; its standard output (check=True: must succeed) or whole log."""
    with tempfile.TemporaryDirectory(prefix="sparserl_names_") as folder:
        path = Path(folder, "names.cu")
        path.write_text(source)
        command = [nvcc, f"-arch={arch}", "-std=c++17", *options, str(path)]
        process = subprocess.run(command, capture_output=True, text=True, check=False)
    if check and process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{process.stderr}")
    return process.stdout if check else process.stdout + process.stderr
