"""The fair cuSPARSE baseline, and the harness's throughput. Needs a GPU.

For every shared SuiteSparse matrix and synthetic matrices up to 2e7 nnz, for SpMV and
SpMM (N = 8, 32, 128), times in one worker, interleaved: every working cuSPARSE
algorithm (cuSPARSE-best is the fastest by warm device time), the plain cupyx product
(a reference), and a straightforward CSR-vector kernel (a warp per row; for SpMM a warp
per row with float4 loads of B) run through the harness. Warm and cold, device time and
call latency, and each side's fraction of the memory-traffic floor. Then the harness's
throughput (evaluations per second, compile included) on a 1e6-nnz matrix.

    python eval/bench_baseline.py [--stride 10] [--sizes 1e6,2e7] [--rounds 3 --calls 10]
                                  [--budget-s 540] [--resume]

Writes eval/results/baseline_<gpu>.json (per-matrix rows, rewritten after every matrix)
and prints the summary. --resume keeps the rows (and throughput) already in that file
and measures only the missing (matrix, op) pairs: runs longer than one sitting go on
where the last stopped. Each row records the copy bandwidth of the run that measured it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

from summary import (
    RESULTS,
    geometric_mean,
    print_summary,
    speedup_summary,
    suitesparse_matrices,
    synthetic_matrices,
    write_results,
)
from tqdm import tqdm

from sparserl.datasets import interleave
from sparserl.datasets.synthetic import make
from sparserl.harness import Harness, TimingConfig, Verdict
from sparserl.harness.check import traffic_floor_bytes
from sparserl.kernels import KernelVariant

OPS = [("spmv", None), ("spmm", 8), ("spmm", 32), ("spmm", 128)]
SYNTHETIC_FAMILIES = ["banded", "stencil_2d", "stencil_3d", "power_law", "uniform_random",
                      "row_skewed", "block_sparse", "pruned_weights"]  # fmt: skip


def reference_kernel(op: str, n_cols: int | None) -> str:
    """The straightforward kernel the harness runs next to cuSPARSE."""
    if op == "spmv":
        return KernelVariant("csr_vector", {"threads_per_row": 32, "block_size": 128}).source()
    return KernelVariant("csr_spmm_warp_float4", {"N": n_cols, "warps_per_block": 4}).source()


def timing_dict(timing) -> dict:
    out = {"device_warm_us": timing.device_warm.median_us, "latency_warm_us": timing.latency_warm.median_us,
           "device_warm_p10_us": timing.device_warm.p10_us, "device_warm_p90_us": timing.device_warm.p90_us,
           "kernels_per_call": timing.kernels_per_call}  # fmt: skip
    if timing.device_cold is not None:
        out["device_cold_us"] = timing.device_cold.median_us
        out["latency_cold_us"] = timing.latency_cold.median_us
    return out


def measure(harness, label, A, op, n_cols, timing, bandwidth_gbs) -> dict:
    results, report = harness.compare([reference_kernel(op, n_cols)], A, op, n_cols, timing)
    m, n = A.shape
    floor_bytes = traffic_floor_bytes(m, n, A.nnz, n_cols)
    floor_us = floor_bytes / (bandwidth_gbs * 1e3)
    sides = {f"cusparse:{name}": timing_dict(t) for name, t in report.algorithms.items()}
    sides["cupyx"] = timing_dict(report.cupyx)
    reference = results[0]
    if reference.verdict is Verdict.CORRECT:
        sides["reference_kernel"] = timing_dict(reference.timing)
    best = report.best.device_warm.median_us
    row = {
        "matrix": label, "m": m, "n": n, "nnz": A.nnz, "op": op, "n_cols": n_cols,
        "measured": time.strftime("%Y-%m-%d"), "copy_bandwidth_gbs": bandwidth_gbs,
        "cusparse_best": report.best_name, "cusparse_best_device_warm_us": best,
        "traffic_floor_us": floor_us, "floor_fraction_cusparse_best": floor_us / best,
        "reference_verdict": reference.verdict.value, "rejected_algorithms": report.rejected,
        "sides": sides,
    }  # fmt: skip
    if reference.verdict is Verdict.CORRECT:
        row["speedup"] = best / reference.timing.device_warm.median_us
        row["floor_fraction_reference"] = floor_us / reference.timing.device_warm.median_us
    return row


def throughput(harness_factory, A, n_kernels: int) -> dict:
    """Evaluations per second on `A`: distinct sources (cold compile cache), then the same
    sources again (warm cache). Quick timing, as during training."""
    base = reference_kernel("spmv", None)
    sources = [base + f"\n// variant {i}\n" for i in range(n_kernels)]
    rates = {}
    with tempfile.TemporaryDirectory() as cache, harness_factory(cache) as harness:
        harness.evaluate(sources[0], A, "spmv")  # start the worker, load the matrix
        for label in ("cold_cache", "warm_cache"):
            start = time.perf_counter()
            results = harness.evaluate_many(sources[1:], A, "spmv", timing=TimingConfig.quick())
            seconds = time.perf_counter() - start
            assert all(r.verdict is Verdict.CORRECT for r in results), results[0].detail
            rates[label] = (len(sources) - 1) / seconds
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--stride", type=int, default=1, help="every k-th shared matrix (name order)"
    )
    parser.add_argument("--sizes", default="1e5,1e6,1e7,2e7", help="synthetic sizes (nnz)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--throughput-kernels", type=int, default=65)
    parser.add_argument("--out", default=None, help="results folder (default eval/results)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="start no new measurement after this many seconds")  # fmt: skip
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows already in the results file; measure the rest")  # fmt: skip
    args = parser.parse_args()

    sizes = [int(float(size)) for size in args.sizes.split(",")]
    synthetic = synthetic_matrices({family: sizes for family in SYNTHETIC_FAMILIES})
    shared = itertools.islice(suitesparse_matrices(), 0, None, args.stride)
    matrices = list(interleave(shared, synthetic))  # (label, load), loaded when measured
    timing = TimingConfig(rounds=args.rounds, calls_per_round=args.calls, cold=True)
    with Harness(timeout_s=20.0, seed=0) as harness:
        device = harness.device_name
        previous = previous_results(args, device)
        rows, rates = previous.get("rows", []), previous.get("throughput_evals_per_s")
        done = {(row["matrix"], row["op"], row["n_cols"]) for row in rows}
        origin = "kept from the results file (an earlier run)"
        if rates is None:
            million = make("uniform_random", 1_000_000, seed=0)
            rates = throughput(
                lambda cache: Harness(cache_dir=cache, seed=0), million, args.throughput_kernels
            )
            origin = "measured now"
        print(f"harness throughput on 1e6 nnz, {origin}: {rates['cold_cache']:.1f} evals/s "
              f"(cold compile cache), {rates['warm_cache']:.1f} evals/s (warm cache)")  # fmt: skip
        bandwidth = harness.copy_bandwidth_gbs()
        print(f"{device}: copy bandwidth {bandwidth:.0f} GB/s (read + write)")
        print(f"{len(done)} (matrix, op) pairs kept from the results file")
        start = time.monotonic()
        for label, load in tqdm(matrices, desc="matrices", disable=None):
            missing = [(op, n_cols) for op, n_cols in OPS if (label, op, n_cols) not in done]
            if not missing or (args.budget_s and time.monotonic() - start > args.budget_s):
                continue
            A = load()
            for op, n_cols in missing:
                if args.budget_s and time.monotonic() - start > args.budget_s:
                    break
                rows.append(measure(harness, label, A, op, n_cols, timing, bandwidth))
            save(args, device, timing, rates, rows)  # after every matrix
        path = save(args, device, timing, rates, rows)
    print(f"measured {len(rows)} (matrix, op) pairs of {len(matrices) * len(OPS)} in "
          f"{time.monotonic() - start:.0f} s")  # fmt: skip
    summary = speedup_summary([r for r in rows if "speedup" in r])
    print_summary("straightforward CSR-vector kernel vs cuSPARSE-best (warm device time)", summary)
    print(f"\ncuSPARSE-best algorithm counts: {algorithm_counts(rows)}")
    large = [r["floor_fraction_cusparse_best"] for r in rows if r["nnz"] >= 1e6]
    if large:
        print(f"cuSPARSE-best fraction of the traffic floor at >= 1e6 nnz: median "
              f"{sorted(large)[len(large) // 2]:.2f}, geomean {geometric_mean(large):.2f}")  # fmt: skip
    print(f"wrote {path}")


def algorithm_counts(rows: list[dict]) -> dict[str, int]:
    """How often each cuSPARSE algorithm was the best one."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["cusparse_best"]] = counts.get(row["cusparse_best"], 0) + 1
    return counts


def results_name(device: str) -> str:
    return f"baseline_{device.replace(' ', '_')}"


def previous_results(args, device: str) -> dict:
    """The results file's contents when resuming (empty when not, or when there is none)."""
    path = (Path(args.out) if args.out else RESULTS) / f"{results_name(device)}.json"
    return json.loads(path.read_text()) if args.resume and path.exists() else {}


def save(args, device, timing, rates, rows):
    return write_results(
        results_name(device),
        {"device": device, "timing": vars(timing),
         "throughput_evals_per_s": rates,
         "reference_vs_cusparse_best": speedup_summary([r for r in rows if "speedup" in r]),
         "cusparse_best_algorithm_counts": algorithm_counts(rows), "rows": rows},
        folder=args.out,
    )  # fmt: skip


if __name__ == "__main__":
    main()
