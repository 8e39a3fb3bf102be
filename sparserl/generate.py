"""Write SpMV/SpMM kernels for a matrix file from the command line.

    python -m sparserl.generate matrix.mtx [--op spmm --n-cols 64] [--num-samples 4] [--out DIR]

Loads the matrix (`sparserl.io.load_matrix`) and a saved policy (`--model`, default: the
model shipped in `sparserl/assets/default_model`), generates kernels and writes them to
stdout or to `--out`. The syntax verdict of every sample is reported on stderr.
Exit status: 0 when kernels were generated (valid or not), 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from sparserl.io import MatrixFormatError, load_matrix
from sparserl.policy import GeneratedKernel, SparseRLPolicy

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "assets" / "default_model"
MATRIX_SUFFIXES = (".mtx", ".smtx", ".mat", ".npz")


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sparserl.generate",
        description="Generate CUDA kernels specialised to a sparse matrix.",
    )
    parser.add_argument(
        "matrix", type=Path, help="matrix file (.mtx, .mtx.gz, .smtx, .smtx.gz, .mat, .npz)"
    )
    parser.add_argument(
        "--op", choices=("spmv", "spmm"), default="spmv", help="operation (default spmv)"
    )
    parser.add_argument("--n-cols", type=int, help="N, the columns of B (spmm only)")
    parser.add_argument(
        "--model", type=Path, help=f"saved policy folder (default {DEFAULT_MODEL_DIR})"
    )
    parser.add_argument(
        "--num-samples", type=int, default=1, help="kernels to generate (default 1)"
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="sampling temperature; 0 = greedy (default 1.0)",
    )
    parser.add_argument("--top-k", type=int, help="sample from the k most likely tokens only")
    parser.add_argument("--num-beams", type=int, default=1, help="beam search with this many beams")
    parser.add_argument("--max-new-tokens", type=int, default=1024, help="longest kernel in tokens")
    parser.add_argument("--seed", type=int, help="seed for sampling (default: random)")
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu", help="torch device"
    )
    parser.add_argument(
        "--out",
        help="a .cu file (one sample) or a directory (an existing one, or a path ending in / or "
        "without suffix) that receives <matrix>_<op>_<i>.cu; default: stdout",
    )
    args = parser.parse_args(argv)
    if args.op == "spmm" and (args.n_cols is None or args.n_cols < 1):
        parser.error("--op spmm needs --n-cols N >= 1 (the columns of B)")
    if args.op == "spmv" and args.n_cols is not None:
        parser.error("--n-cols is for --op spmm only")
    if args.num_samples < 1:
        parser.error("--num-samples must be at least 1")
    return args


def matrix_stem(path: Path) -> str:
    """The matrix file's name without .gz and the matrix suffix: HB__bcsstk33.mtx.gz -> HB__bcsstk33."""
    name = path.name.removesuffix(".gz")
    for suffix in MATRIX_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def output_files(out: str, stem: str, op: str, count: int) -> list[Path]:
    """Where the `count` kernels go: `out` itself if it names a file, else files inside it."""
    path = Path(out)
    names_directory = path.is_dir() or out.endswith(("/", "\\")) or not path.suffix
    if not names_directory:
        if count > 1:
            raise UsageError(
                f"--out {out} names a file but {count} samples were asked: give a directory"
            )
        return [path]
    return [path / f"{stem}_{op}_{i}.cu" for i in range(count)]


def describe(kernel: GeneratedKernel) -> str:
    """One line about a sample's syntax verdict."""
    verdict = kernel.verdict
    if verdict is None:
        return f"{kernel.n_tokens} tokens, not checked"
    if verdict.ok:
        return f"{kernel.n_tokens} tokens, syntax ok"
    stopped = "stopped early, " if kernel.stopped_early else ""
    where = f" on line {verdict.line}" if verdict.line is not None else ""
    return f"{kernel.n_tokens} tokens, {stopped}syntax error{where}: {verdict.reason}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    if args.model is None and not DEFAULT_MODEL_DIR.is_dir():
        raise UsageError(
            f"no default model is installed ({DEFAULT_MODEL_DIR} does not exist); "
            "pass --model PATH to a saved policy folder"
        )
    try:
        matrix = load_matrix(args.matrix)
    except MatrixFormatError as error:
        where = f"{args.matrix}, line {error.line}" if error.line else str(args.matrix)
        raise UsageError(f"{where}: {error.detail}") from error
    paths = None
    if args.out is not None:
        paths = output_files(args.out, matrix_stem(args.matrix), args.op, args.num_samples)
    try:
        policy = SparseRLPolicy.from_pretrained(args.model or DEFAULT_MODEL_DIR, device=args.device)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(f"cannot load the model: {error}") from error
    if args.seed is not None:
        torch.manual_seed(args.seed)
    try:
        kernels = policy.generate(
            matrix,
            args.op,
            args.n_cols,
            num_samples=args.num_samples,
            temperature=args.temperature,
            top_k=args.top_k,
            num_beams=args.num_beams,
            max_new_tokens=args.max_new_tokens,
        )
    except ValueError as error:  # decoding options that do not fit together
        raise UsageError(str(error)) from error

    for i, kernel in enumerate(kernels):
        label = f"sample {i + 1}/{len(kernels)}"
        if paths is None:
            if len(kernels) > 1:
                print(f"// ----- {label} -----")
            print(kernel.source)
            print(f"{label}: {describe(kernel)}", file=sys.stderr)
        else:
            paths[i].parent.mkdir(parents=True, exist_ok=True)
            paths[i].write_text(kernel.source)
            print(f"{label}: {describe(kernel)} -> {paths[i]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
