"""Shared pieces of the benchmark scripts: matrix sets, statistics, tables and JSON output.

Imported by the scripts in this folder (run them as `python eval/<script>.py`).
"""

from __future__ import annotations

import functools
import json
import math
import platform
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from sparserl.datasets.local import LocalMatrixCollection, shared_data_folder
from sparserl.datasets.synthetic import make

RESULTS = Path(__file__).parent / "results"


def suitesparse_matrices() -> Iterator[tuple[str, Callable[[], object]]]:
    """(file name, loader) of every shared SuiteSparse matrix, in name order."""
    collection = LocalMatrixCollection(shared_data_folder() / "suitesparse")
    for name in collection.names():
        yield collection.metadata(name).get("file", name), functools.partial(collection.load, name)


def synthetic_matrices(sizes: dict[str, list[int]]) -> Iterator[tuple[str, Callable[[], object]]]:
    """(label, loader) for each synthetic family and nnz size hint."""
    for family, hints in sizes.items():
        for hint in hints:
            yield f"synthetic:{family}:{hint:.0e}", functools.partial(make, family, hint, seed=0)


def geometric_mean(values) -> float:
    values = np.asarray(list(values), dtype=np.float64)
    return float(np.exp(np.log(values).mean())) if len(values) else math.nan


def nnz_band(nnz: int) -> str:
    """'1e3-1e4'-style decade label."""
    decade = int(math.floor(math.log10(max(nnz, 1))))
    return f"1e{decade}-1e{decade + 1}"


def speedup_summary(rows: list[dict], key: str = "speedup") -> dict:
    """Geometric mean, median and win rate (speedup > 1) of rows[key], overall and per
    nnz decade, per op and width."""

    def stats(selected):
        values = [row[key] for row in selected]
        return {
            "count": len(values),
            "geomean": geometric_mean(values),
            "median": float(np.median(values)) if values else math.nan,
            "win_rate": float(np.mean([v > 1.0 for v in values])) if values else math.nan,
        }

    summary = {}
    for op_label in sorted({op_name(row) for row in rows}):
        op_rows = [row for row in rows if op_name(row) == op_label]
        bands = {band: stats([r for r in op_rows if nnz_band(r["nnz"]) == band])
                 for band in sorted({nnz_band(r["nnz"]) for r in op_rows})}  # fmt: skip
        summary[op_label] = {"all": stats(op_rows), "by_nnz": bands}
    return summary


def op_name(row: dict) -> str:
    return row["op"] if row["n_cols"] is None else f"{row['op']}-N{row['n_cols']}"


def print_summary(title: str, summary: dict) -> None:
    print(f"\n{title}")
    print(f"{'op':<12}{'nnz band':<12}{'count':>6}{'geomean':>10}{'median':>9}{'win rate':>10}")
    for op_label, groups in summary.items():
        for band, s in [("all", groups["all"]), *groups["by_nnz"].items()]:
            print(f"{op_label:<12}{band:<12}{s['count']:>6}{s['geomean']:>10.3f}"
                  f"{s['median']:>9.3f}{s['win_rate']:>10.2f}")  # fmt: skip


def write_results(name: str, payload: dict, folder: str | Path | None = None) -> Path:
    """Write payload (with run metadata added) to <folder or eval/results>/<name>.json."""
    folder = Path(folder) if folder else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node(), **payload}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, default=_jsonable))
    return path


def _jsonable(value):
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
