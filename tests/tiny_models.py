"""Tiny backbone configurations for CPU tests: the real code paths, two layers of width 32."""

from transformers import Qwen3Config, T5Config

from sparserl.tokenizer import default_tokenizer


def tiny_config(kind: str, vocab_size: int | None = None):
    """A two-layer "qwen" (Qwen3) or "t5" backbone config; vocabulary of the default tokenizer."""
    vocab_size = vocab_size or len(default_tokenizer())
    if kind == "qwen":
        return Qwen3Config(
            vocab_size=vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            intermediate_size=64,
            tie_word_embeddings=False,
        )
    return T5Config(
        vocab_size=vocab_size,
        d_model=32,
        d_kv=16,
        num_heads=2,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
    )
