"""The byte-level BPE tokenizer: exact round trips, special tokens, save/load, shipped copy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from sparserl.corpus import find_cccl_dir
from sparserl.kernels import all_variant_sources
from sparserl.tokenizer import (
    SPECIAL_TOKENS,
    default_tokenizer,
    load_tokenizer,
    train_tokenizer,
)

AWKWARD_TEXTS = [
    "",
    "\tint x = 1;\t\t// tab-indented\n",
    "float y;\r\n// CRLF line ends\r\n\r\n",
    "// ünïcödé comment: → ✓ 日本語 😀\n__device__ float f();\n",
    "x  =  y ;   \n\n\n    \t \n",  # runs of mixed whitespace, trailing blanks
    "literal <eos> and <spmv> inside code\n",
    "\u00a0non-breaking\u2003space\u200bzero-width\n",
    "\\\\ back\\slashes \"quotes\" 'single' `tick`\n",
]


@pytest.fixture(scope="module")
def kernel_sources() -> list[str]:
    return list(all_variant_sources())


@pytest.fixture(scope="module")
def small_tokenizer(kernel_sources) -> PreTrainedTokenizerFast:
    """Trained from a generator, to check that any iterable works."""
    return train_tokenizer((text for text in kernel_sources), vocab_size=600)


@pytest.fixture(scope="module")
def cccl_texts() -> list[str]:
    """A few real CCCL headers (tabs, unicode, long comments), when installed."""
    cccl = find_cccl_dir()
    if cccl is None:
        return []
    paths = sorted(cccl.rglob("*.cuh"))[:20] + sorted(cccl.rglob("*.h"))[:20]
    return [path.read_bytes().decode("utf-8") for path in paths]


def round_trips(tokenizer: PreTrainedTokenizerFast, text: str) -> bool:
    return tokenizer.decode(tokenizer.encode(text)) == text


def test_round_trip_is_exact(small_tokenizer, kernel_sources, cccl_texts):
    texts = AWKWARD_TEXTS + kernel_sources + cccl_texts
    texts += [text.replace("\n", "\r\n") for text in kernel_sources[:5]]
    for text in texts:
        assert round_trips(small_tokenizer, text), text[:200]


def test_unseen_bytes_never_become_unk(small_tokenizer):
    text = "".join(chr(code) for code in range(1, 0x800))
    ids = small_tokenizer.encode(text)
    assert small_tokenizer.unk_token_id not in ids
    assert small_tokenizer.decode(ids) == text


def test_special_tokens_are_single_leading_ids(small_tokenizer):
    for expected_id, token in enumerate(SPECIAL_TOKENS):
        assert small_tokenizer.convert_tokens_to_ids(token) == expected_id
        assert small_tokenizer.encode(token) == [expected_id]
    assert small_tokenizer.pad_token == "<pad>"
    assert small_tokenizer.eos_token == "<eos>"
    assert small_tokenizer.unk_token == "<unk>"
    assert set(small_tokenizer.all_special_tokens) == set(SPECIAL_TOKENS)
    prompt = "<matrix>m=4<spmv>"
    ids = small_tokenizer.encode(prompt)
    assert ids[0] == SPECIAL_TOKENS.index("<matrix>")
    assert ids[-1] == SPECIAL_TOKENS.index("<spmv>")


def test_training_learns_merges(small_tokenizer, kernel_sources):
    assert len(small_tokenizer) == 600
    text = kernel_sources[0]
    assert len(small_tokenizer.encode(text)) < len(text.encode()) / 2


def test_vocab_too_small_for_bytes_and_specials():
    with pytest.raises(ValueError, match="too small"):
        train_tokenizer(["int x;"], vocab_size=100)


def test_save_load_is_identical(small_tokenizer, kernel_sources, tmp_path):
    small_tokenizer.save_pretrained(str(tmp_path))
    loaded = load_tokenizer(tmp_path)
    assert loaded.get_vocab() == small_tokenizer.get_vocab()
    assert loaded.all_special_tokens == small_tokenizer.all_special_tokens
    assert (loaded.pad_token_id, loaded.eos_token_id, loaded.unk_token_id) == (0, 1, 2)
    for text in AWKWARD_TEXTS + kernel_sources[:10]:
        assert loaded.encode(text) == small_tokenizer.encode(text)
        assert round_trips(loaded, text)


def test_load_tokenizer_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_tokenizer(tmp_path)
    plain = Tokenizer(models.BPE())
    plain.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    plain.train_from_iterator(["int x;"], trainers.BpeTrainer(vocab_size=300, show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=plain).save_pretrained(str(tmp_path))
    with pytest.raises(ValueError, match="special tokens"):
        load_tokenizer(tmp_path)


def test_default_tokenizer(kernel_sources, cccl_texts):
    tokenizer = default_tokenizer()
    assert len(tokenizer) == 8192
    for expected_id, token in enumerate(SPECIAL_TOKENS):
        assert tokenizer.encode(token) == [expected_id]
    for text in AWKWARD_TEXTS + kernel_sources + cccl_texts:
        assert round_trips(tokenizer, text), text[:200]
    source = "\n".join(kernel_sources).encode()
    assert len(tokenizer.encode(source.decode())) < len(source) / 2.5


def test_default_tokenizer_loads_offline():
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    script = "from sparserl.tokenizer import default_tokenizer; print(len(default_tokenizer()))"
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "8192"
