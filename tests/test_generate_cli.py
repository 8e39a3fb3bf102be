"""`python -m sparserl.generate` with a tiny random-initialised policy saved to a folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import scipy.sparse
import torch
from tiny_models import tiny_config

from sparserl.generate import DEFAULT_MODEL_DIR, main, matrix_stem, output_files
from sparserl.io import load_matrix, save_matrix
from sparserl.policy import SparseRLPolicy


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    config = tiny_config("qwen")
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("model")
    SparseRLPolicy.from_backbone(config, index_dim=8, max_nonzeros=64).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("matrices") / "banded.mtx"
    save_matrix(path, scipy.sparse.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(40, 40), format="csr"))
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sparserl.generate", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_writes_one_file_per_sample_with_verdicts(model_dir, matrix_file, tmp_path):
    out = tmp_path / "kernels"
    options = "--op spmm --n-cols 8 --num-samples 2 --max-new-tokens 16 --seed 0".split()
    result = run_cli(str(matrix_file), "--model", str(model_dir), *options, "--out", str(out))
    assert result.returncode == 0, result.stderr
    files = sorted(out.iterdir())
    assert [f.name for f in files] == ["banded_spmm_0.cu", "banded_spmm_1.cu"]
    report = [line for line in result.stderr.splitlines() if line.startswith("sample ")]
    assert len(report) == 2
    for line, path in zip(report, files, strict=True):
        assert "syntax" in line and line.endswith(str(path))


def test_bad_matrix_file_is_one_line_and_exit_2(model_dir, shared_data):
    bad = shared_data / "bad_inputs" / "bad_header.mtx"
    result = run_cli(str(bad), "--model", str(model_dir))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}")


def test_stdout_holds_the_kernel_when_no_out_is_given(model_dir, matrix_file, capsys):
    torch.manual_seed(0)
    greedy = "--max-new-tokens 12 --temperature 0".split()
    status = main([str(matrix_file), "--model", str(model_dir), *greedy])
    captured = capsys.readouterr()
    assert status == 0
    policy = SparseRLPolicy.from_pretrained(model_dir)
    expected = policy.generate(load_matrix(matrix_file), temperature=0, max_new_tokens=12)[0]
    assert captured.out == expected.source + "\n"
    assert captured.err.startswith("sample 1/1: ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--op", "spmm"], "--n-cols"),
        (["--n-cols", "4"], "--op spmm only"),
        (["--num-samples", "0"], "--num-samples"),
    ],
)
def test_argument_errors_exit_2(model_dir, matrix_file, capsys, extra, message):
    with pytest.raises(SystemExit) as exit_info:
        main([str(matrix_file), "--model", str(model_dir), *extra])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_input_errors_exit_2_with_one_line(model_dir, matrix_file, tmp_path, capsys):
    cases = [
        (
            [str(tmp_path / "absent.mtx"), "--model", str(model_dir)],
            "absent.mtx: file does not exist",
        ),
        ([str(matrix_file), "--model", str(tmp_path)], "cannot load the model"),
        (
            [
                str(matrix_file),
                "--model",
                str(model_dir),
                "--num-samples=2",
                f"--out={tmp_path}/k.cu",
            ],
            "names a file",
        ),
        (
            [str(matrix_file), "--model", str(model_dir), "--num-beams", "2", "--num-samples", "3"],
            "num_beams",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ") and message in err


@pytest.mark.skipif(DEFAULT_MODEL_DIR.is_dir(), reason="a default model is installed")
def test_missing_default_model_says_so(matrix_file, capsys):
    assert main([str(matrix_file)]) == 2
    err = capsys.readouterr().err
    assert "no default model is installed" in err and "--model" in err


def test_matrix_stem_strips_compression_and_format():
    assert matrix_stem(Path("data/HB__bcsstk33.mtx.gz")) == "HB__bcsstk33"
    assert matrix_stem(Path("rn50/0.8/bottleneck_1.smtx")) == "bottleneck_1"
    assert matrix_stem(Path("a.b.npz")) == "a.b"


def test_out_names_a_file_or_a_directory(tmp_path):
    assert output_files(f"{tmp_path}/k.cu", "m", "spmv", 1) == [tmp_path / "k.cu"]
    (tmp_path / "existing.d").mkdir()
    for out in (f"{tmp_path}/run.v2/", f"{tmp_path}/kernels", f"{tmp_path}/existing.d"):
        expected = [Path(out) / "m_spmm_0.cu", Path(out) / "m_spmm_1.cu"]
        assert output_files(out, "m", "spmm", 2) == expected
