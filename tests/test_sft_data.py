"""The SFT data set: the committed GPU measurements, their round trip and their sources."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from sparserl.abi import check_entry_signature, parse_header
from sparserl.datasets import interleave
from sparserl.features import matrix_features
from sparserl.harness import compile_check
from sparserl.kernels import FAMILIES
from sparserl.sft_data import MatrixRef, families_tried, read_records, write_records

COMMITTED = Path(__file__).parent.parent / "data" / "sft" / "sft_h100.jsonl"


@pytest.fixture(scope="module")
def records():
    return read_records(COMMITTED)


def test_committed_records_are_ranked_and_consistent(records):
    assert len(records) >= 449
    for record in records:
        times = [item["device_warm_us"] for item in record.ranked]
        assert times == sorted(times), record.matrix.label
        for item in record.ranked:
            expected = record.baseline_device_warm_us / item["device_warm_us"]
            assert item["speedup"] == pytest.approx(expected, rel=1e-9)
        assert record.op == "spmv" or record.n_cols in (8, 32, 128)


def build_script():
    """data/build_sft_dataset.py as a module (it is a script, not part of the package)."""
    path = COMMITTED.parent.parent / "build_sft_dataset.py"
    spec = importlib.util.spec_from_file_location("build_sft_dataset", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_record_tried_the_families_of_its_op(records):
    for record in records:
        wanted = {"csr_nnz_split"} if record.op == "spmv" else {"csr_spmm_nnz_split"}
        assert wanted <= families_tried(record), record.matrix.label


def test_dlmc_records_tried_every_variant_that_applies(records, shared_data):
    """What `--retune-without` relies on: a variant counts as untried only where its family
    serves the record's op and width and the autotuner would time it on the record's
    matrix; the committed DLMC records miss none, and taking a family out of a record makes
    exactly its variants untried."""
    build = build_script()
    everything = list(FAMILIES.values())
    dlmc = [r for r in records if r.matrix.kind == "dlmc"]
    matrices = {ref: ref.load(shared_data) for ref in {r.matrix for r in dlmc}}
    features = {ref: matrix_features(A) for ref, A in matrices.items()}

    def untried(record):
        A = matrices[record.matrix]
        return build.untried_variants(record, everything, A, features[record.matrix])

    for record in dlmc:
        assert untried(record) == set(), (record.matrix.label, record.op, record.n_cols)
    spmv = next(r for r in dlmc if r.op == "spmv" and "csr_multiwarp" in families_tried(r))
    without = dataclasses.replace(
        spmv, ranked=[i for i in spmv.ranked if i["variant"]["family"] != "csr_multiwarp"]
    )
    assert {variant_id.split("[")[0] for variant_id in untried(without)} == {"csr_multiwarp"}
    narrow = next(r for r in dlmc if r.n_cols == 8)
    assert not build.serving([FAMILIES["csr_spmm_nnz_batched"]], narrow)  # N=8 not served


def test_splits_are_by_matrix(records):
    splits = {}
    for record in records:
        splits.setdefault(record.matrix, set()).add(record.split)
    assert all(len(found) == 1 for found in splits.values())
    assert {"train", "validation"} == set().union(*splits.values())


def test_sources_are_recreated_and_compile(records):
    record = next(r for r in records if r.op == "spmm")
    sources = record.sources()
    assert len(sources) == len(record.ranked)
    for source in sources[:3]:
        header = parse_header(source)
        check_entry_signature(source, header.op, header.format)
    result = compile_check(sources[0])
    assert result.ok, result.diagnostics


def test_matrix_refs_reload_the_measured_matrix(records, shared_data):
    for kind in ("suitesparse", "dlmc", "synthetic"):
        record = next(r for r in records if r.matrix.kind == kind and r.nnz < 300_000)
        assert record.matrix.load(shared_data).nnz == record.nnz


def test_write_then_read_round_trips(records, tmp_path):
    path = tmp_path / "records.jsonl"
    write_records(path, records[:5])
    assert path.read_text() == "".join(r.to_json() + "\n" for r in records[:5])
    assert read_records(path) == records[:5]
    assert list(tmp_path.iterdir()) == [path]  # the temporary file was renamed away


def test_a_bad_line_is_named(records, tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(records[0].to_json() + "\n{not json\n")
    with pytest.raises(ValueError, match="records.jsonl, line 2: not an SFT record"):
        read_records(path)


def test_unknown_matrix_kind_is_an_error(shared_data):
    with pytest.raises(ValueError, match="unknown matrix kind 'florida'"):
        MatrixRef("florida", "x").load(shared_data)


def test_interleave_takes_one_from_each_in_turn():
    assert list(interleave("abc", [1], iter("xy"))) == ["a", 1, "x", "b", "y", "c"]
    assert list(interleave()) == []
