"""The oracle: the autotuner's best expert kernel against cuSPARSE-best, per matrix.

Reads the records `data/build_sft_dataset.py` measured on the GPU (each one an
autotuning run: every candidate and every cuSPARSE algorithm timed interleaved in one
worker, warm and cold) and summarises them: geometric-mean speedup, median and win
rate by op, width and nnz band (the issue's target bands), by matrix family, the
fraction of the memory-traffic floor, and break-even calls when the format conversion
is counted. Writes eval/results/oracle_<gpu>.json (per-matrix rows) and a plot.

    python data/build_sft_dataset.py --out data/sft/sft_h100.jsonl   # on the GPU
    python eval/bench_oracle.py data/sft/sft_h100.jsonl
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from summary import RESULTS, geometric_mean, op_name, write_results

from sparserl.sft_data import read_records

# The targets: (op label prefix, lowest nnz, highest nnz) -> geomean to reach.
TARGETS = {
    ("spmv", 0, 1e5): 2.5,
    ("spmv", 1e5, 1e6): 1.8,
    ("spmv", 1e6, math.inf): 1.3,
    ("spmm-N8", 1e6, math.inf): 1.3,
    ("spmm-N32", 1e6, math.inf): 1.3,
    ("spmm-N128", 1e6, math.inf): 1.3,
}


def family_of(record) -> str:
    """synthetic family, 'dlmc/<method>', or 'suitesparse'."""
    ref = record.matrix
    if ref.kind == "synthetic":
        return f"synthetic/{ref.name}"
    if ref.kind == "dlmc":
        return f"dlmc/{ref.name.split('/')[1]}"
    return "suitesparse"


def row_of(record) -> dict:
    best = record.ranked[0]
    extra = record.extra
    cold_base, cold_best = extra.get("baseline_device_cold_us"), best.get("device_cold_us")
    return {
        "matrix": record.matrix.label, "family": family_of(record), "nnz": record.nnz,
        "m": extra["m"], "n": extra["n"], "op": record.op, "n_cols": record.n_cols,
        "variant": best["variant"]["variant_id"], "speedup": best["speedup"],
        "speedup_cold": cold_base / cold_best if cold_base and cold_best else None,
        "best_device_warm_us": best["device_warm_us"], "best_device_cold_us": cold_best,
        "cusparse_best": record.baseline_name, "cusparse_device_warm_us": record.baseline_device_warm_us,
        "cusparse_device_cold_us": cold_base,
        # cold (L2 flushed): warm runs of a matrix that fits in L2 can beat the DRAM floor
        "floor_fraction_best": extra["traffic_floor_us"] / cold_best if cold_best else None,
        "floor_fraction_cusparse": extra["traffic_floor_us"] / cold_base if cold_base else None,
        "break_even_calls": extra["break_even_calls"], "n_correct_variants": len(record.ranked),
        "n_failed_variants": len(extra.get("failed", {})), "device": record.device, "date": record.date,
    }  # fmt: skip


def stats(values) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"count": 0}
    return {"count": len(values), "geomean": geometric_mean(values), "median": float(np.median(values)),
            "win_rate": float(np.mean([v > 1 for v in values]))}  # fmt: skip


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def summarise(rows: list[dict]) -> dict:
    targets = {}
    for (label, low, high), goal in TARGETS.items():
        band = [r for r in rows if op_name(r) == label and low <= r["nnz"] < high]
        targets[f"{label} nnz [{low:.0e}, {high:.0e})"] = {
            "target_geomean": goal, "warm": stats(r["speedup"] for r in band),
            "cold": stats(r["speedup_cold"] for r in band),
            "median_floor_fraction_best_cold": _median(r["floor_fraction_best"] for r in band),
        }  # fmt: skip
    families = {}
    for family in sorted({r["family"] for r in rows}):
        families[family] = {label: stats(r["speedup"] for r in rows if r["family"] == family and op_name(r) == label)
                            for label in sorted({op_name(r) for r in rows})}  # fmt: skip
    break_even = [r["break_even_calls"] for r in rows if r["break_even_calls"] not in (None, 0.0)]
    return {
        "targets": targets,
        "families": families,
        "overall": {
            label: stats(r["speedup"] for r in rows if op_name(r) == label)
            for label in sorted({op_name(r) for r in rows})
        },  # fmt: skip
        "never_breaks_even": sum(1 for r in rows if r["break_even_calls"] is None),
        "median_break_even_calls": float(np.median(break_even)) if break_even else None,
    }


def print_report(summary: dict) -> None:
    print(
        f"\n{'band':<34}{'target':>7}{'n':>5}{'geomean':>9}{'median':>8}{'win':>6}{'cold gm':>9}{'floor cold':>11}"
    )
    for band, entry in summary["targets"].items():
        warm, cold = entry["warm"], entry["cold"]
        if not warm["count"]:
            print(f"{band:<34}{entry['target_geomean']:>7.1f}    0")
            continue
        floor = entry["median_floor_fraction_best_cold"] or math.nan
        print(f"{band:<34}{entry['target_geomean']:>7.1f}{warm['count']:>5}{warm['geomean']:>9.2f}"
              f"{warm['median']:>8.2f}{warm['win_rate']:>6.2f}{cold.get('geomean', math.nan):>9.2f}{floor:>11.2f}")  # fmt: skip
    print("\ngeomean speedup by matrix family (warm device time)")
    for family, by_op in summary["families"].items():
        cells = "  ".join(
            f"{op}={s['geomean']:.2f}(n={s['count']})" for op, s in by_op.items() if s["count"]
        )
        print(f"  {family:<28}{cells}")
    median = summary["median_break_even_calls"]
    print(f"\nbreak-even: median {'-' if median is None else f'{median:,.0f}'} calls; "
          f"{summary['never_breaks_even']} rows never break even")  # fmt: skip


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for label in sorted({op_name(r) for r in rows}):
        selected = [r for r in rows if op_name(r) == label]
        ax.scatter(
            [r["nnz"] for r in selected],
            [r["speedup"] for r in selected],
            s=14,
            label=label,
            alpha=0.7,
        )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set(xscale="log", yscale="log", xlabel="stored entries (nnz)",
           ylabel="speedup over cuSPARSE-best (warm device time)",
           title=f"Autotuned expert kernels vs cuSPARSE-best, {rows[0]['device']}")  # fmt: skip
    ticks = [0.5, 0.75, 1, 1.5, 2, 3, 4, 6]
    ax.set_yticks(ticks, [f"{t:g}x" for t in ticks], minor=False)
    ax.set_yticks([], minor=True)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "records", type=Path, help="JSON lines written by data/build_sft_dataset.py"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args()
    records = read_records(args.records)
    if not records:
        raise SystemExit(f"{args.records}: no records")
    rows = [row_of(record) for record in records]
    device = rows[0]["device"]
    summary = summarise(rows)
    name = f"oracle_{device.replace(' ', '_')}"
    path = write_results(name, {"device": device, "records": str(args.records), "summary": summary,
                                "rows": rows}, folder=args.out)  # fmt: skip
    plot(rows, args.out / f"{name}.png")
    print_report(summary)
    print(f"\nwrote {path} and {args.out / (name + '.png')}")


if __name__ == "__main__":
    main()
