"""Regenerate data/suitesparse_paper_split.json: the SuiteSparse paper split (700/400).

Usage: python data/make_splits.py [--index PATH]

PATH is the collection's ssstats.csv; by default the shared data's
suitesparse_index.csv (found at ../shared/data beside the checkout or the working
directory). The rule is in `sparserl.datasets.suitesparse.suitesparse_paper_split`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sparserl.datasets.suitesparse import find_shared_index, paper_split_summary, read_index

OUTPUT = Path(__file__).resolve().parent / "suitesparse_paper_split.json"
RULE = (
    "Candidates: real matrices (isReal = 1: real, integer or pattern) whose nnz and "
    "nentries are below 2^31 (int32 indices). Take the 1,100 with the most nonzeros, "
    "ordered by decreasing nnz, ties by increasing id. In every window of 11 consecutive "
    "matrices of that order, positions 1, 4, 7 and 10 (0-based) go to test and the other "
    "7 to train. Both lists keep the decreasing-nnz order."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, default=None, help="ssstats.csv file")
    args = parser.parse_args()
    index_path = args.index or find_shared_index()
    if index_path is None:
        parser.error("no shared suitesparse_index.csv found; pass --index PATH")
    index_date = index_path.read_text(encoding="utf-8").splitlines()[1].strip()
    index = read_index(index_path)
    record = {
        "description": "SuiteSparse paper benchmark split: 700 train / 400 test matrices",
        "index": {"file": index_path.name, "generated": index_date, "matrices": len(index)},
        "rule": RULE,
        **paper_split_summary(index),
    }
    OUTPUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT}: {record['train']['count']} train, {record['test']['count']} test")


if __name__ == "__main__":
    main()
