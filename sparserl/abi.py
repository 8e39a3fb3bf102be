"""The kernel ABI: the header a generated kernel carries and the entry signature it must have.

docs/kernel_abi.md is the prose version of this module. A source text starts with a
`/*@sparserl ... */` block of `key: value` lines; `parse_header` turns it into a
`KernelHeader`, whose `launch` method evaluates the launch geometry for concrete sizes.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, field

ENTRY_NAME = "sparserl_kernel"
OPS = ("spmv", "spmm")
SPMM_WIDTHS = (8, 16, 32, 64, 128)
MAX_THREADS_PER_BLOCK = 1024


class ABIError(ValueError):
    """A kernel source breaks the ABI: bad or missing header, unknown format, bad expression."""


@dataclass(frozen=True)
class FormatSpec:
    """What one storage format passes to the entry kernel.

    `arrays` are (C type, name) pairs in argument order; `scalars` likewise (all `int`).
    `default_params` holds the format's parameters with their defaults.
    """

    arrays: tuple[tuple[str, str], ...]
    scalars: tuple[str, ...]
    default_params: dict[str, str] = field(default_factory=dict)


_CSR_ARRAYS = (("const int*", "row_ptr"), ("const int*", "col_idx"), ("const float*", "values"))
MAX_U16_COLUMNS = 1 << 16  # a column index of csr_u16 fits 16 unsigned bits

FORMATS: dict[str, FormatSpec] = {
    # pad_rows=1: every row padded to the longest one with (column 0, value 0) entries.
    "csr": FormatSpec(_CSR_ARRAYS, ("m", "n", "nnz"), {"pad_rows": "0"}),
    # CSR with 16-bit column indices (n <= MAX_U16_COLUMNS): 6 bytes per entry, not 8.
    "csr_u16": FormatSpec(
        (
            ("const int*", "row_ptr"),
            ("const unsigned short*", "col_idx"),
            ("const float*", "values"),
        ),
        ("m", "n", "nnz"),
        {"pad_rows": "0"},
    ),
    "csr_rowblocks": FormatSpec(
        _CSR_ARRAYS + (("const int*", "row_blocks"),),
        ("m", "n", "nnz", "n_row_blocks"),
        {"block_nnz": "1024"},
    ),
    "coo": FormatSpec(
        (("const int*", "row_idx"), ("const int*", "col_idx"), ("const float*", "values")),
        ("m", "n", "nnz"),
    ),
    "coo_windowed": FormatSpec(
        (("const int*", "row_idx"), ("const int*", "col_idx"), ("const float*", "values")),
        ("m", "n", "n_windows"),
        {"window": "64"},
    ),
    "column_tiles": FormatSpec(
        (
            ("const int*", "tile_ptr"),
            ("const int*", "tile_column"),
            ("const int*", "segment_row"),
            ("const int*", "segment_ptr"),
            ("const int*", "col_idx"),
            ("const float*", "values"),
        ),
        ("m", "n", "nnz", "n_tiles"),
        {"rows": "64", "columns": "128"},
    ),
    "coo_panels": FormatSpec(
        (
            ("const int*", "chunk_ptr"),
            ("const int*", "chunk_row"),
            ("const int*", "chunk_column"),
            ("const int*", "local_idx"),
            ("const float*", "values"),
        ),
        ("m", "n", "nnz", "n_chunks"),
        {
            "rows": "4096",
            "columns": "16384",
            "column_sorted": "0",
            "chunk": "4096",
            "long_rows": "0",
        },
    ),
    "ell": FormatSpec((("const int*", "col_idx"), ("const float*", "values")), ("m", "n", "width")),
    "hyb": FormatSpec(
        (
            ("const int*", "ell_row"),
            ("const int*", "ell_col_idx"),
            ("const float*", "ell_values"),
            ("const int*", "long_row"),
            ("const int*", "long_col_idx"),
            ("const float*", "long_values"),
        ),
        ("m", "n", "n_ell_rows", "n_long_rows", "long_width"),
        {"width": "16"},
    ),
    "sell": FormatSpec(
        (
            ("const int*", "slice_ptr"),
            ("const int*", "row_perm"),
            ("const int*", "col_idx"),
            ("const float*", "values"),
        ),
        ("m", "n", "n_slices"),
        {"slice": "32", "sigma": "256"},
    ),
    "dia": FormatSpec((("const int*", "offsets"), ("const float*", "data")), ("m", "n", "n_diags")),
    "bsr": FormatSpec(
        (
            ("const int*", "block_row_ptr"),
            ("const int*", "block_col_idx"),
            ("const float*", "values"),
        ),
        ("m", "n", "n_block_rows"),
        {"block": "4x4"},
    ),
}

_HEADER_KEYS = {"op", "format", "params", "grid", "block", "shared", "init"}
_REQUIRED_KEYS = ("op", "format", "grid", "block")
_HEADER_RE = re.compile(r"/\*@sparserl\b(.*?)\*/", re.DOTALL)


def entry_parameter_types(op: str, format: str) -> list[str]:
    """C types of the entry kernel's parameters, in order, for `op` and `format`.

    Types are normalised: no `__restrict__`, `*` attached to the type, e.g.
    `["const int*", "const int*", "const float*", "const float*", "float*", "int", "int", "int"]`
    for CSR SpMV.
    """
    spec = _format_spec(format)
    _check_op(op)
    types = [ctype for ctype, _ in spec.arrays] + ["const float*", "float*"]
    types += ["int"] * len(spec.scalars)
    if op == "spmm":
        types.append("int")
    return types


def array_type(format: str, name: str) -> str:
    """Element type of the format's array `name`: array_type("csr_u16", "col_idx") is
    "unsigned short"."""
    types = {
        array: ctype.removeprefix("const ").removesuffix("*")
        for ctype, array in _format_spec(format).arrays
    }
    if name not in types:
        raise ABIError(f"format '{format}' has no array '{name}' (arrays: {', '.join(types)})")
    return types[name]


def entry_parameter_names(op: str, format: str) -> list[str]:
    """Conventional parameter names matching `entry_parameter_types` (used in docs and kernels)."""
    spec = _format_spec(format)
    dense = ["x", "y"] if _check_op(op) == "spmv" else ["B", "C"]
    names = [name for _, name in spec.arrays] + dense + list(spec.scalars)
    return names + (["N"] if op == "spmm" else [])


@dataclass(frozen=True)
class LaunchConfig:
    """A concrete launch: 1-D grid and block sizes and dynamic shared memory in bytes."""

    grid: int
    block: int
    shared_bytes: int


@dataclass(frozen=True)
class KernelHeader:
    """The parsed `/*@sparserl ... */` block of a kernel source.

    `grid`, `block` and `shared` are the unevaluated expressions; `params` holds the
    format's parameters with defaults filled in (values are strings, e.g. {"block": "4x4"}).
    `zero_init` is True when the harness must zero the output before the launch.
    """

    op: str
    format: str
    params: dict[str, str]
    grid: str
    block: str
    shared: str
    zero_init: bool

    def launch(self, sizes: dict[str, int]) -> LaunchConfig:
        """Evaluate the geometry for `sizes` (m, n, nnz, N and the format's scalars)."""
        grid = evaluate_expression(self.grid, sizes)
        block = evaluate_expression(self.block, sizes)
        shared = evaluate_expression(self.shared, sizes)
        if grid < 1:
            raise ABIError(f"grid '{self.grid}' evaluates to {grid}; it must be at least 1")
        if not 1 <= block <= MAX_THREADS_PER_BLOCK:
            raise ABIError(f"block '{self.block}' evaluates to {block}; it must be 1..1024")
        if shared < 0:
            raise ABIError(f"shared '{self.shared}' evaluates to {shared}; it must be >= 0")
        return LaunchConfig(grid, block, shared)


def parse_header(source: str) -> KernelHeader:
    """Read the ABI header of `source`; raises `ABIError` naming the line that is wrong."""
    match = _HEADER_RE.search(source)
    if match is None:
        raise ABIError("no '/*@sparserl ... */' header block found at the top of the kernel")
    first_line = source.count("\n", 0, match.start(1)) + 1
    entries = _header_entries(match.group(1), first_line)
    missing = [key for key in _REQUIRED_KEYS if key not in entries]
    if missing:
        raise ABIError(f"header is missing the required key(s): {', '.join(missing)}")
    op = _check_op(entries["op"])
    format = entries["format"]
    _format_spec(format)
    init = entries.get("init", "none")
    if init not in ("none", "zero"):
        raise ABIError(f"header key 'init' must be 'none' or 'zero', got '{init}'")
    header = KernelHeader(
        op=op,
        format=format,
        params=parse_format_params(format, entries.get("params", "-")),
        grid=entries["grid"],
        block=entries["block"],
        shared=entries.get("shared", "0"),
        zero_init=init == "zero",
    )
    names = size_names(op, format)
    for key in ("grid", "block", "shared"):
        _check_expression(getattr(header, key), names, key)
    return header


def size_names(op: str, format: str) -> tuple[str, ...]:
    """Names a launch expression may use for this op and format."""
    names = dict.fromkeys(_format_spec(format).scalars + ("nnz",))
    if format == "bsr":
        names["nnzb"] = None
    if op == "spmm":
        names["N"] = None
    return tuple(names)


def parse_format_params(format: str, text: str) -> dict[str, str]:
    """Parse 'key=value key=value' (or '-') into the format's parameters, defaults filled in."""
    params = dict(_format_spec(format).default_params)
    if text.strip() in ("", "-"):
        return params
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or not value:
            raise ABIError(f"format parameter '{item}' is not of the form key=value")
        if key not in params:
            known = ", ".join(params) or "none"
            raise ABIError(f"format '{format}' has no parameter '{key}' (known: {known})")
        params[key] = value
    return params


def bsr_block_shape(params: dict[str, str]) -> tuple[int, int]:
    """The (rows, cols) of a BSR block from its 'block=RxC' parameter."""
    rows, sep, cols = params["block"].partition("x")
    if not (sep and rows.isdigit() and cols.isdigit() and int(rows) > 0 and int(cols) > 0):
        raise ABIError(f"bsr parameter block='{params['block']}' must look like 4x4")
    return int(rows), int(cols)


# ---------------------------------------------------------------------------- expressions

_BINARY_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_FUNCTIONS = {"min": min, "max": max, "ceil_div": lambda a, b: -(-a // b)}


def evaluate_expression(text: str, sizes: dict[str, int]) -> int:
    """Evaluate a launch expression such as 'ceil_div(m, 4)' with integer `sizes`."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise ABIError(f"cannot parse expression '{text}': {error.msg}") from None
    return _evaluate(tree.body, sizes, text)


def _evaluate(node: ast.AST, sizes: dict[str, int], text: str) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in sizes:
            raise ABIError(f"expression '{text}' uses unknown name '{node.id}'")
        return int(sizes[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPS:
        left, right = _evaluate(node.left, sizes, text), _evaluate(node.right, sizes, text)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise ABIError(f"expression '{text}' divides by zero")
        return _BINARY_OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, sizes, text)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and len(node.args) == 2
        and not node.keywords
    ):
        a, b = (_evaluate(arg, sizes, text) for arg in node.args)
        if node.func.id == "ceil_div" and b == 0:
            raise ABIError(f"expression '{text}' divides by zero")
        return _FUNCTIONS[node.func.id](a, b)
    raise ABIError(
        f"expression '{text}' may only use integers, + - * // %, parentheses, "
        "min(a, b), max(a, b), ceil_div(a, b) and size names"
    )


def _check_expression(text: str, names: tuple[str, ...], key: str) -> None:
    """Evaluate once with every size set to 1000 to reject unknown names and syntax early."""
    try:
        evaluate_expression(text, dict.fromkeys(names, 1000))
    except ABIError as error:
        raise ABIError(f"header key '{key}': {error}") from None


# ---------------------------------------------------------------------------- helpers


def _header_entries(body: str, first_line: int) -> dict[str, str]:
    entries: dict[str, str] = {}
    for offset, raw in enumerate(body.split("\n")):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        where = f"header line {first_line + offset}"
        if not sep or not value:
            raise ABIError(f"{where}: expected 'key: value', got '{raw.strip()}'")
        if key not in _HEADER_KEYS:
            raise ABIError(
                f"{where}: unknown key '{key}' (known: {', '.join(sorted(_HEADER_KEYS))})"
            )
        if key in entries:
            raise ABIError(f"{where}: key '{key}' given twice")
        entries[key] = value
    return entries


def _format_spec(format: str) -> FormatSpec:
    if format not in FORMATS:
        raise ABIError(f"unknown format '{format}' (known: {', '.join(FORMATS)})")
    return FORMATS[format]


def _check_op(op: str) -> str:
    if op not in OPS:
        raise ABIError(f"unknown op '{op}' (known: spmv, spmm)")
    return op


# ---------------------------------------------------------------------------- entry signature

_ATTRIBUTES = r"(?:(?:__launch_bounds__|__cluster_dims__)\s*\([^)]*\)\s+)*"
_ENTRY_RE = re.compile(
    r'extern\s+"C"\s+__global__\s+'
    + _ATTRIBUTES
    + r"void\s+"
    + _ATTRIBUTES
    + ENTRY_NAME
    + r"\s*\(([^)]*)\)"
)


def normalise_parameter_type(declaration: str) -> str:
    """'const float* __restrict__ x' -> 'const float*'; 'const int m' -> 'int'.

    Drops the parameter name, `__restrict__`, `const` on the pointer itself
    (`float* const y`) and on by-value scalars: none changes what the harness passes.
    """
    tokens = re.findall(r"\*|[A-Za-z_]\w*", declaration)
    tokens = [token for token in tokens if token != "__restrict__"]
    if len(tokens) > 1 and tokens[-1] not in ("*", "const"):
        tokens = tokens[:-1]  # the parameter name
    while tokens and tokens[-1] == "const" and "*" in tokens:
        tokens = tokens[:-1]  # a const pointer passes the same argument
    if "*" not in tokens:
        tokens = [token for token in tokens if token != "const"]  # by-value const
    return " ".join(tokens).replace(" *", "*")


def check_entry_signature(source: str, op: str, format: str) -> None:
    """Raise `ABIError` unless `source` defines `extern "C" __global__ void sparserl_kernel`
    with exactly the parameter types of `entry_parameter_types(op, format)`."""
    matches = _ENTRY_RE.findall(_strip_comments(source))
    if not matches:
        raise ABIError(f'no definition of extern "C" __global__ void {ENTRY_NAME}(...) found')
    if len(matches) > 1:
        raise ABIError(f"{ENTRY_NAME} is defined {len(matches)} times")
    params = [p for p in (part.strip() for part in matches[0].split(",")) if p]
    got = [normalise_parameter_type(p) for p in params]
    expected = entry_parameter_types(op, format)
    if got != expected:
        raise ABIError(
            f"{ENTRY_NAME} for {op}/{format} must take ({', '.join(expected)}), got ({', '.join(got)})"
        )


def _strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", " ", source)
