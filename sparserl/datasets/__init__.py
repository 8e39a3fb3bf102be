"""Where matrices come from: SuiteSparse, local folders, the DLMC and synthetic families.

- `suitesparse`: the collection index (`read_index`, `fetch_index`), the paper's
  700/400 train/test split (`suitesparse_paper_split`) and `download`.
- `local`: `LocalMatrixCollection`, any folder of matrix files, by name.
- `dlmc`: `DLMCCollection`, the Deep Learning Matrix Collection's layout.
- `synthetic`: seeded generators of structural families and the `make` registry.

`python -m sparserl.datasets --help` lists the command-line tools.
"""

import itertools
from collections.abc import Iterable, Iterator

from sparserl.datasets import synthetic
from sparserl.datasets.dlmc import DLMCCollection, DLMCEntry
from sparserl.datasets.local import LocalMatrixCollection
from sparserl.datasets.suitesparse import (
    SuiteSparseEntry,
    SuiteSparseIndexError,
    SuiteSparseUnavailableError,
    download,
    fetch_index,
    read_index,
    suitesparse_paper_split,
)

__all__ = [
    "DLMCCollection",
    "DLMCEntry",
    "LocalMatrixCollection",
    "SuiteSparseEntry",
    "SuiteSparseIndexError",
    "SuiteSparseUnavailableError",
    "download",
    "interleave",
    "fetch_index",
    "read_index",
    "suitesparse_paper_split",
    "synthetic",
]


def interleave(*iterables: Iterable) -> Iterator:
    """a1, b1, c1, a2, b2, ... until every iterable is exhausted (lazily), so a run
    stopped by its time budget has covered every collection."""
    sentinel = object()
    for items in itertools.zip_longest(*iterables, fillvalue=sentinel):
        yield from (item for item in items if item is not sentinel)
