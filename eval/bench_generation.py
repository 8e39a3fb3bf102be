"""Generation speed of the default (untrained) policies and the syntax checker's share of it.

For each default backbone (qwen, t5), samples `--samples` kernels of `--tokens` new
tokens for a real matrix, with and without the streaming syntax checker, and reports
tokens per second and the checker's share of the time (feed + decode for the checker +
final check). An untrained model writes garbage that the checker stops early, so the
run with the checker also counts how many samples it stopped.

    python eval/bench_generation.py [--device cuda] [--samples 8 --tokens 256]
"""

from __future__ import annotations

import argparse

import torch
from summary import shared_data_folder, write_results

from sparserl import SparseRLPolicy, load_matrix
from sparserl.model_configs import default_config


def run(kind: str, A, args) -> dict:
    torch.manual_seed(0)
    policy = SparseRLPolicy.from_backbone(default_config(kind)).to(args.device)
    task = policy.make_task(A, "spmv")
    results = {}
    for checked in (False, True):
        policy.generate_batch(
            [task], num_samples=args.samples, max_new_tokens=8, syntax_check=checked
        )
        _, stats = policy.generate_batch([task], num_samples=args.samples, temperature=1.0,
                                         max_new_tokens=args.tokens, syntax_check=checked)  # fmt: skip
        results["with_checker" if checked else "without_checker"] = {
            "seconds": stats.total_seconds, "new_tokens": stats.n_new_tokens,
            "tokens_per_s": stats.n_new_tokens / stats.total_seconds,
            "checker_share": stats.checker_share if checked else 0.0,
            "checker_and_decode_share": (stats.feed_seconds + stats.decode_seconds
                                         + stats.final_check_seconds) / stats.total_seconds,
            "stopped_early": stats.n_stopped_early, "samples": stats.n_sequences,
        }  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--out", default=None, help="results folder (default eval/results)")
    args = parser.parse_args()
    A = load_matrix(shared_data_folder() / "suitesparse" / "HB__bcsstk33.mtx.gz")
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    report = {kind: run(kind, A, args) for kind in ("qwen", "t5")}
    for kind, sides in report.items():
        for side, r in sides.items():
            print(f"{kind:5} {side:16} {r['tokens_per_s']:8.0f} tokens/s  checker share {r['checker_share']:.1%}"
                  f" (with decoding {r['checker_and_decode_share']:.1%})  stopped {r['stopped_early']}/{r['samples']}")  # fmt: skip
    write_results(f"generation_{device_name.replace(' ', '_')}",
                  {"device": device_name, "settings": vars(args), "results": report}, folder=args.out)  # fmt: skip


if __name__ == "__main__":
    main()
