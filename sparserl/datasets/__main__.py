"""Command-line tools: `python -m sparserl.datasets {info,split,list} ...`.

    info PATH            structure features and fingerprint of one matrix file
    split [--index CSV]  sizes and nnz ranges of the SuiteSparse paper split
    list FOLDER          the matrices of a local folder

Errors (a bad file, a missing folder) print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sparserl.datasets.local import LocalMatrixCollection
from sparserl.datasets.suitesparse import find_shared_index, paper_split_summary, read_index
from sparserl.features import fingerprint, matrix_features
from sparserl.io import load_matrix

LIST_COLUMNS = ("rows", "cols", "nnz_stored")


def print_table(rows: list[tuple[str, ...]]) -> None:
    """Print rows of strings as left-aligned columns separated by two spaces."""
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def show_number(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.6g}"


def info(path: Path) -> None:
    matrix = load_matrix(path)
    features = matrix_features(matrix)
    rows = [("file", str(path))]
    rows += [(key, show_number(value)) for key, value in features.items()]
    rows.append(("fingerprint", fingerprint(matrix)))
    print_table(rows)


def split(index_path: Path | None) -> None:
    index_path = index_path or find_shared_index()
    if index_path is None:
        raise FileNotFoundError(
            "no SuiteSparse index found at ../shared/data/suitesparse_index.csv; "
            "pass one with --index PATH (the collection's ssstats.csv)"
        )
    summary = paper_split_summary(read_index(index_path))
    print(f"index: {index_path}")
    rows = [("set", "matrices", "nnz_min", "nnz_max")]
    rows += [
        (name, str(part["count"]), str(part["nnz_min"]), str(part["nnz_max"]))
        for name, part in summary.items()
    ]
    print_table(rows)


def list_folder(folder: Path) -> None:
    collection = LocalMatrixCollection(folder)
    metadata = [collection.metadata(name) for name in collection]
    extra = [c for c in LIST_COLUMNS if metadata and all(c in m for m in metadata)]
    rows = [("name", "file", *extra)]
    rows += [(m["name"], m["file"], *(str(m[c]) for c in extra)) for m in metadata]
    print_table(rows)
    print(f"{len(collection)} matrices in {folder}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparserl.datasets", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    info_parser = commands.add_parser("info", help="features of one matrix file")
    info_parser.add_argument("path", type=Path)
    split_parser = commands.add_parser("split", help="the SuiteSparse paper split")
    split_parser.add_argument("--index", type=Path, default=None, help="ssstats.csv file")
    list_parser = commands.add_parser("list", help="the matrices of a folder")
    list_parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            info(args.path)
        elif args.command == "split":
            split(args.index)
        else:
            list_folder(args.folder)
    except (OSError, ValueError, KeyError) as error:
        message = " ".join(str(error).split())  # one line, whatever the error holds
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
