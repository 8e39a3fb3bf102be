"""Build the SFT dataset on a GPU: autotune the expert kernels on each matrix and record
the ranked correct variants with their times (see sparserl.sft_data).

Matrices, in the order they are processed (the lists interleave, so a run stopped by
its time budget still covers every set):
- shared SuiteSparse: SpMV on all; SpMM N = 8, 32, 128 on every 4th by nnz;
- shared DLMC (ResNet-50): the 6 largest layers of each method x sparsity, SpMV and SpMM;
- synthetic families at 1e5, 1e6 and 1e7 nnz (2e7 for three families), SpMV and SpMM.

    python data/build_sft_dataset.py --out data/sft/sft_h100.jsonl [--budget-s 540]
        [--retune-without FAMILY,...] [--nnz-range LOW HIGH]

Resumable: records already in --out are skipped, and the file is rewritten (atomically)
after every record. After a kernel family is added or its parameter grid changes,
`--retune-without FAMILY,...` measures again the records whose tuning did not try every
variant of those families that the autotuner would now time on the record's matrix, op
and width (variant ids name parameters and baked constants, not code: a code change
needs a new parameter, or its old times stay under the same ids).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from pathlib import Path

from tqdm import tqdm

from sparserl.autotune import Autotuner, candidates
from sparserl.datasets import interleave
from sparserl.datasets.dlmc import DLMCCollection
from sparserl.datasets.local import shared_data_folder
from sparserl.features import matrix_features
from sparserl.harness import Harness
from sparserl.harness.check import traffic_floor_bytes
from sparserl.kernels import family_named
from sparserl.sft_data import MatrixRef, SFTRecord, read_records, variants_tried, write_records

SPMM_WIDTHS = (8, 32, 128)
SYNTHETIC = {
    "banded": (1e5, 1e6, 1e7), "stencil_2d": (1e5, 1e6, 1e7), "stencil_3d": (1e5, 1e6, 1e7, 2e7),
    "power_law": (1e5, 1e6, 1e7, 2e7), "uniform_random": (1e5, 1e6, 1e7, 2e7),
    "row_skewed": (1e5, 1e6, 1e7), "block_sparse": (1e5, 1e6, 1e7), "pruned_weights": (1e5, 1e6, 1e7),
}  # fmt: skip


def all_ops() -> list[tuple[str, int | None]]:
    return [("spmv", None)] + [("spmm", n) for n in SPMM_WIDTHS]


def suitesparse_jobs(shared: Path):
    import csv

    with open(shared / "suitesparse" / "manifest.csv") as handle:
        files = [row["file"] for row in csv.DictReader(handle)]  # sorted by stored entries
    for index, name in enumerate(files):
        yield MatrixRef("suitesparse", name), all_ops() if index % 4 == 0 else [("spmv", None)]


def dlmc_jobs(shared: Path):
    collection = DLMCCollection(shared / "dlmc")
    groups = itertools.groupby(
        sorted(collection.entries, key=lambda e: (e.method, e.sparsity)),
        key=lambda e: (e.method, e.sparsity),
    )
    for _, entries in groups:
        largest = sorted(entries, key=lambda e: -e.path.stat().st_size)[:6]
        for entry in largest:
            yield MatrixRef("dlmc", str(Path(entry.name).parent / entry.path.name)), all_ops()


def synthetic_jobs():
    for size_rank in range(4):
        for family, sizes in SYNTHETIC.items():
            if size_rank < len(sizes):
                yield MatrixRef("synthetic", family, int(sizes[size_rank])), all_ops()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="JSON-lines file (appended to)")
    parser.add_argument(
        "--budget-s", type=float, default=None, help="stop starting new jobs after this"
    )
    parser.add_argument("--retune-without", default="",
                        help="comma-separated kernel families: re-measure records that lack "
                        "some variant of them that applies")  # fmt: skip
    parser.add_argument("--nnz-range", nargs=2, type=float, default=(0, math.inf), metavar=("LOW", "HIGH"),
                        help="only matrices with LOW <= stored entries < HIGH (a partial pass; "
                        "a later run without it measures the rest)")  # fmt: skip
    args = parser.parse_args()
    low, high = args.nnz_range
    if not low < high:
        parser.error(f"--nnz-range: LOW ({low:g}) must be below HIGH ({high:g})")
    shared = shared_data_folder()
    records = {}  # (matrix, op, n_cols) -> SFTRecord, in file order
    for record in read_records(args.out) if args.out.exists() else []:
        records[(record.matrix, record.op, record.n_cols)] = record
    try:
        required = [family_named(name) for name in args.retune_without.split(",") if name]
    except ValueError as error:
        parser.error(f"--retune-without: {error}")
    done = {key for key, record in records.items() if not serving(required, record)}
    jobs = interleave(suitesparse_jobs(shared), dlmc_jobs(shared), synthetic_jobs())
    known_nnz = {ref: record.nnz for (ref, _, _), record in records.items()}
    jobs = [
        (ref, ops) for ref, ops in jobs if low <= known_nnz.get(ref, ref.nnz_hint or low) < high
    ]
    jobs = [(ref, [op for op in ops if (ref, *op) not in done]) for ref, ops in jobs]
    jobs = [(ref, ops) for ref, ops in jobs if ops]
    print(
        f"{len(done)} records kept, {sum(len(ops) for _, ops in jobs)} (matrix, op) pairs to "
        "measure" + (" or to check for the new families" if required else "")
    )
    start = time.monotonic()
    with Harness(timeout_s=10.0, seed=0) as harness:
        tuner = Autotuner(harness)
        bandwidth = harness.copy_bandwidth_gbs()
        for ref, ops in tqdm(jobs, desc="matrices", disable=None):
            if args.budget_s and time.monotonic() - start > args.budget_s:
                print(f"time budget reached; {tally(records, done, args.out)}")
                break
            A = ref.load(shared)
            if not low <= A.nnz < high:
                continue
            features = matrix_features(A) if required else None
            for op, n_cols in ops:
                if args.budget_s and time.monotonic() - start > args.budget_s:
                    break
                kept = records.get((ref, op, n_cols))
                if kept is not None and not untried_variants(kept, required, A, features):
                    done.add((ref, op, n_cols))  # every new variant that applies was tried
                    continue
                started = time.monotonic()
                record = measure(tuner, ref, A, op, n_cols, bandwidth, features)
                records[(ref, op, n_cols)] = record
                write_records(args.out, list(records.values()))
                best = record.ranked[0]
                tqdm.write(f"{ref.label} {op}{n_cols or ''}: {best['variant']['variant_id']} "
                           f"{best['speedup']:.2f}x ({time.monotonic() - started:.0f} s)")  # fmt: skip
                done.add((ref, op, n_cols))
        else:
            print(f"every job done; {tally(records, done, args.out)}")


def tally(records: dict, done: set, out: Path) -> str:
    """How many records the file holds and how many of them this run left up to date (the
    others lie outside --nnz-range or were not reached)."""
    return f"{len(records)} records in {out}, {len(done)} of them up to date"


def serving(required, record: SFTRecord) -> list:
    """The families in `required` that serve the record's op (and SpMM width)."""
    return [
        family
        for family in required
        if family.op == record.op and (record.n_cols is None or record.n_cols in family.space["N"])
    ]


def untried_variants(record: SFTRecord, required, A, features: dict | None = None) -> set[str]:
    """Ids of the variants of the `required` families that the autotuner would time on A
    (the record's matrix, with its `matrix_features` if already computed) for the record's
    op and width, and that the record's tuning did not try."""
    names = {family.name for family in serving(required, record)}
    if not names:
        return set()
    now = candidates(A, record.op, record.n_cols, features)
    return {v.variant_id for v in now if v.family in names} - variants_tried(record)


def measure(tuner: Autotuner, ref: MatrixRef, A, op: str, n_cols: int | None, bandwidth: float,
            features: dict | None = None):  # fmt: skip
    """Tune A for one op (with its `matrix_features`, if already computed) and turn the
    result into an SFT record."""
    tuned = tuner.tune(A, op, n_cols, features)
    m, n = A.shape
    floor_us = traffic_floor_bytes(m, n, A.nnz, n_cols) / (bandwidth * 1e3)
    extra = {
        "m": m, "n": n, "copy_bandwidth_gbs": bandwidth, "traffic_floor_us": floor_us,
        "baseline_device_cold_us": tuned.baseline_device_cold_us,
        "baseline_latency_warm_us": tuned.baseline_latency_warm_us,
        "preprocessing_s": tuned.preprocessing_s, "break_even_calls": tuned.break_even_calls(),
        "failed": tuned.failed,
    }  # fmt: skip
    return SFTRecord(
        matrix=ref, op=op, n_cols=n_cols, nnz=int(A.nnz), device=tuned.device,
        baseline_name=tuned.baseline_name, baseline_device_warm_us=tuned.baseline_device_warm_us,
        ranked=[item.__dict__ for item in tuned.ranked], date=time.strftime("%Y-%m-%d"), extra=extra,
    )  # fmt: skip


if __name__ == "__main__":
    main()
