"""A folder of matrix files served as a named, ordered, filterable collection.

Any file `load_matrix` reads (`.mtx`, `.mtx.gz`, `.smtx`, `.smtx.gz`, `.npz`, `.mat`)
is a member. Names:

- with a `manifest.csv` that has `file`, `group` and `name` columns (the layout of the
  shared `suitesparse/manifest.csv`): "group/name" from each row; the manifest then
  defines the collection (files it does not list are ignored) and its columns are each
  matrix's metadata;
- without one: the file name without its suffix, with `<Group>__<Name>` (two
  underscores, the SuiteSparse file naming used by the shared data and by
  `suitesparse.download`) read as "Group/Name".

Members are kept sorted by name, so iteration order is deterministic.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import scipy.sparse

from sparserl.datasets.csv_table import read_rows
from sparserl.io import SUFFIXES, load_matrix

MANIFEST = "manifest.csv"
MANIFEST_REQUIRED_COLUMNS = ("file", "group", "name")


def shared_data_folder() -> Path:
    """The project's read-only data folder: $SPARSERL_SHARED_DATA, else `shared/data`
    beside the repository checkout (it may not exist on a user's machine)."""
    default = Path(__file__).resolve().parents[3] / "shared" / "data"
    return Path(os.environ.get("SPARSERL_SHARED_DATA", default))


def matrix_suffix(file_name: str) -> str | None:
    """The matrix-file suffix `file_name` ends with (".mtx.gz", ".npz", ...), or None."""
    lower = file_name.lower()
    return next((s for s in SUFFIXES if lower.endswith(s)), None)


def name_from_file(file_name: str) -> str:
    """Collection name of a matrix file: "Group/Name" for `Group__Name.mtx.gz`, else the stem."""
    stem = file_name[: -len(matrix_suffix(file_name) or "")]
    group, sep, name = stem.partition("__")
    return f"{group}/{name}" if sep and group and name else stem


class LocalMatrixCollection:
    """The matrix files of one folder (not its subfolders), by name.

    `metadata(name)` is the manifest row (numeric columns converted to int or float, and
    "name" replaced by the collection name "group/name"); without a manifest, just
    "name" and "file". `nnz(name)` is the stored
    entry count of the loaded matrix (symmetric files expanded), computed by loading the
    matrix once and cached.

    Raises (on construction):
        FileNotFoundError: the folder does not exist, or the manifest lists a missing file.
        ValueError: a malformed manifest (missing column, repeated name).
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"matrix folder {self.folder} does not exist")
        manifest = self.folder / MANIFEST
        rows = _read_manifest(manifest) if manifest.is_file() else _scan_folder(self.folder)
        self._metadata = dict(sorted(rows.items()))
        self._nnz: dict[str, int] = {}

    @classmethod
    def _subset(cls, parent: LocalMatrixCollection, names: list[str]) -> LocalMatrixCollection:
        subset = cls.__new__(cls)
        subset.folder = parent.folder
        subset._metadata = {name: parent._metadata[name] for name in names}
        subset._nnz = parent._nnz
        return subset

    def __len__(self) -> int:
        return len(self._metadata)

    def __iter__(self) -> Iterator[str]:
        return iter(self._metadata)

    def __contains__(self, name: object) -> bool:
        return name in self._metadata

    def __repr__(self) -> str:
        return f"LocalMatrixCollection({str(self.folder)!r}, {len(self)} matrices)"

    def names(self) -> list[str]:
        """All member names, sorted."""
        return list(self._metadata)

    def path(self, name: str) -> Path:
        """The file of matrix `name`."""
        return self.folder / self.metadata(name)["file"]

    def metadata(self, name: str) -> dict:
        """Manifest columns (if any) plus "name" and "file" of matrix `name` (a copy)."""
        if name not in self._metadata:
            raise KeyError(f"no matrix named {name!r} in {self.folder}")
        return dict(self._metadata[name])

    def load(self, name: str, *, values: str = "ones", seed: int = 0) -> scipy.sparse.csr_matrix:
        """Matrix `name` as canonical float32 CSR (see `sparserl.io.load_matrix`)."""
        matrix = load_matrix(self.path(name), values=values, seed=seed)
        self._nnz[name] = matrix.nnz
        return matrix

    def nnz(self, name: str) -> int:
        """Stored entries of matrix `name` once loaded (loads it the first time)."""
        if name not in self._nnz:
            self.load(name)
        return self._nnz[name]

    def filter(
        self,
        predicate: Callable[[dict], bool] | None = None,
        *,
        min_nnz: int | None = None,
        max_nnz: int | None = None,
    ) -> LocalMatrixCollection:
        """The members whose metadata satisfies `predicate` and whose nnz is in bounds.

        The predicate is checked first; nnz bounds load the remaining matrices once.
        """
        names = [n for n in self._metadata if predicate is None or predicate(self.metadata(n))]
        if min_nnz is not None:
            names = [n for n in names if self.nnz(n) >= min_nnz]
        if max_nnz is not None:
            names = [n for n in names if self.nnz(n) <= max_nnz]
        return LocalMatrixCollection._subset(self, names)


def _scan_folder(folder: Path) -> dict[str, dict]:
    """name -> {"name", "file"} for every matrix file directly in `folder`."""
    rows: dict[str, dict] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file() or matrix_suffix(path.name) is None:
            continue
        name = name_from_file(path.name)
        if name in rows:
            raise ValueError(
                f"{folder}: files {rows[name]['file']!r} and {path.name!r} both give the name {name!r}"
            )
        rows[name] = {"name": name, "file": path.name}
    return rows


def _read_manifest(manifest: Path) -> dict[str, dict]:
    """name -> typed manifest row, checking columns, unique names and that files exist."""
    rows: dict[str, dict] = {}
    for line, row in read_rows(manifest, MANIFEST_REQUIRED_COLUMNS):
        name = f"{row['group']}/{row['name']}"
        if name in rows:
            raise ValueError(f"{manifest}, line {line}: matrix {name!r} is listed twice")
        if not (manifest.parent / row["file"]).is_file():
            raise FileNotFoundError(
                f"{manifest}, line {line}: listed file {row['file']!r} does not exist"
            )
        typed = {c: v if c in MANIFEST_REQUIRED_COLUMNS else _typed(v) for c, v in row.items()}
        rows[name] = typed | {"name": name}
    return rows


def _typed(text: str) -> int | float | str:
    """A manifest cell as int or float when it is one, else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
