"""Time sparserl.io and sparserl.features on real and large synthetic matrices.

Loads the largest shared SuiteSparse matrix (by stored entries), then writes a random
synthetic matrix with 10^7 entries to a temporary `.mtx.gz` and `.npz` with
`save_matrix` and loads them back (checking the round trip), and times
`matrix_features` and `fingerprint` on it. Prints the numbers and writes
eval/results/bench_io.json.

    python eval/bench_io.py [--nnz 10000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparserl.datasets.local import shared_data_folder
from sparserl.features import fingerprint, matrix_features
from sparserl.io import load_matrix, save_matrix

REPO = Path(__file__).resolve().parents[1]
SHARED_SUITESPARSE = shared_data_folder() / "suitesparse"
RESULTS = REPO / "eval" / "results" / "bench_io.json"


def best_seconds(function: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Fastest wall time of `repeats` calls, in seconds, and the last call's result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def synthetic_matrix(nnz: int, seed: int = 0) -> sp.csr_matrix:
    """About `nnz` entries, 10 per row on average, in an n x n matrix, float32 normal values."""
    rng = np.random.default_rng(seed)
    n = nnz // 10
    rows = rng.integers(0, n, nnz)
    cols = rng.integers(0, n, nnz)
    values = rng.standard_normal(nnz).astype(np.float32)
    return sp.csr_matrix((values, (rows, cols)), shape=(n, n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nnz", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, object] = {"machine": platform.processor() or platform.machine()}

    manifest = list(csv.DictReader((SHARED_SUITESPARSE / "manifest.csv").open()))
    largest = max(manifest, key=lambda row: int(row["nnz_stored"]))
    seconds, A = best_seconds(
        lambda: load_matrix(SHARED_SUITESPARSE / largest["file"]), args.repeats
    )
    results["suitesparse_largest"] = {"file": largest["file"], "nnz": A.nnz, "load_s": seconds}
    print(f"load {largest['file']} ({A.nnz:,} entries): {seconds:.3f} s")

    A = synthetic_matrix(args.nnz)
    synthetic: dict[str, object] = {"shape": list(A.shape), "nnz": A.nnz}
    with tempfile.TemporaryDirectory() as folder:
        for name in ("synthetic.mtx.gz", "synthetic.npz"):
            path = Path(folder) / name
            start = time.perf_counter()
            save_matrix(path, A)
            save_s = time.perf_counter() - start
            load_s, B = best_seconds(lambda path=path: load_matrix(path), args.repeats)
            exact = bool(
                np.array_equal(B.indptr, A.indptr)
                and np.array_equal(B.indices, A.indices)
                and np.array_equal(B.data.view(np.uint32), A.data.view(np.uint32))
            )
            synthetic[name] = {
                "save_s": save_s,
                "load_s": load_s,
                "file_mb": path.stat().st_size / 1e6,
                "round_trip_exact": exact,
            }
            print(
                f"{name} ({A.nnz:,} entries, {path.stat().st_size / 1e6:.0f} MB): "
                f"save {save_s:.2f} s, load {load_s:.2f} s, exact round trip: {exact}"
            )
    synthetic["features_s"], _ = best_seconds(lambda: matrix_features(A), args.repeats)
    synthetic["fingerprint_s"], _ = best_seconds(lambda: fingerprint(A), args.repeats)
    print(
        f"matrix_features: {synthetic['features_s']:.2f} s, fingerprint: {synthetic['fingerprint_s']:.2f} s"
    )
    results["synthetic"] = synthetic

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
