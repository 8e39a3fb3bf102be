"""Generation time of every synthetic family at about 10^7 stored entries.

Usage: python eval/bench_synthetic.py [--nnz 10000000] [--large power_law pruned_weights]

Builds one matrix per family with `synthetic.make(family, nnz, seed=0)`, plus the
`--large` families at twice that size, times each build once (after a small warm-up
build), prints a table and writes eval/results/bench_synthetic.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy

from sparserl.datasets import synthetic

RESULTS = Path(__file__).resolve().parent / "results" / "bench_synthetic.json"


def time_build(family: str, nnz: int) -> dict:
    start = time.perf_counter()
    A = synthetic.make(family, nnz, seed=0)
    seconds = time.perf_counter() - start
    return {
        "family": family,
        "size_hint_nnz": nnz,
        "nnz": A.nnz,
        "shape": list(A.shape),
        "seconds": round(seconds, 3),
        "million_nnz_per_second": round(A.nnz / seconds / 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nnz", type=int, default=10_000_000)
    parser.add_argument("--large", nargs="*", default=["power_law", "pruned_weights"])
    args = parser.parse_args()
    for family in synthetic.FAMILIES:
        synthetic.make(family, 10_000, seed=0)  # warm-up: imports, first allocations
    runs = [(family, args.nnz) for family in synthetic.FAMILIES]
    runs += [(family, 2 * args.nnz) for family in args.large]
    results = []
    print(f"{'family':16s} {'hint':>10s} {'nnz':>10s} {'seconds':>8s} {'Mnnz/s':>7s}")
    for family, nnz in runs:
        r = time_build(family, nnz)
        results.append(r)
        print(
            f"{family:16s} {nnz:>10d} {r['nnz']:>10d} {r['seconds']:>8.2f} "
            f"{r['million_nnz_per_second']:>7.1f}",
            flush=True,
        )
    record = {
        "machine": {
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "results": results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
