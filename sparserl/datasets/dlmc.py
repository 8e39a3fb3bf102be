"""The Deep Learning Matrix Collection (DLMC): pruned weight matrices of trained networks.

Layout under the root folder: `<model>/<method>/<sparsity>/<layer>.smtx[.gz]`, e.g.
`rn50/magnitude_pruning/0.9/bottleneck_2_block_group3_4_1.smtx.gz`, with an optional
`dlmc.csv` of per-matrix statistics beside them (columns in /work/shared/data/README.md).
The files hold sparsity patterns only; `load` fills in the values.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import scipy.sparse

from sparserl.datasets.csv_table import read_rows
from sparserl.io import load_matrix

STATS_FILE = "dlmc.csv"
PATTERN_SUFFIXES = (".smtx.gz", ".smtx")
STATS_COLUMNS = ("model", "name", "nrows", "ncols", "nnz", "sparsity")
COUNT_COLUMNS = ("nrows", "ncols", "nnz")


@dataclass(frozen=True)
class DLMCEntry:
    """One DLMC matrix.

    `name` is "model/method/sparsity/layer" (the `name` column of dlmc.csv) and
    `sparsity` the folder's nominal fraction of zeros. `stats` is the dlmc.csv row
    (nrows, ncols, nnz as int, other numbers as float, the rest as text), empty when
    dlmc.csv has no row for it.
    """

    model: str
    method: str
    sparsity: float
    layer: str
    path: Path
    name: str
    stats: dict = field(default_factory=dict, compare=False, repr=False)


class DLMCCollection:
    """All `.smtx[.gz]` files of a DLMC folder, sorted by (model, method, sparsity, layer).

    Raises (on construction):
        FileNotFoundError: `root` does not exist.
        ValueError: a sparsity folder that is not a number, a layer stored twice, or a
            dlmc.csv without its expected columns.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        if not self.root.is_dir():
            raise FileNotFoundError(f"DLMC folder {self.root} does not exist")
        stats_file = self.root / STATS_FILE
        stats = _read_stats(stats_file) if stats_file.is_file() else {}
        self.entries = _scan(self.root, stats)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[DLMCEntry]:
        return iter(self.entries)

    def __repr__(self) -> str:
        return f"DLMCCollection({str(self.root)!r}, {len(self)} matrices)"

    def filter(
        self,
        *,
        model: str | None = None,
        method: str | None = None,
        sparsity: float | str | None = None,
    ) -> list[DLMCEntry]:
        """The entries matching every given field (sparsity compared as a number)."""
        return [
            e
            for e in self.entries
            if (model is None or e.model == model)
            and (method is None or e.method == method)
            and (sparsity is None or e.sparsity == float(sparsity))
        ]

    def entry(self, name: str) -> DLMCEntry:
        """The entry named "model/method/sparsity/layer"."""
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(f"no DLMC matrix named {name!r} under {self.root}")

    def load(
        self, entry: DLMCEntry | str, *, values: str = "ones", seed: int = 0
    ) -> scipy.sparse.csr_matrix:
        """The matrix as float32 CSR; values "ones" or "random" (uniform [0, 1), seeded)."""
        entry = self.entry(entry) if isinstance(entry, str) else entry
        return load_matrix(entry.path, values=values, seed=seed)


def _scan(root: Path, stats: dict[str, dict]) -> list[DLMCEntry]:
    entries: dict[str, DLMCEntry] = {}
    for path in sorted(root.glob("*/*/*/*.smtx*")):
        suffix = next((s for s in PATTERN_SUFFIXES if path.name.endswith(s)), None)
        if suffix is None or not path.is_file():
            continue
        model, method, sparsity_dir = path.relative_to(root).parts[:3]
        try:
            sparsity = float(sparsity_dir)
        except ValueError:
            raise ValueError(
                f"{path}: expected <model>/<method>/<sparsity>/<layer>.smtx, "
                f"but the sparsity folder {sparsity_dir!r} is not a number"
            ) from None
        layer = path.name[: -len(suffix)]
        name = f"{model}/{method}/{sparsity_dir}/{layer}"
        if name in entries:
            raise ValueError(
                f"{root}: {name} is stored twice ({entries[name].path.name}, {path.name})"
            )
        entries[name] = DLMCEntry(model, method, sparsity, layer, path, name, stats.get(name, {}))
    return sorted(entries.values(), key=lambda e: (e.model, e.method, e.sparsity, e.layer))


def _read_stats(stats_file: Path) -> dict[str, dict]:
    """name -> dlmc.csv row: counts as int, other numbers as float, the rest as text."""
    stats = {}
    for line, row in read_rows(stats_file, STATS_COLUMNS):
        stats[row["name"]] = {
            column: _stat(stats_file, line, column, text) for column, text in row.items()
        }
    return stats


def _stat(stats_file: Path, line: int, column: str, text: str) -> int | float | str:
    try:
        number = float(text)
    except ValueError:
        if column in COUNT_COLUMNS:
            raise ValueError(
                f"{stats_file}, line {line}: {column} must be a number, got {text!r}"
            ) from None
        return text
    return int(number) if column in COUNT_COLUMNS else number
