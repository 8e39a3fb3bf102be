"""The CUDA tokenizer: a byte-level BPE trained on the licence-filtered corpus.

Byte-level means every string, whatever its bytes (tabs, CRLF, unicode in
comments), encodes without `<unk>` and decodes back to itself exactly; there is no
normaliser and no lowercasing. The special tokens come first in the vocabulary, in
`SPECIAL_TOKENS` order, so `<pad>` is id 0. Nothing is added on encode: callers
append `<eos>` themselves where a program ends.

The shipped tokenizer lives in ``sparserl/assets/tokenizer`` and is rebuilt by
``training/build_tokenizer.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

PAD_TOKEN = "<pad>"
EOS_TOKEN = "<eos>"  # end of a generated program
UNK_TOKEN = "<unk>"
MATRIX_TOKEN = "<matrix>"  # opens the matrix description in a prompt
SPMV_TOKEN = "<spmv>"
SPMM_TOKEN = "<spmm>"
SPECIAL_TOKENS = [PAD_TOKEN, EOS_TOKEN, UNK_TOKEN, MATRIX_TOKEN, SPMV_TOKEN, SPMM_TOKEN]

DEFAULT_TOKENIZER_DIR = Path(__file__).resolve().parent / "assets" / "tokenizer"
TOKENIZER_FILE = "tokenizer.json"
BYTE_ALPHABET_SIZE = 256


def wrap_tokenizer(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    """A transformers fast tokenizer around `tokenizer`, with our special tokens set."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        additional_special_tokens=[MATRIX_TOKEN, SPMV_TOKEN, SPMM_TOKEN],
        clean_up_tokenization_spaces=False,
    )


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8192) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE of `vocab_size` entries (special tokens included) on `texts`.

    Raises:
        ValueError: `vocab_size` cannot hold the 256 byte symbols and the special tokens.
    """
    smallest = BYTE_ALPHABET_SIZE + len(SPECIAL_TOKENS)
    if vocab_size < smallest:
        raise ValueError(f"vocab_size {vocab_size} is too small: need at least {smallest}")
    tokenizer = Tokenizer(models.BPE(unk_token=UNK_TOKEN))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return wrap_tokenizer(tokenizer)


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    """Load a tokenizer saved with ``save_pretrained`` from the folder `path`.

    Raises:
        FileNotFoundError: `path` is not a folder holding tokenizer.json.
    """
    path = Path(path)
    if not (path / TOKENIZER_FILE).is_file():
        raise FileNotFoundError(
            f"{path} holds no {TOKENIZER_FILE}: expected a folder written by "
            "save_pretrained (rebuild the default one with training/build_tokenizer.py)"
        )
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(path))
    vocabulary = tokenizer.get_vocab()
    missing = [token for token in SPECIAL_TOKENS if token not in vocabulary]
    if missing:
        raise ValueError(
            f"{path / TOKENIZER_FILE}: special tokens {missing} are not in the vocabulary"
        )
    return tokenizer


def default_tokenizer() -> PreTrainedTokenizerFast:
    """The tokenizer shipped with the package (no network needed)."""
    return load_tokenizer(DEFAULT_TOKENIZER_DIR)
