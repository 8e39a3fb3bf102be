"""Backbones the policy can wrap, and the default small ones for training from scratch.

Two kinds of `transformers` model serve as the policy's language model:

- decoder-only (Qwen2, Qwen3, Llama; `AutoModelForCausalLM`): the matrix prefix is
  placed in front of the code tokens;
- encoder-decoder (T5, which CodeT5 is; `AutoModelForSeq2SeqLM`): the matrix prefix is
  the encoder's input and the decoder writes the code.

`default_config` gives the architectures trained from scratch in this project, sized so
that a bf16 checkpoint stays under 25 MB with the shipped 8192-token tokenizer.
"""

from __future__ import annotations

from pathlib import Path

from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    PretrainedConfig,
    PreTrainedModel,
    Qwen3Config,
    T5Config,
)

DECODER_ONLY_TYPES = ("qwen2", "qwen3", "llama")
ENCODER_DECODER_TYPES = ("t5",)
DEFAULT_KINDS = ("qwen", "t5")


def check_supported(config: PretrainedConfig) -> None:
    """Raise ValueError unless `config` is a backbone type the policy knows how to drive."""
    if config.model_type not in DECODER_ONLY_TYPES + ENCODER_DECODER_TYPES:
        raise ValueError(
            f"unsupported backbone type {config.model_type!r}: expected a decoder-only "
            f"{DECODER_ONLY_TYPES} or an encoder-decoder {ENCODER_DECODER_TYPES} model"
        )


def _auto_class(config: PretrainedConfig):
    check_supported(config)
    return AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM


def build_backbone(config: PretrainedConfig) -> PreTrainedModel:
    """A randomly initialised language model with the architecture `config` describes."""
    return _auto_class(config).from_config(config)


def load_backbone(path: str | Path) -> PreTrainedModel:
    """The pretrained language model saved in the local folder `path` (never downloads).

    Raises:
        FileNotFoundError: `path` is not a folder with a config.json.
        ValueError: the checkpoint is not a supported backbone type.
    """
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a model folder: it has no config.json")
    config = AutoConfig.from_pretrained(path, local_files_only=True)
    return _auto_class(config).from_pretrained(path, local_files_only=True)


def default_config(kind: str, vocab_size: int = 8192) -> PretrainedConfig:
    """The backbone architecture for training from scratch: "qwen" or "t5".

    - "qwen": a Qwen3 decoder, hidden 384, 6 layers, 6 query / 2 key-value heads of
      width 64, MLP width 768, tied input/output embeddings, 4096 positions.
      About 10.8M parameters at vocab 8192.
    - "t5": a CodeT5-like (T5 v1.0, ReLU) encoder-decoder, width 256, 6 + 6 layers,
      4 heads of width 64, feed-forward width 768, tied embeddings.
      About 11.5M parameters at vocab 8192.

    `vocab_size` must match the tokenizer (`len(tokenizer)`); special token ids are set
    by the policy from its tokenizer.
    """
    if kind == "qwen":
        return Qwen3Config(
            vocab_size=vocab_size,
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=6,
            num_key_value_heads=2,
            head_dim=64,
            intermediate_size=768,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
        )
    if kind == "t5":
        return T5Config(
            vocab_size=vocab_size,
            d_model=256,
            d_kv=64,
            num_heads=4,
            d_ff=768,
            num_layers=6,
            num_decoder_layers=6,
            feed_forward_proj="relu",
            tie_word_embeddings=True,
        )
    raise ValueError(f"unknown default backbone {kind!r}; expected one of {DEFAULT_KINDS}")
