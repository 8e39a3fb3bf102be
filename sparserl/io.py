"""Reading and writing sparse matrices.

`load_matrix` reads a file into the one matrix type the rest of sparserl uses: a
`scipy.sparse.csr_matrix` with float32 values, int32 `indptr`/`indices`, column indices
sorted inside each row and no repeated positions. Supported files, by name suffix:

- Matrix Market `.mtx` / `.mtx.gz`: coordinate format, field real, integer or pattern,
  symmetry general, symmetric or skew-symmetric.
- DLMC `.smtx` / `.smtx.gz`: a CSR sparsity pattern in three text lines.
- SuiteSparse `.mat`: MATLAB v4/v5/v7 files holding a `Problem` struct with a sparse `A`.
- scipy `.npz`: files written by `scipy.sparse.save_npz`.

`save_matrix` writes `.mtx`, `.mtx.gz` and `.npz` files that load back bit for bit.
Anything wrong with a file raises `MatrixFormatError`, naming the file, the line when
there is one, and what was expected. docs/matrices.md states the rules in one place.
"""

from __future__ import annotations

import gzip
import io
import itertools
import re
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse

INT32_MAX = np.iinfo(np.int32).max

# File name suffix (lower case) -> (file kind, gzip-compressed).
SUFFIXES = {
    ".mtx.gz": ("matrix_market", True),
    ".smtx.gz": ("dlmc", True),
    ".mtx": ("matrix_market", False),
    ".smtx": ("dlmc", False),
    ".mat": ("mat", False),
    ".npz": ("npz", False),
}

# Matrix Market banner tokens, and the structured dtype of one entry line per field.
BANNER_SYNTAX = "'%%MatrixMarket matrix coordinate <field> <symmetry>'"
FORMATS = ("coordinate", "array")
FIELDS = ("real", "integer", "pattern", "complex")
SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
ENTRY_DTYPES = {
    "real": np.dtype([("row", np.int64), ("column", np.int64), ("value", np.float64)]),
    "integer": np.dtype([("row", np.int64), ("column", np.int64), ("value", np.int64)]),
    "pattern": np.dtype([("row", np.int64), ("column", np.int64)]),
}
INTEGER_TOKEN = re.compile(rb"[+-]?[0-9]+")
DLMC_WHITESPACE = b" \t\r\x0b\x0c"  # what bytes.split() splits on, besides newline

VALUE_MODES = ("ones", "random")
DUPLICATE_MODES = ("error", "sum")


class MatrixFormatError(ValueError):
    """A matrix file that cannot be read: missing, corrupt, malformed or unsupported.

    Attributes:
        path: the file.
        line: the 1-based line the problem is on, or None when it is not about one line.
        detail: what is wrong, without the file name.
    """

    def __init__(self, path: str | Path, line: int | None, detail: str):
        self.path = Path(path)
        self.line = line
        self.detail = detail
        where = self.path.name if line is None else f"{self.path.name}, line {line}"
        super().__init__(f"{where}: {detail}")

    def __reduce__(self):
        # Keeps the error picklable (multiprocessing) despite the three-argument __init__.
        return type(self), (self.path, self.line, self.detail)


# --------------------------------------------------------------------------- public API


def load_matrix(
    path: str | Path,
    *,
    values: str = "ones",
    seed: int = 0,
    duplicates: str = "error",
) -> scipy.sparse.csr_matrix:
    """Read a sparse matrix file into canonical float32 CSR.

    Args:
        path: a `.mtx`, `.mtx.gz`, `.smtx`, `.smtx.gz`, `.mat` or `.npz` file.
        values: for pattern data (DLMC files, Matrix Market `pattern`, boolean matrices):
            "ones" gives every entry 1.0; "random" draws uniform values in [0, 1) from
            `numpy.random.default_rng(seed)`, one per stored entry in file order (a
            symmetric pattern gets symmetric values).
        seed: seed for values="random".
        duplicates: Matrix Market files only. "error" rejects a position given twice
            (after symmetric expansion); "sum" adds the values. Other formats always sum.

    Returns:
        csr_matrix of shape (rows, cols): float32 data, int32 indptr and indices, sorted
        indices, no repeated positions. Explicitly stored zeros stay stored entries.

    Raises:
        MatrixFormatError: the file is missing, empty, corrupt, malformed or unsupported.
    """
    _check_choice("values", values, VALUE_MODES)
    _check_choice("duplicates", duplicates, DUPLICATE_MODES)
    path = Path(path)
    kind, compressed = _file_kind(path)
    if not path.is_file():
        problem = "is not a regular file" if path.exists() else "does not exist"
        raise MatrixFormatError(path, None, f"file {problem}")
    if kind == "mat":
        return _csr_from_sparse(path, _read_suitesparse_mat(path), values, seed)
    if kind == "npz":
        return _csr_from_sparse(path, _read_npz(path), values, seed)
    data = _read_bytes(path, compressed)
    if kind == "dlmc":
        return _read_dlmc(path, data, values, seed)
    return _read_matrix_market(path, data, values, seed, duplicates)


def save_matrix(path: str | Path, A: scipy.sparse.spmatrix | scipy.sparse.sparray) -> None:
    """Write A to `.mtx`, `.mtx.gz` or `.npz`; `load_matrix` reads it back exactly.

    A is stored as float32 CSR with repeated positions summed. Matrix Market output is
    `coordinate real general` with 1-based indices and values written with 9 significant
    digits, which round-trips every float32 exactly; `.mtx.gz` uses gzip level 1 (text of
    digits compresses about as well as at higher levels, several times faster).

    Raises:
        TypeError: A is not a scipy sparse matrix.
        ValueError: unsupported suffix, complex values, or non-finite values (which
            `load_matrix` would reject).
    """
    path = Path(path)
    name = path.name.lower()
    if not name.endswith((".mtx", ".mtx.gz", ".npz")):
        raise ValueError(f"save_matrix writes .mtx, .mtx.gz or .npz files, not {path.name!r}")
    if not scipy.sparse.issparse(A):
        raise TypeError(f"save_matrix expects a scipy sparse matrix, got {type(A).__name__}")
    if np.issubdtype(A.dtype, np.complexfloating):
        raise ValueError("complex matrices are not supported")
    csr = scipy.sparse.csr_matrix(A, dtype=np.float32, copy=True)
    csr.sum_duplicates()
    if not np.isfinite(csr.data).all():
        raise ValueError("A holds non-finite values (nan or inf), which load_matrix rejects")
    if name.endswith(".npz"):
        scipy.sparse.save_npz(path, csr, compressed=True)
        return
    compressed = name.endswith(".gz")
    opener = gzip.open if compressed else open
    kwargs = {"compresslevel": 1} if compressed else {}
    with opener(path, "wt", encoding="ascii", newline="\n", **kwargs) as out:
        out.write("%%MatrixMarket matrix coordinate real general\n")
        out.write(f"{csr.shape[0]} {csr.shape[1]} {csr.nnz}\n")
        for chunk in _matrix_market_entry_chunks(csr):
            out.write(chunk)


# --------------------------------------------------------------------------- shared steps


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _file_kind(path: Path) -> tuple[str, bool]:
    """(kind, gzip-compressed) from the file name's suffix."""
    name = path.name.lower()
    for suffix, kind in SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    raise MatrixFormatError(
        path, None, f"unsupported file type; expected one of {', '.join(SUFFIXES)}"
    )


def _read_bytes(path: Path, compressed: bool) -> bytes:
    """The file's contents, gunzipped when compressed; rejects empty files."""
    data = path.read_bytes()
    if compressed:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise MatrixFormatError(path, None, f"corrupt or truncated gzip data ({err})") from err
    if not data or data.isspace():
        raise MatrixFormatError(path, None, "file is empty")
    return data


def _pattern_values(count: int, values: str, seed: int) -> np.ndarray:
    """float32 (count,): ones, or uniform [0, 1) draws from default_rng(seed)."""
    if values == "ones":
        return np.ones(count, dtype=np.float32)
    return np.random.default_rng(seed).random(count, dtype=np.float32)


def _as_float32(
    path: Path, values: np.ndarray, line_of_entry: Callable[[int], int] | None = None
) -> np.ndarray:
    """values as float32; a value that is nan, inf or beyond float32 range is an error."""
    with np.errstate(over="ignore", invalid="ignore"):
        converted = values.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(converted))
    if bad.size:
        k = int(bad[0])
        line = line_of_entry(k) if line_of_entry else None
        raise MatrixFormatError(path, line, f"value {values[k]} is not a finite float32 number")
    return converted


def _coo_to_csr(
    path: Path, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray, values: np.ndarray
) -> scipy.sparse.csr_matrix:
    """Canonical CSR from 0-based, in-range coordinates; repeated positions are summed."""
    if max(shape) > INT32_MAX or values.size > INT32_MAX:
        raise MatrixFormatError(
            path, None, f"{shape[0]} x {shape[1]} with {values.size} entries exceeds int32 indices"
        )
    A = scipy.sparse.csr_matrix((values, (rows, cols)), shape=shape)  # sums, sorts
    A.indptr = A.indptr.astype(np.int32, copy=False)
    A.indices = A.indices.astype(np.int32, copy=False)
    return A


def _csr_from_sparse(path: Path, A, values: str, seed: int) -> scipy.sparse.csr_matrix:
    """Canonical CSR from a scipy sparse matrix read from a binary file (.mat, .npz)."""
    if np.issubdtype(A.dtype, np.complexfloating):
        raise MatrixFormatError(path, None, "complex matrices are not supported")
    coo = A.tocoo()
    if A.dtype == bool:
        data = _pattern_values(coo.nnz, values, seed)
    else:
        data = _as_float32(path, coo.data)
    return _coo_to_csr(path, A.shape, coo.row, coo.col, data)


# --------------------------------------------------------------------------- binary files


def _read_suitesparse_mat(path: Path):
    """Problem.A of a SuiteSparse .mat file (MATLAB v4/v5/v7; v7.3 is HDF5, unsupported)."""
    try:
        contents = scipy.io.loadmat(path)
    except NotImplementedError as err:
        raise MatrixFormatError(
            path, None, "MATLAB v7.3 (HDF5) .mat files are not supported; save with -v7 or as .mtx"
        ) from err
    except Exception as err:
        raise MatrixFormatError(path, None, f"not a readable MATLAB .mat file ({err})") from err
    problem = contents.get("Problem")
    if problem is None or "A" not in (problem.dtype.names or ()):
        raise MatrixFormatError(
            path, None, "expected a SuiteSparse 'Problem' struct with a field 'A'"
        )
    A = problem["A"][0, 0]  # loadmat returns structs as 1x1 arrays
    if not scipy.sparse.issparse(A):
        raise MatrixFormatError(
            path, None, f"Problem.A is not a sparse matrix ({type(A).__name__})"
        )
    return A


def _read_npz(path: Path):
    """The sparse matrix of a scipy.sparse.save_npz file."""
    try:
        return scipy.sparse.load_npz(path)
    except Exception as err:
        raise MatrixFormatError(path, None, f"not a scipy sparse .npz file ({err})") from err


# --------------------------------------------------------------------------- DLMC .smtx


def _read_dlmc(path: Path, data: bytes, values: str, seed: int) -> scipy.sparse.csr_matrix:
    """A DLMC pattern: line 1 '<rows>, <cols>, <nnz>', line 2 row offsets, line 3 columns."""
    lines = data.rstrip().split(b"\n")
    if len(lines) > 3:
        raise MatrixFormatError(
            path, 4, "a DLMC .smtx file has 3 lines (sizes, row offsets, column indices)"
        )
    size_line, offsets_line, columns_line = lines + [b""] * (3 - len(lines))
    sizes = re.fullmatch(rb"\s*([0-9]+)\s*,\s*([0-9]+)\s*,\s*([0-9]+)\s*", size_line)
    if sizes is None:
        raise MatrixFormatError(
            path, 1, f"expected '<rows>, <cols>, <nnz>', got {_shown(size_line)}"
        )
    n_rows, n_cols, nnz = (int(size) for size in sizes.groups())

    offsets = _dlmc_integers(path, 2, offsets_line, "row offset")
    if offsets.size != n_rows + 1:
        raise MatrixFormatError(
            path, 2, f"expected {n_rows + 1} row offsets (rows + 1), got {offsets.size}"
        )
    row_lengths = np.diff(offsets)
    if offsets[0] != 0 or offsets[-1] != nnz or (row_lengths < 0).any():
        raise MatrixFormatError(
            path, 2, f"row offsets must rise from 0 to nnz = {nnz} without decreasing"
        )

    columns = _dlmc_integers(path, 3, columns_line, "column index")
    if columns.size != nnz:
        raise MatrixFormatError(path, 3, f"expected {nnz} column indices, got {columns.size}")
    out_of_range = np.flatnonzero(columns >= n_cols)
    if out_of_range.size:
        k = out_of_range[0]
        raise MatrixFormatError(
            path, 3, f"column index {columns[k]} (entry {k}) out of range 0..{n_cols - 1}"
        )
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), row_lengths)
    return _coo_to_csr(path, (n_rows, n_cols), rows, columns, _pattern_values(nnz, values, seed))


def _dlmc_integers(path: Path, line: int, text: bytes, what: str) -> np.ndarray:
    """The whitespace-separated non-negative integers of one DLMC line, as int64."""
    if text.translate(None, b"0123456789" + DLMC_WHITESPACE):
        bad = next(token for token in text.split() if not token.isdigit())
        raise MatrixFormatError(path, line, f"{what} {_shown(bad)} is not a non-negative integer")
    if not text.strip():
        return np.empty(0, dtype=np.int64)
    return np.fromstring(text, dtype=np.int64, sep=" ")


def _shown(text: bytes, limit: int = 60) -> str:
    """A file fragment quoted for an error message, cut to `limit` characters."""
    shown = text.decode("latin-1")
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")


# --------------------------------------------------------------------------- Matrix Market


@dataclass(frozen=True)
class Banner:
    """The three variable tokens of a Matrix Market banner line, lower case."""

    format: str
    field: str
    symmetry: str


@dataclass(frozen=True)
class EntryBlock:
    """The entry lines of a Matrix Market file: the bytes after the size line."""

    path: Path
    text: bytes
    first_line: int  # file line number of the first line of `text`

    def lines(self) -> Iterator[tuple[int, list[bytes]]]:
        """(line number, tokens) of each line holding an entry; blanks and '%' comments skipped."""
        for offset, line in enumerate(self.text.split(b"\n")):
            tokens = line.split(b"%", 1)[0].split()
            if tokens:
                yield self.first_line + offset, tokens

    def line_of_entry(self, k: int) -> int:
        """File line number of entry k (0-based). Scans the text: for error messages only."""
        return next(itertools.islice(self.lines(), k, None))[0]

    def error(self, k: int, detail: str) -> MatrixFormatError:
        return MatrixFormatError(self.path, self.line_of_entry(k), detail)


def _read_matrix_market(
    path: Path, data: bytes, values: str, seed: int, duplicates: str
) -> scipy.sparse.csr_matrix:
    banner, (n_rows, n_cols, n_entries), block = _read_header(path, data)
    entries = _parse_entries(block, banner.field, n_entries)

    rows, cols = entries["row"] - 1, entries["column"] - 1
    bad = np.flatnonzero((rows < 0) | (rows >= n_rows) | (cols < 0) | (cols >= n_cols))
    if bad.size:
        k = int(bad[0])
        name, index, bound = ("row", rows[k], n_rows)
        if 0 <= rows[k] < n_rows:
            name, index, bound = ("column", cols[k], n_cols)
        raise block.error(k, f"{name} index {index + 1} out of range 1..{bound}")

    if banner.field == "pattern":
        stored = _pattern_values(n_entries, values, seed)
    else:
        stored = _as_float32(path, entries["value"], block.line_of_entry)
    all_rows, all_cols, all_values = _expand_symmetry(rows, cols, stored, banner.symmetry)
    A = _coo_to_csr(path, (n_rows, n_cols), all_rows, all_cols, all_values)
    if duplicates == "error" and A.nnz < all_values.size:
        raise _duplicate_error(block, rows, cols, banner.symmetry != "general")
    return A


def _read_header(path: Path, data: bytes) -> tuple[Banner, tuple[int, int, int], EntryBlock]:
    """Banner (line 1), then the size line after any '%' comments and blank lines."""
    lines = _header_lines(data)
    _, banner_text, _ = next(lines)
    banner = _parse_banner(path, banner_text)
    for line, text, end in lines:
        if text and not text.startswith("%"):
            sizes = _parse_size_line(path, line, text, banner)
            return banner, sizes, EntryBlock(path, data[end:], line + 1)
    raise MatrixFormatError(path, None, "file ends before the size line '<rows> <cols> <entries>'")


def _header_lines(data: bytes) -> Iterator[tuple[int, str, int]]:
    """(line number, stripped text, offset just past the line) for lines from the start."""
    start, line = 0, 1
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield line, data[start:end].decode("latin-1").strip(), end + 1
        start, line = end + 1, line + 1


def _parse_banner(path: Path, text: str) -> Banner:
    """Validate `%%MatrixMarket matrix <format> <field> <symmetry>` (case-insensitive)."""
    tokens = text.lower().split()
    if not tokens or tokens[0] != "%%matrixmarket":
        raise MatrixFormatError(
            path, 1, f"missing Matrix Market banner: expected {BANNER_SYNTAX}, got {text[:60]!r}"
        )
    if len(tokens) != 5:
        raise MatrixFormatError(
            path, 1, f"banner must have 5 tokens {BANNER_SYNTAX}, got {len(tokens)}"
        )
    _, obj, fmt, field, symmetry = tokens
    for what, token, allowed in [
        ("object", obj, ("matrix",)),
        ("format", fmt, FORMATS),
        ("field", field, FIELDS),
        ("symmetry", symmetry, SYMMETRIES),
    ]:
        if token not in allowed:
            raise MatrixFormatError(
                path, 1, f"unknown {what} {token!r} in banner; expected one of {allowed}"
            )
    if symmetry == "hermitian" and field != "complex":
        raise MatrixFormatError(path, 1, f"'hermitian' needs the 'complex' field, got {field!r}")
    if field == "pattern" and fmt == "array":
        raise MatrixFormatError(path, 1, "the 'pattern' field is invalid with the 'array' format")
    if field == "pattern" and symmetry == "skew-symmetric":
        raise MatrixFormatError(path, 1, "the 'pattern' field is invalid with 'skew-symmetric'")
    if field == "complex":
        raise MatrixFormatError(path, 1, "complex matrices are not supported")
    if fmt == "array":
        raise MatrixFormatError(
            path, 1, "array (dense) format is not supported; store the matrix as 'coordinate'"
        )
    return Banner(fmt, field, symmetry)


def _parse_size_line(path: Path, line: int, text: str, banner: Banner) -> tuple[int, int, int]:
    """(rows, cols, stored entries) from the size line."""
    tokens = text.split("%", 1)[0].split()
    if len(tokens) != 3 or not all(token.isdigit() for token in tokens):
        raise MatrixFormatError(
            path, line, f"size line must be 3 integers '<rows> <cols> <entries>', got {text[:60]!r}"
        )
    n_rows, n_cols, n_entries = (int(token) for token in tokens)
    if banner.symmetry != "general" and n_rows != n_cols:
        raise MatrixFormatError(
            path, line, f"a {banner.symmetry} matrix must be square, got {n_rows} x {n_cols}"
        )
    return n_rows, n_cols, n_entries


def _parse_entries(block: EntryBlock, field: str, n_entries: int) -> np.ndarray:
    """Entry lines as a structured array (row, column[, value]) of exactly n_entries.

    The fast path hands the whole block to numpy's C parser; when that fails, a
    line-by-line scan finds the offending line and says what is wrong with it.
    """
    dtype = ENTRY_DTYPES[field]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # numpy warns when there is no data
            entries = np.loadtxt(
                io.BytesIO(block.text),
                dtype=dtype,
                comments="%",
                ndmin=1,
                max_rows=n_entries + 1,
            )
    except ValueError:
        entries = _parse_entries_line_by_line(block, dtype, n_entries + 1)
    if entries.size > n_entries:
        raise block.error(n_entries, f"more entries than the {n_entries} declared on the size line")
    if entries.size < n_entries:
        raise MatrixFormatError(
            block.path,
            None,
            f"file ends after {entries.size} of the {n_entries} entries declared on the "
            "size line (truncated file?)",
        )
    return entries


def _parse_entries_line_by_line(block: EntryBlock, dtype: np.dtype, limit: int) -> np.ndarray:
    """The slow path of `_parse_entries`: raises at the first malformed line."""
    syntax = "'" + " ".join(f"<{name}>" for name in dtype.names) + "'"
    parsed = []
    for line, tokens in itertools.islice(block.lines(), limit):
        if len(tokens) != len(dtype.names):
            raise MatrixFormatError(
                block.path, line, f"expected {len(dtype.names)} tokens {syntax}, got {len(tokens)}"
            )
        parsed.append(
            tuple(
                _parse_token(block.path, line, token, name, dtype[name])
                for token, name in zip(tokens, dtype.names, strict=True)
            )
        )
    return np.array(parsed, dtype=dtype)


def _parse_token(path: Path, line: int, token: bytes, name: str, kind: np.dtype) -> int | float:
    """One entry token as the Python number `kind` asks for."""
    what = f"{name} index" if name in ("row", "column") else name
    if kind == np.int64:
        if not INTEGER_TOKEN.fullmatch(token):
            raise MatrixFormatError(path, line, f"{what} {_shown(token)} is not an integer")
        number = int(token)
        if abs(number) > np.iinfo(np.int64).max:
            raise MatrixFormatError(path, line, f"{what} {_shown(token)} is out of range")
        return number
    try:
        number = float(token)
    except ValueError:
        number = None
    if number is None or b"_" in token:  # Python reads 1_000; numpy and Matrix Market do not
        raise MatrixFormatError(path, line, f"{what} {_shown(token)} is not a number")
    return number


def _expand_symmetry(
    rows: np.ndarray, cols: np.ndarray, values: np.ndarray, symmetry: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add the mirror (j, i) of every off-diagonal entry (i, j); negated when skew."""
    if symmetry == "general":
        return rows, cols, values
    off_diagonal = rows != cols
    mirrored = values[off_diagonal] if symmetry == "symmetric" else -values[off_diagonal]
    return (
        np.concatenate([rows, cols[off_diagonal]]),
        np.concatenate([cols, rows[off_diagonal]]),
        np.concatenate([values, mirrored]),
    )


def _duplicate_error(
    block: EntryBlock, rows: np.ndarray, cols: np.ndarray, mirrored: bool
) -> MatrixFormatError:
    """The error for the first entry (in file order) whose position an earlier one took.

    rows, cols: 0-based stored coordinates. With `mirrored`, (i, j) and (j, i) are the
    same position, since symmetric expansion puts an entry at both.
    """
    key_rows, key_cols = (
        (np.maximum(rows, cols), np.minimum(rows, cols)) if mirrored else (rows, cols)
    )
    keys = key_rows * (int(key_cols.max()) + 1) + key_cols
    order = np.argsort(keys, kind="stable")  # equal keys stay in file order
    sorted_keys = keys[order]
    repeats = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1]) + 1
    later = int(order[repeats].min())
    first = int(order[np.searchsorted(sorted_keys, keys[later])])
    return block.error(
        later,
        f"duplicate entry ({rows[later] + 1}, {cols[later] + 1}): the same position as line "
        f"{block.line_of_entry(first)}; Matrix Market files may not repeat a position "
        "(pass duplicates='sum' to add them)",
    )


def _matrix_market_entry_chunks(
    A: scipy.sparse.csr_matrix, chunk_size: int = 1 << 20
) -> Iterator[str]:
    """'<row> <col> <value>' lines of canonical CSR A, 1-based, in chunks of chunk_size."""
    rows = np.repeat(np.arange(1, A.shape[0] + 1, dtype=np.int64), np.diff(A.indptr))
    for start in range(0, A.nnz, chunk_size):
        stop = min(start + chunk_size, A.nnz)
        fields = np.empty((stop - start, 3), dtype=object)
        fields[:, 0] = rows[start:stop].tolist()
        fields[:, 1] = (A.indices[start:stop].astype(np.int64) + 1).tolist()
        fields[:, 2] = A.data[start:stop].tolist()  # float32 -> exact Python floats
        # One C-level % over the whole chunk: several times faster than per-line formatting.
        yield ("%d %d %.9g\n" * (stop - start)) % tuple(fields.ravel())
