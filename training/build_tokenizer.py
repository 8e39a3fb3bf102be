"""Rebuild the shipped CUDA tokenizer from the licence-filtered corpus.

Reads --corpus (default .cache/corpus, written by data/build_corpus.py). Without it,
builds a corpus on the spot from the CCCL headers of the local CUDA install plus
this project's kernels, through the same licence filter. One corpus file in 16
(those whose sha256 starts with 0) is held out of training to measure the tokens per
KB of unseen CUDA source, overall and per corpus source; the numbers go to
build_info.json beside the tokenizer.

    python training/build_tokenizer.py [--corpus .cache/corpus] [--vocab-size 8192]
                                       [--out sparserl/assets/tokenizer]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

from transformers import PreTrainedTokenizerFast

from sparserl.corpus import (
    CORPUS_FILE,
    CorpusRecord,
    build_corpus,
    find_cccl_dir,
    read_corpus,
    sparserl_kernel_documents,
)
from sparserl.tokenizer import DEFAULT_TOKENIZER_DIR, train_tokenizer

REPO = Path(__file__).resolve().parents[1]
HELD_OUT_DIGITS = "0"  # files whose sha256 starts with this are held out: 1 in 16


def corpus_records(corpus_dir: Path) -> list[CorpusRecord]:
    """The corpus records; built into a temporary folder when `corpus_dir` has none."""
    if (corpus_dir / CORPUS_FILE).is_file():
        return list(read_corpus(corpus_dir))
    print(f"{corpus_dir / CORPUS_FILE} not found: building one from local sources")
    cccl = find_cccl_dir()
    with tempfile.TemporaryDirectory() as folder:
        build_corpus([cccl] if cccl else [], folder, declared=sparserl_kernel_documents())
        return list(read_corpus(folder))


def tokens_per_kb(tokenizer: PreTrainedTokenizerFast, texts: Iterable[str]) -> float:
    """Tokens per 1024 bytes of UTF-8 source, over all of `texts` together."""
    texts = list(texts)
    n_bytes = sum(len(text.encode()) for text in texts)
    n_tokens = sum(len(ids) for ids in tokenizer(texts)["input_ids"])
    return n_tokens / (n_bytes / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--out", type=Path, default=DEFAULT_TOKENIZER_DIR)
    args = parser.parse_args()

    records = corpus_records(args.corpus)
    training = [r.text for r in records if not r.sha256.startswith(HELD_OUT_DIGITS)]
    held_out = [r for r in records if r.sha256.startswith(HELD_OUT_DIGITS)]
    tokenizer = train_tokenizer(training, vocab_size=args.vocab_size)
    tokenizer.save_pretrained(str(args.out))

    held_out_by_source: dict[str, list[str]] = {}
    for record in held_out:
        held_out_by_source.setdefault(record.path.split("/")[0], []).append(record.text)
    info = {
        "vocab_size": len(tokenizer),
        "training_files": len(training),
        "training_bytes": sum(len(text.encode()) for text in training),
        "held_out_files": len(held_out),
        "held_out_bytes": sum(len(r.text.encode()) for r in held_out),
        "tokens_per_kb_held_out": round(tokens_per_kb(tokenizer, [r.text for r in held_out]), 1),
        "tokens_per_kb_held_out_by_source": {
            source: round(tokens_per_kb(tokenizer, texts), 1)
            for source, texts in held_out_by_source.items()
        },
    }
    (args.out / "build_info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info, indent=2))
    print(f"tokenizer written to {args.out}")


if __name__ == "__main__":
    main()
