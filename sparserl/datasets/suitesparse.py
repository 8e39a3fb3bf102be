"""The SuiteSparse Matrix Collection: its index, the paper's train/test split, downloads.

The collection publishes its statistics as `ssstats.csv`; `read_index` parses a local
copy (the shared data holds one as `suitesparse_index.csv`) and `fetch_index` gets the
current one through `ssgetpy`. `suitesparse_paper_split` picks the benchmark's 1,100
matrices and divides them 700/400. `download` fetches Matrix Market files into a cache
folder that `LocalMatrixCollection` can serve.

Matrices are named "Group/Name", as on https://sparse.tamu.edu.
"""

from __future__ import annotations

import gzip
import shutil
import socket
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from sparserl.datasets.local import shared_data_folder

SUITESPARSE_HOST = "sparse.tamu.edu"
SHARED_INDEX_NAME = "suitesparse_index.csv"
INT32_MAX = 2**31 - 1

PAPER_SPLIT_SIZE = 1100
PAPER_WINDOW = 11
PAPER_TEST_POSITIONS = (1, 4, 7, 10)
"""Positions, inside each window of 11 matrices in decreasing-nnz order, that go to test."""


class SuiteSparseIndexError(ValueError):
    """A malformed `ssstats.csv` file; the message names the file and the line."""


class SuiteSparseUnavailableError(ConnectionError):
    """The SuiteSparse web site could not be reached."""


@dataclass(frozen=True)
class SuiteSparseEntry:
    """One matrix of the collection index (one row of `ssstats.csv`).

    `nnz` counts the nonzeros of the full matrix (both triangles of a symmetric one,
    explicit zeros excluded); `nentries` adds the explicit zeros, i.e. the entries the
    collection's files store. `is_real` is 1 for real, integer and pattern matrices.
    `psym` and `nsym` are the pattern and numerical symmetry, from 0 to 1.
    `nentries` is None for entries fetched through ssgetpy, whose database omits it.
    """

    id: int
    group: str
    name: str
    nrows: int
    ncols: int
    nnz: int
    is_real: bool
    is_binary: bool
    is_nd: bool
    posdef: bool
    psym: float
    nsym: float
    kind: str
    nentries: int | None

    @property
    def full_name(self) -> str:
        """The collection's "Group/Name"."""
        return f"{self.group}/{self.name}"


# ----------------------------------------------------------------------------- index


INDEX_COLUMNS = (
    "group", "name", "nrows", "ncols", "nnz", "isReal", "isBinary", "isND",
    "posdef", "psym", "nsym", "kind", "nentries",
)  # fmt: skip


def read_index(path: str | Path) -> list[SuiteSparseEntry]:
    """Parse the collection's `ssstats.csv` (layout in /work/shared/data/README.md).

    Line 1 holds the matrix count, line 2 the generation date, and line k + 2 the
    matrix with id k: 13 unquoted comma-separated fields, no header.

    Raises:
        FileNotFoundError: no such file.
        SuiteSparseIndexError: a malformed line, or a row count that differs from line 1.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SuiteSparse index {path} does not exist")
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 2:
        raise SuiteSparseIndexError(
            f"{path}: expected a count line and a date line, got {len(lines)} lines"
        )
    count = lines[0].strip()
    if not count.isdigit():
        raise SuiteSparseIndexError(f"{path}, line 1: expected the matrix count, got {count!r}")
    entries = [_parse_index_row(path, k, line) for k, line in enumerate(lines[2:], start=1)]
    if len(entries) != int(count):
        raise SuiteSparseIndexError(
            f"{path}: line 1 says {count} matrices but the file has {len(entries)} rows"
        )
    return entries


def _parse_index_row(path: Path, matrix_id: int, line: str) -> SuiteSparseEntry:
    """The entry of matrix `matrix_id`, from line matrix_id + 2 of the file."""
    fields = line.split(",")
    where = f"{path}, line {matrix_id + 2}"
    if len(fields) != len(INDEX_COLUMNS):
        raise SuiteSparseIndexError(
            f"{where}: expected {len(INDEX_COLUMNS)} comma-separated fields "
            f"({', '.join(INDEX_COLUMNS)}), got {len(fields)}"
        )
    row = dict(zip(INDEX_COLUMNS, fields, strict=True))

    def integer(column: str) -> int:
        text = row[column].strip()
        if not text.isdigit():
            raise SuiteSparseIndexError(
                f"{where}: {column} must be a non-negative integer, got {text!r}"
            )
        return int(text)

    def flag(column: str) -> bool:
        text = row[column].strip()
        if text not in ("0", "1"):
            raise SuiteSparseIndexError(f"{where}: {column} must be 0 or 1, got {text!r}")
        return text == "1"

    def fraction(column: str) -> float:
        try:
            value = float(row[column])
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:
            raise SuiteSparseIndexError(
                f"{where}: {column} must be a number in [0, 1], got {row[column]!r}"
            )
        return value

    if not row["group"] or not row["name"]:
        raise SuiteSparseIndexError(f"{where}: group and name must not be empty")
    return SuiteSparseEntry(
        id=matrix_id,
        group=row["group"],
        name=row["name"],
        nrows=integer("nrows"),
        ncols=integer("ncols"),
        nnz=integer("nnz"),
        is_real=flag("isReal"),
        is_binary=flag("isBinary"),
        is_nd=flag("isND"),
        posdef=flag("posdef"),
        psym=fraction("psym"),
        nsym=fraction("nsym"),
        kind=row["kind"],
        nentries=integer("nentries"),
    )


def find_shared_index() -> Path | None:
    """The shared data's `suitesparse_index.csv`: in `shared_data_folder()` (which
    $SPARSERL_SHARED_DATA overrides), else in ../shared/data beside the working
    directory, or None when neither has it."""
    for folder in (shared_data_folder(), Path.cwd().parent / "shared" / "data"):
        if (folder / SHARED_INDEX_NAME).is_file():
            return folder / SHARED_INDEX_NAME
    return None


def fetch_index(*, timeout_s: float = 10.0) -> list[SuiteSparseEntry]:
    """The current collection index, through `ssgetpy` (needs the network).

    ssgetpy keeps its own copy of the index in ~/.ssgetpy and refreshes it when older
    than 90 days. Entries come back in id order, with `nentries` None (ssgetpy omits it).

    Raises:
        SuiteSparseUnavailableError: sparse.tamu.edu did not answer within `timeout_s`.
    """
    ssgetpy = _import_ssgetpy("fetch the SuiteSparse index", timeout_s)
    matrices = ssgetpy.search(limit=1_000_000)
    entries = [
        SuiteSparseEntry(
            id=m.id,
            group=m.group,
            name=m.name,
            nrows=m.rows,
            ncols=m.cols,
            nnz=m.nnz,
            is_real=m.dtype != "complex",
            is_binary=m.dtype == "binary",
            is_nd=m.is2d3d,
            posdef=m.isspd,
            psym=m.psym,
            nsym=m.nsym,
            kind=m.kind,
            nentries=None,
        )
        for m in matrices
    ]
    return sorted(entries, key=lambda e: e.id)


def _import_ssgetpy(purpose: str, timeout_s: float):
    """Import ssgetpy once the site answers (importing it may download its index)."""
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            socket.create_connection((SUITESPARSE_HOST, 443), timeout=timeout_s).close()
            outcome.append(None)
        except OSError as error:
            outcome.append(error)

    # A thread bounds name resolution too, which socket timeouts do not cover.
    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(timeout_s)
    if not outcome or outcome[0] is not None:
        reason = outcome[0] if outcome else f"no answer in {timeout_s:g} s"
        raise SuiteSparseUnavailableError(
            f"could not {purpose}: {SUITESPARSE_HOST} is unreachable ({reason}). "
            "Work offline with a local copy of the index instead: "
            "read_index('path/to/ssstats.csv') (the shared data has suitesparse_index.csv)."
        )
    import ssgetpy

    return ssgetpy


# ----------------------------------------------------------------------------- paper split


def paper_split_candidates(index: list[SuiteSparseEntry]) -> list[SuiteSparseEntry]:
    """The benchmark's 1,100 matrices, largest first.

    Eligible: real matrices (is_real: real, integer or pattern; complex ones have no
    fp32 kernel) whose entries fit the kernel ABI's int32 indices (nnz and nentries
    below 2**31, which excludes the 6 largest matrices of the 2020 index). Of those,
    the 1,100 with the most nonzeros, ordered by decreasing nnz, ties by increasing id.
    """
    eligible = [
        e
        for e in index
        if e.is_real
        and max(e.nnz, e.nentries or 0) <= INT32_MAX
        and e.nrows <= INT32_MAX
        and e.ncols <= INT32_MAX
    ]
    if len(eligible) < PAPER_SPLIT_SIZE:
        raise ValueError(
            f"the index has {len(eligible)} eligible matrices, fewer than {PAPER_SPLIT_SIZE}"
        )
    return sorted(eligible, key=lambda e: (-e.nnz, e.id))[:PAPER_SPLIT_SIZE]


def suitesparse_paper_split(index: list[SuiteSparseEntry]) -> tuple[list[str], list[str]]:
    """The paper's benchmark: 700 train and 400 test matrices, as "Group/Name" lists.

    Rule: the candidates are the 1,100 matrices of `paper_split_candidates` (real,
    int32-sized, the most nonzeros), ordered by decreasing nnz, ties by increasing id.
    In every window of 11 consecutive candidates, positions 1, 4, 7 and 10 (0-based)
    go to test and the other 7 to train: 100 windows give 700/400, and both sets cover
    the whole nnz range with the same spacing. Each list keeps the decreasing-nnz order.
    """
    train, test = [], []
    for position, entry in enumerate(paper_split_candidates(index)):
        in_test = position % PAPER_WINDOW in PAPER_TEST_POSITIONS
        (test if in_test else train).append(entry.full_name)
    return train, test


def paper_split_summary(index: list[SuiteSparseEntry]) -> dict:
    """The paper split with each set's size and nnz range, as a JSON-ready dict."""
    nnz = {e.full_name: e.nnz for e in paper_split_candidates(index)}
    train, test = suitesparse_paper_split(index)

    def describe(names: list[str]) -> dict:
        counts = [nnz[name] for name in names]
        return {"count": len(names), "nnz_min": min(counts), "nnz_max": max(counts), "names": names}

    return {"train": describe(train), "test": describe(test)}


# ----------------------------------------------------------------------------- download


def download(names: list[str], cache_dir: str | Path, *, timeout_s: float = 30.0) -> list[Path]:
    """Download matrices ("Group/Name") as `<cache_dir>/<Group>__<Name>.mtx.gz`.

    Uses ssgetpy to look each name up, fetches the collection's Matrix Market archive
    (`.tar.gz`) and keeps only its main `<Name>.mtx`, gzip-compressed, under the file
    name the shared data uses, so `LocalMatrixCollection(cache_dir)` serves the folder.
    Files already in the cache are not fetched again. Shows tqdm progress bars.

    Returns:
        The cached file of each name, in the order given.

    Raises:
        SuiteSparseUnavailableError: sparse.tamu.edu did not answer within `timeout_s`.
        ValueError: a name is not "Group/Name" or not in the collection.
    """
    cache_dir = Path(cache_dir)
    targets = [cache_dir / ("__".join(_split_name(name)) + ".mtx.gz") for name in names]
    missing = [(name, t) for name, t in zip(names, targets, strict=True) if not t.exists()]
    if not missing:
        return targets
    ssgetpy = _import_ssgetpy("download SuiteSparse matrices", timeout_s)
    cache_dir.mkdir(parents=True, exist_ok=True)
    for name, target in tqdm(missing, desc="SuiteSparse", unit="matrix"):
        _download_one(ssgetpy, name, target, timeout_s)
    return targets


def _split_name(name: str) -> tuple[str, str]:
    group, _, matrix = name.partition("/")
    if not group or not matrix or "/" in matrix:
        raise ValueError(f"expected a SuiteSparse name 'Group/Name', got {name!r}")
    return group, matrix


def _download_one(ssgetpy, name: str, target: Path, timeout_s: float) -> None:
    import requests

    group, matrix_name = _split_name(name)
    # ssgetpy's name filter is a substring match: keep the exact one.
    found = [
        m
        for m in ssgetpy.search(name, limit=1_000_000)
        if m.group == group and m.name == matrix_name
    ]
    if not found:
        raise ValueError(f"{name!r} is not in the SuiteSparse collection")
    archive = target.with_name(target.name + ".tar.gz.part")
    # Streamed here rather than by ssgetpy's Matrix.download, which sleeps 0.1 s per 4 KiB.
    with requests.get(found[0].url("MM"), stream=True, timeout=timeout_s) as response:
        response.raise_for_status()
        size = int(response.headers.get("content-length", 0)) or None
        with (
            open(archive, "wb") as out,
            tqdm(total=size, desc=name, unit="B", unit_scale=True, leave=False) as bar,
        ):
            for chunk in response.iter_content(chunk_size=1 << 20):
                out.write(chunk)
                bar.update(len(chunk))
    partial = target.with_name(target.name + ".part")
    main_file = f"{matrix_name}/{matrix_name}.mtx"
    with tarfile.open(archive, "r:gz") as bundle:
        if main_file not in bundle.getnames():
            raise ValueError(f"the archive of {name!r} ({archive}) has no {main_file}")
        with (
            bundle.extractfile(main_file) as member,
            gzip.open(partial, "wb", compresslevel=1) as out,
        ):
            shutil.copyfileobj(member, out, length=1 << 20)
    partial.replace(target)
    archive.unlink()
