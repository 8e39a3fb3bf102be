"""SuiteSparse index and split, local folders, DLMC, and the command line."""

from __future__ import annotations

import csv
import gzip
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sparserl.datasets import synthetic
from sparserl.datasets.dlmc import DLMCCollection
from sparserl.datasets.local import LocalMatrixCollection
from sparserl.datasets.suitesparse import (
    SUITESPARSE_HOST,
    SuiteSparseIndexError,
    SuiteSparseUnavailableError,
    download,
    fetch_index,
    paper_split_candidates,
    read_index,
    suitesparse_paper_split,
)
from sparserl.io import load_matrix, save_matrix

REPO = Path(__file__).resolve().parents[1]
SPLIT_JSON = REPO / "data" / "suitesparse_paper_split.json"


def online() -> bool:
    try:
        socket.create_connection((SUITESPARSE_HOST, 443), timeout=3).close()
        return True
    except OSError:
        return False


def write_index(path: Path, rows: list[str], count: int | None = None) -> Path:
    count = len(rows) if count is None else count
    path.write_text(f"{count}\n08-Oct-2020 17:09:58\n" + "".join(r + "\n" for r in rows))
    return path


GOOD_ROW = "HB,bcsstk01,48,48,400,1,0,0,1,1,1,structural problem,400"


# ----------------------------------------------------------------------------- index


def test_read_index_matches_the_shared_csv(shared_data):
    path = shared_data / "suitesparse_index.csv"
    index = read_index(path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert len(index) == int(rows[0][0]) == len(rows) - 2
    assert [e.id for e in index] == list(range(1, len(index) + 1))
    for entry, row in zip(index, rows[2:], strict=True):
        assert (entry.group, entry.name, entry.kind) == (row[0], row[1], row[11])
        assert (entry.nrows, entry.ncols, entry.nnz, entry.nentries) == tuple(
            int(row[k]) for k in (2, 3, 4, 12)
        )
        assert entry.is_real == (row[5] == "1") and entry.posdef == (row[8] == "1")
    first = index[0]  # line 3 of the file: HB,1138_bus,1138,1138,4054,1,0,0,1,1,1,...
    assert first.full_name == "HB/1138_bus" and first.posdef and not first.is_binary


def test_read_index_agrees_with_the_shared_manifest(shared_data):
    index = {e.full_name: e for e in read_index(shared_data / "suitesparse_index.csv")}
    collection = LocalMatrixCollection(shared_data / "suitesparse")
    for name in collection.names():
        meta = collection.metadata(name)
        assert (index[name].nrows, index[name].ncols) == (meta["rows"], meta["cols"])


@pytest.mark.parametrize(
    "rows, count, message",
    [
        ([GOOD_ROW, "HB,x,1,1,1,1,0,0,0,1,1,kind"], None, r"line 4: expected 13 comma-separated"),
        ([GOOD_ROW, GOOD_ROW.replace(",48,48,", ",48,4x8,")], None, r"line 4: ncols must be"),
        ([GOOD_ROW.replace(",1,0,0,1,", ",2,0,0,1,")], None, r"line 3: isReal must be 0 or 1"),
        ([GOOD_ROW.replace(",1,1,structural", ",1,1.5,structural")], None, r"line 3: nsym must be"),
        ([GOOD_ROW], 2, r"line 1 says 2 matrices but the file has 1 rows"),
    ],
)
def test_read_index_names_file_and_line_of_a_malformed_row(tmp_path, rows, count, message):
    path = write_index(tmp_path / "ssstats.csv", rows, count)
    with pytest.raises(SuiteSparseIndexError, match=message) as caught:
        read_index(path)
    assert str(path) in str(caught.value)


def test_read_index_rejects_a_bad_count_line_and_a_missing_file(tmp_path):
    path = tmp_path / "ssstats.csv"
    path.write_text("group,name\nHB,x\n")
    with pytest.raises(SuiteSparseIndexError, match="line 1: expected the matrix count"):
        read_index(path)
    with pytest.raises(FileNotFoundError, match="nothere.csv"):
        read_index(tmp_path / "nothere.csv")


@pytest.mark.skipif(online(), reason="tests the offline error path only")
def test_fetch_index_offline_fails_fast_with_advice():
    start = time.perf_counter()
    with pytest.raises(ConnectionError, match=r"could not fetch the SuiteSparse index.*read_index"):
        fetch_index(timeout_s=5)
    assert time.perf_counter() - start < 10


@pytest.mark.skipif(online(), reason="tests the offline error path only")
def test_download_offline_fails_and_writes_nothing(tmp_path):
    with pytest.raises(SuiteSparseUnavailableError, match="could not download"):
        download(["HB/bcsstk01"], tmp_path / "cache", timeout_s=5)
    assert not (tmp_path / "cache").exists()


def test_download_serves_cached_files_without_the_network(tmp_path):
    cached = tmp_path / "HB__bcsstk01.mtx.gz"
    save_matrix(cached, synthetic.banded(10, 1))
    assert download(["HB/bcsstk01"], tmp_path) == [cached]
    with pytest.raises(ValueError, match="expected a SuiteSparse name 'Group/Name'"):
        download(["bcsstk01"], tmp_path)


# ----------------------------------------------------------------------------- paper split


def test_paper_split_follows_its_rule(shared_data):
    index = read_index(shared_data / "suitesparse_index.csv")
    train, test = suitesparse_paper_split(index)
    assert (len(train), len(test)) == (700, 400)
    assert not set(train) & set(test)

    # The candidates, derived independently from the raw CSV rows.
    with open(shared_data / "suitesparse_index.csv", newline="") as f:
        rows = list(csv.reader(f))[2:]
    eligible = [
        (-int(r[4]), matrix_id, f"{r[0]}/{r[1]}")
        for matrix_id, r in enumerate(rows, start=1)
        if r[5] == "1" and int(r[12]) < 2**31
    ]
    ordered = [name for _, _, name in sorted(eligible)[:1100]]
    assert set(train) | set(test) == set(ordered)
    assert [e.full_name for e in paper_split_candidates(index)] == ordered

    # Every window of 11 sends exactly 4 to test, and both sets span the nnz range.
    test_set = set(test)
    for start in range(0, 1100, 11):
        assert sum(name in test_set for name in ordered[start : start + 11]) == 4
    assert ordered[0] in train and ordered[-1] in test
    nnz = {name: -key for key, _, name in eligible}
    smallest, largest = nnz[ordered[-1]], nnz[ordered[0]]
    for part in (train, test):
        assert max(nnz[n] for n in part) >= largest / 2
        assert min(nnz[n] for n in part) <= 1.01 * smallest


def test_committed_split_matches_the_shared_index(shared_data):
    train, test = suitesparse_paper_split(read_index(shared_data / "suitesparse_index.csv"))
    record = json.loads(SPLIT_JSON.read_text())
    assert record["train"]["names"] == train and record["test"]["names"] == test
    assert (record["train"]["count"], record["test"]["count"]) == (700, 400)
    index = {e.full_name: e.nnz for e in read_index(shared_data / "suitesparse_index.csv")}
    for part in ("train", "test"):
        counts = [index[name] for name in record[part]["names"]]
        assert (record[part]["nnz_min"], record[part]["nnz_max"]) == (min(counts), max(counts))


def test_paper_split_needs_enough_matrices(tmp_path):
    index = read_index(write_index(tmp_path / "ssstats.csv", [GOOD_ROW]))
    with pytest.raises(ValueError, match="fewer than 1100"):
        suitesparse_paper_split(index)


# ----------------------------------------------------------------------------- local folders


def test_local_collection_serves_the_shared_suitesparse_folder(shared_data):
    collection = LocalMatrixCollection(shared_data / "suitesparse")
    names = collection.names()
    assert len(collection) == len(names) == 140
    assert names == sorted(names) and list(collection) == names
    meta = collection.metadata("HB/bcsstk33")
    assert meta["file"] == "HB__bcsstk33.mtx.gz" and meta["symmetry"] == "symmetric"
    assert isinstance(meta["nnz_stored"], int)
    A = collection.load("HB/bcsstk33")
    assert A.shape == (meta["rows"], meta["cols"])
    general = collection.filter(lambda m: m["symmetry"] == "general")
    assert 0 < len(general) < len(collection)
    # For general files the loaded entry count is the file's line count.
    for name in general.names()[:5]:
        assert general.nnz(name) == general.metadata(name)["nnz_stored"]
    with pytest.raises(KeyError, match="no matrix named 'HB/nothere'"):
        collection.metadata("HB/nothere")


def test_local_collection_filters_by_nnz(tmp_path):
    for n in (10, 20, 40):
        save_matrix(tmp_path / f"band{n}.npz", synthetic.banded(n, 1))
    collection = LocalMatrixCollection(tmp_path)
    nnz = {name: 3 * n - 2 for name, n in (("band10", 10), ("band20", 20), ("band40", 40))}
    small = collection.filter(max_nnz=nnz["band20"])
    assert small.names() == ["band10", "band20"]
    assert collection.filter(min_nnz=nnz["band20"] + 1).names() == ["band40"]
    assert small.filter(lambda m: m["name"].endswith("0"), min_nnz=30).names() == ["band20"]


def test_local_collection_without_manifest(tmp_path):
    A = synthetic.uniform_random(30, 20, 0.2, seed=1)
    save_matrix(tmp_path / "Grp__mat.mtx.gz", A)
    save_matrix(tmp_path / "plain.npz", A)
    (tmp_path / "notes.txt").write_text("not a matrix")
    (tmp_path / "sub").mkdir()
    save_matrix(tmp_path / "sub" / "nested.mtx", A)
    collection = LocalMatrixCollection(tmp_path)
    assert collection.names() == ["Grp/mat", "plain"]
    assert collection.metadata("plain") == {"name": "plain", "file": "plain.npz"}
    for name in collection:
        B = collection.load(name)
        assert np.array_equal(B.toarray(), A.toarray())


def test_local_collection_rejects_bad_folders_and_manifests(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        LocalMatrixCollection(tmp_path / "nothere")
    save_matrix(tmp_path / "a.mtx", synthetic.diagonal(3))
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("file,group,name,rows\na.mtx,G,a,3\nb.mtx,G,b,3\n")
    with pytest.raises(FileNotFoundError, match=r"line 3: listed file 'b.mtx' does not exist"):
        LocalMatrixCollection(tmp_path)
    manifest.write_text("file,group,name\na.mtx,G,a\na.mtx,G,a\n")
    with pytest.raises(ValueError, match="line 3: matrix 'G/a' is listed twice"):
        LocalMatrixCollection(tmp_path)
    manifest.write_text("file,rows\na.mtx,3\n")
    with pytest.raises(ValueError, match="missing column"):
        LocalMatrixCollection(tmp_path)
    manifest.write_text("file,group,name\na.mtx,G\n")
    with pytest.raises(ValueError, match="line 2: expected 3 fields"):
        LocalMatrixCollection(tmp_path)


# ----------------------------------------------------------------------------- DLMC


def test_dlmc_collection_layout_stats_and_loading(shared_data):
    dlmc = DLMCCollection(shared_data / "dlmc")
    assert len(dlmc) == 216
    keys = [(e.model, e.method, e.sparsity, e.layer) for e in dlmc]
    assert keys == sorted(keys)
    for method in ("magnitude_pruning", "random_pruning"):
        for sparsity in (0.7, "0.9"):
            assert len(dlmc.filter(model="rn50", method=method, sparsity=sparsity)) == 54
    assert dlmc.filter(model="transformer") == []
    entry = dlmc.filter(method="random_pruning", sparsity=0.9)[3]
    A = dlmc.load(entry)
    assert A.shape == (entry.stats["nrows"], entry.stats["ncols"])
    assert A.nnz == entry.stats["nnz"]
    assert np.all(A.data == 1.0)
    assert abs(1 - A.nnz / (A.shape[0] * A.shape[1]) - 0.9) < 0.02
    R1, R2 = (dlmc.load(entry.name, values="random", seed=7) for _ in range(2))
    assert np.array_equal(R1.data, R2.data) and not np.all(R1.data == 1.0)


def test_dlmc_collection_without_stats_and_with_a_bad_folder(tmp_path):
    layer = tmp_path / "net" / "pruned" / "0.5" / "fc.smtx"
    layer.parent.mkdir(parents=True)
    layer.write_text("2, 3, 3\n0 2 3\n0 2 1\n")
    with gzip.open(tmp_path / "net" / "pruned" / "0.5" / "conv.smtx.gz", "wt") as f:
        f.write("1, 2, 1\n0 1\n1\n")
    dlmc = DLMCCollection(tmp_path)
    assert [e.layer for e in dlmc] == ["conv", "fc"]
    assert dlmc.entry("net/pruned/0.5/fc").stats == {}
    assert dlmc.load("net/pruned/0.5/fc").toarray().tolist() == [[1, 0, 1], [0, 1, 0]]
    bad = tmp_path / "net" / "pruned" / "dense" / "x.smtx"
    bad.parent.mkdir()
    bad.write_text("1, 1, 1\n0 1\n0\n")
    with pytest.raises(ValueError, match="sparsity folder 'dense' is not a number"):
        DLMCCollection(tmp_path)


# ----------------------------------------------------------------------------- command line


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sparserl.datasets", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


def test_cli_info_prints_features(shared_data):
    path = shared_data / "suitesparse" / "HB__bcsstk33.mtx.gz"
    result = run_cli("info", str(path))
    assert result.returncode == 0, result.stderr
    table = dict(line.split(None, 1) for line in result.stdout.splitlines())
    A = load_matrix(path)
    assert int(table["nnz"]) == A.nnz and int(table["n_rows"]) == A.shape[0]
    assert "fingerprint" in table and "bandwidth" in table


def test_cli_errors_are_one_line_and_exit_2(shared_data, tmp_path):
    cases = [
        ("info", str(shared_data / "bad_inputs" / "bad_header.mtx")),
        ("list", str(tmp_path / "nothere")),
        ("split", "--index", str(tmp_path / "nothere.csv")),
    ]
    for args in cases:
        result = run_cli(*args)
        assert result.returncode == 2, args
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_cli_split_and_list(shared_data, tmp_path):
    result = run_cli("split", "--index", str(shared_data / "suitesparse_index.csv"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    record = json.loads(SPLIT_JSON.read_text())
    for part in ("train", "test"):
        line = next(x for x in result.stdout.splitlines() if x.startswith(part))
        assert line.split() == [
            part,
            str(record[part]["count"]),
            str(record[part]["nnz_min"]),
            str(record[part]["nnz_max"]),
        ]
    default = run_cli("split")  # finds ../shared/data beside the checkout
    assert (
        default.returncode == 0
        and default.stdout.splitlines()[1:] == result.stdout.splitlines()[1:]
    )

    listing = run_cli("list", str(shared_data / "suitesparse"))
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split() == ["name", "file", "rows", "cols", "nnz_stored"]
    assert lines[-1] == f"140 matrices in {shared_data / 'suitesparse'}"
    assert any(line.split()[:2] == ["HB/bcsstk33", "HB__bcsstk33.mtx.gz"] for line in lines)
