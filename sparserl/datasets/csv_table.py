"""Reading the collections' CSV tables (manifests, statistics) with errors that name the line."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path


def read_rows(path: Path, required_columns) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of each data row of a CSV file with a header line.

    Raises ValueError naming the file and line when a required column is missing or a
    row has the wrong number of fields.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required_columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}, line 1: missing column(s) {', '.join(missing)}")
        for row in reader:
            if None in row or None in row.values():
                raise ValueError(
                    f"{path}, line {reader.line_num}: expected {len(reader.fieldnames)} fields"
                )
            yield reader.line_num, row
