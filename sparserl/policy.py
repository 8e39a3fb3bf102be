"""The SparseRL policy: a language model that reads a sparse matrix and writes a CUDA kernel.

One *task* is a matrix, an operation (SpMV, or SpMM with N columns of B) and an
optional text prompt. The model sees it as a sequence of embeddings, the
*conditioning*, and writes code tokens after it:

    [prompt tokens]  <matrix>  [feature tokens] [one embedding per nonzero]  <spmv> | <spmm> N
    └─ token embeddings ──────┘└──────── MatrixEncoder ─────────────────────┘└─ token embeddings ┘

    decoder-only (Qwen2/Qwen3/Llama):  conditioning, code tokens, <eos>  in one causal sequence
    encoder-decoder (T5, CodeT5):      conditioning -> encoder;  decoder writes code tokens, <eos>

Nonzeros beyond `max_nonzeros` are sampled (`sparserl.sampling`). A batch of tasks is
left-padded so that every conditioning ends in the same column; continuations are
right-padded after it. Position ids follow the attention mask, exactly as in
`transformers`' generate, so `log_probs` scores a generated sample as generation did.

`SparseRLPolicy` adds the language-model uses (SFT loss, log-probs for PPO, generation
with the streaming syntax checker); `SparseRLValueModel` puts a scalar head on the same
body for PPO's critic. Both save to and load from one folder (see `save_pretrained`).
"""

from __future__ import annotations

import copy
import json
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import scipy.sparse
import torch
import torch.nn.functional as F
from peft import LoraConfig, TaskType, get_peft_model
from safetensors.torch import load_model, save_model
from torch import nn
from transformers import (
    AutoConfig,
    AutoTokenizer,
    GenerationConfig,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteriaList,
)
from transformers.utils import ModelOutput

from sparserl.embedding import ENCODINGS, MatrixEncoder, feature_vector
from sparserl.features import matrix_features
from sparserl.model_configs import build_backbone, check_supported, load_backbone
from sparserl.sampling import sample_coordinates
from sparserl.syntax import SyntaxVerdict, check, extract_code
from sparserl.syntax_stopping import SyntaxStoppingCriteria
from sparserl.tokenizer import (
    EOS_TOKEN,
    MATRIX_TOKEN,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    SPMM_TOKEN,
    SPMV_TOKEN,
    default_tokenizer,
    load_tokenizer,
)

OPS = ("spmv", "spmm")
META_FILE = "sparserl.json"  # kind, dtype and SparseRLPolicyConfig
WEIGHTS_FILE = "sparserl_model.safetensors"  # backbone, matrix encoder (and value head)


def all_feature_names() -> list[str]:
    """Names of every feature `sparserl.features.matrix_features` computes, in its order."""
    return list(matrix_features(scipy.sparse.csr_array((1, 1))))


# --------------------------------------------------------------------------- configuration


@dataclass
class LoraSettings:
    """LoRA adapters on the backbone (through `peft`); the backbone's own weights freeze.

    `target_modules=None` takes peft's default for the backbone type (the attention query
    and value projections). `trainable_token_ids` are rows of the token embedding that
    train alongside the adapters: `from_backbone` fills in the sparserl tokens it had to
    add to a pretrained tokenizer, whose embeddings would otherwise stay random.
    """

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] | None = None
    trainable_token_ids: list[int] = field(default_factory=list)

    def peft_config(self, is_encoder_decoder: bool) -> LoraConfig:
        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=self.target_modules,
            trainable_token_indices=self.trainable_token_ids or None,
            task_type=TaskType.SEQ_2_SEQ_LM if is_encoder_decoder else TaskType.CAUSAL_LM,
        )


@dataclass
class SparseRLPolicyConfig:
    """Everything about the policy that is not the backbone's own configuration.

    Attributes:
        index_dim: width of the sinusoidal encoding of one index (the prefix adapter
            reads 2 * index_dim numbers per nonzero).
        encoding: "sinusoidal" (the paper), or the "raw" / "minmax" ablations.
        max_index: the data set's largest index, for "minmax".
        max_nonzeros: at most this many nonzeros are shown; larger matrices are sampled.
        sample_seed: seed of that sampling.
        n_feature_tokens: extra prefix embeddings carrying global structure features
            (0, the paper's setting, turns them off).
        feature_names: which `matrix_features` those tokens read, in order.
        lora: LoRA settings, or None to train the whole backbone.
    """

    index_dim: int = 64
    encoding: str = "sinusoidal"
    max_index: int | None = None
    max_nonzeros: int = 1024
    sample_seed: int = 0
    n_feature_tokens: int = 0
    feature_names: list[str] = field(default_factory=all_feature_names)
    lora: LoraSettings | None = None

    def __post_init__(self):
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"unknown index encoding {self.encoding!r}; expected one of {ENCODINGS}"
            )
        if self.max_nonzeros < 1:
            raise ValueError(f"max_nonzeros must be at least 1, got {self.max_nonzeros}")
        if self.n_feature_tokens and not self.feature_names:
            raise ValueError("feature tokens need at least one feature name")
        if isinstance(self.lora, dict):
            self.lora = LoraSettings(**self.lora)


# --------------------------------------------------------------------------- tasks and results


@dataclass(frozen=True, eq=False)
class KernelTask:
    """One matrix and operation to write a kernel for, as the model will see it.

    Build it with `policy.make_task(matrix, ...)`, which samples the coordinates and
    computes the features once; reuse it across generation, log-probs and values.

    Attributes:
        rows, cols: int64 arrays (k,), the shown nonzeros in (row, column) order.
        op: "spmv" or "spmm".
        n_cols: N, the columns of B and C (SpMM only).
        prompt: optional text placed before the matrix.
        features: log-scaled structure features (float64, one per feature name), or
            None when the policy has no feature tokens.
    """

    rows: np.ndarray
    cols: np.ndarray
    op: str = "spmv"
    n_cols: int | None = None
    prompt: str | None = None
    features: np.ndarray | None = None


@dataclass
class GeneratedKernel:
    """One sample from `SparseRLPolicy.generate`.

    Attributes:
        source: the CUDA source (`extract_code` of the text).
        text: the decoded model output.
        token_ids: the generated tokens, ending with <eos> when the model finished the
            program; for PPO's `log_probs`.
        stopped_early: the streaming syntax checker stopped this sample.
        verdict: for a stopped sample, the streaming checker's verdict (its position
            counts characters of `text`); for the others `check(source)`; None when the
            syntax check was off.
    """

    source: str
    text: str
    token_ids: list[int]
    stopped_early: bool
    verdict: SyntaxVerdict | None

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)


@dataclass
class GenerationStats:
    """Where the time of one `generate_batch` call went (seconds, wall clock)."""

    total_seconds: float  # the whole call
    feed_seconds: float  # inside StreamingChecker.feed during decoding
    decode_seconds: float  # turning tokens into text for the streaming checker
    final_check_seconds: float  # check() of the samples that ran to the end
    n_sequences: int
    n_new_tokens: int  # generated tokens over all samples
    n_stopped_early: int

    @property
    def checker_share(self) -> float:
        """Fraction of the call spent in the syntax checker (streaming feed + final check)."""
        return (self.feed_seconds + self.final_check_seconds) / self.total_seconds


@dataclass
class _ContinuationBatch:
    """The backbone's output on tasks followed by given continuations."""

    outputs: ModelOutput
    first: int  # sequence position whose output predicts continuation token 0
    token_ids: torch.Tensor  # (B, T) int64, padded with <pad>
    mask: torch.Tensor  # (B, T) bool, True on real tokens

    def at_continuation(self, per_position: torch.Tensor) -> torch.Tensor:
        """Cut (B, S, ...) per-position outputs down to the (B, T, ...) that predict the continuation."""
        return per_position[:, self.first : self.first + self.token_ids.shape[1]]


# --------------------------------------------------------------------------- shared body


class _MatrixConditionedModel(nn.Module):
    """Backbone + matrix encoder + tokenizer: the input layout and saving, shared by the
    policy and the value model."""

    kind: ClassVar[str]

    def __init__(
        self,
        backbone: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        config: SparseRLPolicyConfig,
    ):
        super().__init__()
        check_supported(backbone.config)
        self.config = config
        self.tokenizer = tokenizer
        self.token_ids = _sparserl_token_ids(tokenizer)
        n_embeddings = backbone.get_input_embeddings().num_embeddings
        if len(tokenizer) > n_embeddings:
            raise ValueError(
                f"the tokenizer has {len(tokenizer)} tokens but the backbone only {n_embeddings} "
                "embeddings (build with from_backbone, which resizes them)"
            )
        self.is_encoder_decoder = bool(backbone.config.is_encoder_decoder)
        _set_special_token_ids(backbone, self.token_ids)
        self.matrix_encoder = MatrixEncoder(
            index_dim=config.index_dim,
            hidden_size=backbone.config.hidden_size,
            encoding=config.encoding,
            max_index=config.max_index,
            n_features=len(config.feature_names) if config.n_feature_tokens else 0,
            n_feature_tokens=config.n_feature_tokens,
        )
        if config.lora is not None:
            backbone = get_peft_model(backbone, config.lora.peft_config(self.is_encoder_decoder))
        self.backbone = backbone

    @property
    def device(self) -> torch.device:
        return self.matrix_encoder.adapter.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.matrix_encoder.adapter.weight.dtype

    # ----------------------------------------------------------------------- tasks

    def make_task(
        self,
        matrix: scipy.sparse.spmatrix | scipy.sparse.sparray,
        op: str = "spmv",
        n_cols: int | None = None,
        prompt: str | None = None,
    ) -> KernelTask:
        """The task of writing an `op` kernel for `matrix` (sampled to `max_nonzeros`)."""
        if not scipy.sparse.issparse(matrix):
            raise TypeError(f"expected a scipy.sparse matrix, got {type(matrix).__name__}")
        if op not in OPS:
            raise ValueError(f"unknown operation {op!r}; expected one of {OPS}")
        if op == "spmm" and (n_cols is None or n_cols < 1):
            raise ValueError(f"spmm needs n_cols >= 1 (the columns of B), got {n_cols}")
        if op == "spmv" and n_cols is not None:
            raise ValueError(f"n_cols is for spmm only, got n_cols={n_cols} with spmv")
        rows, cols = sample_coordinates(matrix, self.config.max_nonzeros, self.config.sample_seed)
        features = None
        if self.config.n_feature_tokens:
            features = feature_vector(matrix_features(matrix), self.config.feature_names)
        return KernelTask(
            rows=rows, cols=cols, op=op, n_cols=n_cols, prompt=prompt, features=features
        )

    def code_token_ids(self, code: str) -> list[int]:
        """The token ids of `code` followed by <eos>: the continuation the model should write."""
        return self._text_ids(code) + [self.token_ids[EOS_TOKEN]]

    # ----------------------------------------------------------------------- input layout

    def _text_ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _embed_tokens(self, token_ids: list[int]) -> torch.Tensor:
        ids = torch.tensor(token_ids, dtype=torch.long, device=self.device)
        return self.backbone.get_input_embeddings()(ids)

    def embed_task(self, task: KernelTask) -> torch.Tensor:
        """The embeddings (L, hidden) the model reads before writing code for `task`.

        In order: the prompt's tokens, <matrix>, the matrix encoder's output (feature
        tokens, then one embedding per shown nonzero), then <spmv>, or <spmm> and the
        tokens of the number N.
        """
        before = (self._text_ids(task.prompt) if task.prompt else []) + [
            self.token_ids[MATRIX_TOKEN]
        ]
        after = [self.token_ids[SPMV_TOKEN]]
        if task.op == "spmm":
            after = [self.token_ids[SPMM_TOKEN]] + self._text_ids(str(task.n_cols))
        features = None
        if task.features is not None:
            features = torch.from_numpy(task.features).to(self.device)
        prefix = self.matrix_encoder(
            torch.from_numpy(task.rows).to(self.device),
            torch.from_numpy(task.cols).to(self.device),
            features,
        )
        before_embeds = self._embed_tokens(before)
        return torch.cat((before_embeds, prefix.to(before_embeds.dtype), self._embed_tokens(after)))

    def _conditioning_batch(self, tasks: Sequence[KernelTask]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded conditionings (B, L, hidden) and their attention mask (B, L) int64."""
        if not tasks:
            raise ValueError("no tasks given")
        sequences = [self.embed_task(task) for task in tasks]
        length = max(len(sequence) for sequence in sequences)
        embeds = torch.stack([F.pad(s, (0, 0, length - len(s), 0)) for s in sequences])
        mask = torch.zeros(len(sequences), length, dtype=torch.long, device=self.device)
        for row, sequence in enumerate(sequences):
            mask[row, length - len(sequence) :] = 1
        return embeds, mask

    def _forward(
        self,
        tasks: Sequence[KernelTask],
        continuations: Sequence[Sequence[int]],
        output_hidden_states: bool = False,
    ) -> _ContinuationBatch:
        """Run the backbone on each task followed by its continuation (token ids)."""
        if len(tasks) != len(continuations):
            raise ValueError(f"got {len(tasks)} tasks but {len(continuations)} continuations")
        conditioning, conditioning_mask = self._conditioning_batch(tasks)
        width = max(len(ids) for ids in continuations)
        token_ids = torch.full(
            (len(tasks), width), self.token_ids[PAD_TOKEN], dtype=torch.long, device=self.device
        )
        mask = torch.zeros(len(tasks), width, dtype=torch.bool, device=self.device)
        for row, ids in enumerate(continuations):
            token_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = True

        if self.is_encoder_decoder:
            start = torch.full_like(token_ids[:, :1], self.token_ids[PAD_TOKEN])
            outputs = self.backbone(
                inputs_embeds=conditioning,
                attention_mask=conditioning_mask,
                decoder_input_ids=torch.cat((start, token_ids[:, :-1]), dim=1),
                output_hidden_states=output_hidden_states,
            )
            return _ContinuationBatch(outputs, 0, token_ids, mask)

        embeds = torch.cat((conditioning, self.backbone.get_input_embeddings()(token_ids)), dim=1)
        attention_mask = torch.cat((conditioning_mask, mask.long()), dim=1)
        # As transformers' generate does: positions count real tokens, padding sits at 0.
        position_ids = (attention_mask.cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
        outputs = self.backbone(
            inputs_embeds=embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            output_hidden_states=output_hidden_states,
        )
        return _ContinuationBatch(outputs, conditioning.shape[1] - 1, token_ids, mask)

    # ----------------------------------------------------------------------- saving and loading

    def save_pretrained(self, path: str | Path) -> None:
        """Write the model to the folder `path` (created if needed):

        - `sparserl.json`: the kind ("policy" or "value"), the weights' dtype and the
          SparseRLPolicyConfig (LoRA settings included);
        - `config.json`: the backbone's transformers configuration;
        - `sparserl_model.safetensors`: all weights (backbone with any LoRA adapters,
          matrix encoder, value head);
        - the tokenizer files (`tokenizer.json`, `tokenizer_config.json`).
        """
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        meta = {
            "kind": self.kind,
            "dtype": str(self.dtype).removeprefix("torch."),
            "config": asdict(self.config),
        }
        (path / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        self.backbone.config.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        save_model(self, str(path / WEIGHTS_FILE))

    @classmethod
    def from_pretrained(
        cls, path: str | Path, dtype: torch.dtype | None = None, device: str | torch.device = "cpu"
    ):
        """Load a model written by `save_pretrained` (offline), in `dtype` (default: as saved).

        Raises:
            FileNotFoundError: `path` is not a sparserl model folder.
            ValueError: the folder holds the other kind of model, or a broken configuration.
        """
        path = Path(path)
        meta_file = path / META_FILE
        if not meta_file.is_file():
            raise FileNotFoundError(f"{path} is not a sparserl model folder: it has no {META_FILE}")
        try:
            meta = json.loads(meta_file.read_text())
            config = SparseRLPolicyConfig(**meta["config"])
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(
                f"{meta_file}: not a valid sparserl model description ({error})"
            ) from error
        if meta.get("kind") != cls.kind:
            raise ValueError(
                f"{path} holds a sparserl {meta.get('kind')!r} model, not a {cls.kind!r} model"
            )
        weights_file = path / WEIGHTS_FILE
        if not weights_file.is_file():
            raise FileNotFoundError(
                f"{path} is not a complete sparserl model folder: {WEIGHTS_FILE} is missing"
            )
        backbone = build_backbone(AutoConfig.from_pretrained(path, local_files_only=True))
        model = cls(backbone, load_tokenizer(path), config)
        load_model(model, weights_file)
        return model.to(device=device, dtype=dtype or getattr(torch, meta["dtype"]))


# --------------------------------------------------------------------------- the policy


class SparseRLPolicy(_MatrixConditionedModel):
    """A matrix-conditioned language model that writes SpMV/SpMM CUDA kernels."""

    kind = "policy"

    @classmethod
    def from_backbone(
        cls,
        path_or_config: str | Path | PretrainedConfig,
        tokenizer: PreTrainedTokenizerBase | None = None,
        lora: LoraSettings | dict | None = None,
        **settings,
    ) -> SparseRLPolicy:
        """A fresh policy around a backbone; `settings` are SparseRLPolicyConfig fields.

        Args:
            path_or_config: a local checkpoint folder (CodeT5 / T5, Qwen2, Qwen3, Llama)
                whose weights are loaded, or a transformers config (e.g.
                `default_config("qwen")`) for a randomly initialised backbone.
            tokenizer: the tokenizer; default: the checkpoint's own if the folder has
                one, else `sparserl.tokenizer.default_tokenizer()`. sparserl's special
                tokens are added when missing.
            lora: LoRA settings to train adapters instead of the whole backbone.

        When the tokenizer's size differs from the backbone's embedding rows, the
        embeddings are resized with a warning.
        """
        if isinstance(path_or_config, PretrainedConfig):
            backbone = build_backbone(path_or_config)
            tokenizer = tokenizer or default_tokenizer()
        else:
            backbone = load_backbone(path_or_config)
            tokenizer = (
                tokenizer or _checkpoint_tokenizer(Path(path_or_config)) or default_tokenizer()
            )
        added_token_ids = _add_sparserl_tokens(tokenizer)
        n_embeddings = backbone.get_input_embeddings().num_embeddings
        if len(tokenizer) != n_embeddings:
            warnings.warn(
                f"the tokenizer has {len(tokenizer)} tokens but the backbone {n_embeddings} embedding "
                f"rows: resizing the embeddings to {len(tokenizer)}",
                stacklevel=2,
            )
            backbone.resize_token_embeddings(len(tokenizer))
        if isinstance(lora, dict):
            lora = LoraSettings(**lora)
        if lora is not None and added_token_ids:
            lora = replace(
                lora, trainable_token_ids=sorted({*lora.trainable_token_ids, *added_token_ids})
            )
        return cls(backbone, tokenizer, SparseRLPolicyConfig(lora=lora, **settings))

    # ----------------------------------------------------------------------- training

    def logits(
        self, tasks: Sequence[KernelTask], continuations: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Next-token logits for each continuation token: (B, T, vocab), and the (B, T) bool mask.

        `logits[b, t]` is the distribution the model predicts token t of continuation b from.
        """
        batch = self._forward(tasks, continuations)
        return batch.at_continuation(batch.outputs.logits), batch.mask

    def log_probs(
        self,
        tasks: Sequence[KernelTask],
        continuations: Sequence[Sequence[int]],
        temperature: float = 1.0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token log-probabilities of the continuations (token ids, e.g. `GeneratedKernel.token_ids`).

        Returns `(log_probs, mask)`, both (B, T) with T the longest continuation:
        float32 log p(token t | task, tokens < t) at the sampling `temperature`, 0 on
        padding; and the bool mask of real tokens.
        """
        batch = self._forward(tasks, continuations)
        logits = batch.at_continuation(batch.outputs.logits).float() / temperature
        token_log_probs = -F.cross_entropy(
            logits.transpose(1, 2), batch.token_ids, reduction="none"
        )
        return token_log_probs.masked_fill(~batch.mask, 0.0), batch.mask

    def batch_loss(self, tasks: Sequence[KernelTask], codes: Sequence[str]) -> torch.Tensor:
        """SFT loss: mean negative log-likelihood over all code tokens (and each <eos>) of the batch."""
        log_probs, mask = self.log_probs(tasks, [self.code_token_ids(code) for code in codes])
        return -log_probs.sum() / mask.sum()

    def loss(
        self,
        matrix: scipy.sparse.spmatrix | scipy.sparse.sparray,
        code: str,
        op: str = "spmv",
        n_cols: int | None = None,
        prompt: str | None = None,
    ) -> torch.Tensor:
        """SFT loss of one example: mean negative log-likelihood of `code` and <eos>."""
        return self.batch_loss([self.make_task(matrix, op, n_cols, prompt)], [code])

    # ----------------------------------------------------------------------- generation

    def generate(
        self,
        matrix: scipy.sparse.spmatrix | scipy.sparse.sparray,
        op: str = "spmv",
        n_cols: int | None = None,
        *,
        prompt: str | None = None,
        num_samples: int = 1,
        temperature: float = 1.0,
        top_k: int | None = None,
        num_beams: int = 1,
        max_new_tokens: int = 1024,
        syntax_check: bool = True,
    ) -> list[GeneratedKernel]:
        """`num_samples` kernels for one matrix; see `generate_batch` for the options."""
        kernels, _ = self.generate_batch(
            [self.make_task(matrix, op, n_cols, prompt)],
            num_samples=num_samples,
            temperature=temperature,
            top_k=top_k,
            num_beams=num_beams,
            max_new_tokens=max_new_tokens,
            syntax_check=syntax_check,
        )
        return kernels[0]

    @torch.no_grad()
    def generate_batch(
        self,
        tasks: Sequence[KernelTask],
        *,
        num_samples: int = 1,
        temperature: float = 1.0,
        top_k: int | None = None,
        num_beams: int = 1,
        max_new_tokens: int = 1024,
        syntax_check: bool = True,
    ) -> tuple[list[list[GeneratedKernel]], GenerationStats]:
        """Generate kernels for several tasks at once.

        Decoding: `num_beams > 1` is beam search returning the `num_samples` best beams;
        otherwise `temperature == 0` is greedy (one sample) and `temperature > 0`
        samples, optionally from the `top_k` most likely tokens only.

        With `syntax_check`, greedy decoding and sampling run the streaming checker on
        every sample and stop a sample once it is doomed; samples that run to the end
        (and every beam-search result, as beams are reordered while decoding) get the
        full `check()`.

        Returns `(kernels, stats)`: `kernels[i][j]` is sample j of task i.
        """
        started = time.perf_counter()
        decoding = _decoding_options(num_samples, temperature, top_k, num_beams)
        n_sequences = len(tasks) * num_samples
        criteria = None
        if syntax_check and num_beams == 1:
            criteria = SyntaxStoppingCriteria(
                self.tokenizer, n_sequences, self.token_ids[EOS_TOKEN]
            )
        with _evaluating(self):
            conditioning, mask = self._conditioning_batch(tasks)
            output = self.backbone.generate(
                inputs_embeds=conditioning,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                stopping_criteria=StoppingCriteriaList([criteria] if criteria else []),
                **decoding,
            )
        # An encoder-decoder's output starts with the decoder start token.
        generated = (output[:, 1:] if self.is_encoder_decoder else output).tolist()

        check_started = time.perf_counter()
        kernels = [
            self._finish_sample(generated[row], row, criteria, syntax_check)
            for row in range(n_sequences)
        ]
        final_check_seconds = time.perf_counter() - check_started
        stats = GenerationStats(
            total_seconds=time.perf_counter() - started,
            feed_seconds=criteria.feed_seconds if criteria else 0.0,
            decode_seconds=criteria.decode_seconds if criteria else 0.0,
            final_check_seconds=final_check_seconds,
            n_sequences=n_sequences,
            n_new_tokens=sum(kernel.n_tokens for kernel in kernels),
            n_stopped_early=sum(kernel.stopped_early for kernel in kernels),
        )
        per_task = [kernels[i * num_samples : (i + 1) * num_samples] for i in range(len(tasks))]
        return per_task, stats

    def _finish_sample(
        self,
        token_ids: list[int],
        row: int,
        criteria: SyntaxStoppingCriteria | None,
        syntax_check: bool,
    ) -> GeneratedKernel:
        """Trim one generated row to its real tokens, decode it and attach its verdict."""
        eos = self.token_ids[EOS_TOKEN]
        length = token_ids.index(eos) + 1 if eos in token_ids else len(token_ids)
        doomed_at = criteria.doomed_at[row] if criteria else None
        if doomed_at is not None:
            length = min(length, doomed_at + 1)
        token_ids = token_ids[:length]
        text = self.tokenizer.decode(
            token_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        source = extract_code(text)
        if doomed_at is not None:
            verdict = criteria.verdicts[row]
        else:
            verdict = check(source) if syntax_check else None
        return GeneratedKernel(
            source=source,
            text=text,
            token_ids=token_ids,
            stopped_early=doomed_at is not None,
            verdict=verdict,
        )


# --------------------------------------------------------------------------- the value model


class SparseRLValueModel(_MatrixConditionedModel):
    """The policy's body with a scalar head: PPO's critic, one value per continuation token.

    The head starts at zero, so a fresh critic predicts 0 everywhere.
    """

    kind = "value"

    def __init__(
        self,
        backbone: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        config: SparseRLPolicyConfig,
    ):
        super().__init__(backbone, tokenizer, config)
        self.value_head = nn.Linear(self.backbone.config.hidden_size, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    @classmethod
    def from_policy(cls, policy: SparseRLPolicy) -> SparseRLValueModel:
        """A value model whose backbone and matrix encoder start as copies of `policy`'s."""
        backbone = build_backbone(copy.deepcopy(policy.backbone.config))
        value_model = cls(backbone, policy.tokenizer, copy.deepcopy(policy.config))
        missing, unexpected = value_model.load_state_dict(policy.state_dict(), strict=False)
        head_only = {name for name in value_model.state_dict() if name.startswith("value_head.")}
        if set(missing) != head_only or unexpected:
            raise RuntimeError(
                f"policy and value model do not match: missing {sorted(set(missing) - head_only)}, "
                f"unexpected {unexpected}"
            )
        return value_model.to(device=policy.device, dtype=policy.dtype)

    def values(
        self, tasks: Sequence[KernelTask], continuations: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token values: (B, T) float32, 0 on padding, and the (B, T) bool mask.

        `values[b, t]` is the value of the state in which token t of continuation b is
        about to be written (the same position whose logits `log_probs` scores).
        """
        batch = self._forward(tasks, continuations, output_hidden_states=True)
        outputs = batch.outputs
        hidden = (
            outputs.decoder_hidden_states[-1]
            if self.is_encoder_decoder
            else outputs.hidden_states[-1]
        )
        values = self.value_head(batch.at_continuation(hidden)).squeeze(-1).float()
        return values.masked_fill(~batch.mask, 0.0), batch.mask


# --------------------------------------------------------------------------- helpers


def _sparserl_token_ids(tokenizer: PreTrainedTokenizerBase) -> dict[str, int]:
    """The ids of sparserl's special tokens; ValueError if the tokenizer lacks any."""
    vocabulary = tokenizer.get_vocab()
    missing = [token for token in SPECIAL_TOKENS if token not in vocabulary]
    if missing:
        raise ValueError(
            f"the tokenizer lacks the sparserl tokens {missing} (from_backbone adds them)"
        )
    return {token: vocabulary[token] for token in SPECIAL_TOKENS}


def _add_sparserl_tokens(tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Add sparserl's special tokens the tokenizer lacks; return the ids of those added."""
    missing = [token for token in SPECIAL_TOKENS if token not in tokenizer.get_vocab()]
    tokenizer.add_tokens(missing, special_tokens=True)
    return tokenizer.convert_tokens_to_ids(missing)


def _checkpoint_tokenizer(path: Path) -> PreTrainedTokenizerBase | None:
    """The tokenizer saved in a checkpoint folder, or None if it has none."""
    if not (path / "tokenizer.json").is_file() and not (path / "tokenizer_config.json").is_file():
        return None
    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def _set_special_token_ids(backbone: PreTrainedModel, token_ids: dict[str, int]) -> None:
    """Point the backbone's config and generation defaults at sparserl's <pad> and <eos>.

    The generation config is replaced, so a checkpoint's own sampling defaults (top-k,
    temperature, ...) never silently apply.
    """
    pad, eos = token_ids[PAD_TOKEN], token_ids[EOS_TOKEN]
    backbone.config.pad_token_id = pad
    backbone.config.eos_token_id = eos
    generation = {"pad_token_id": pad, "eos_token_id": eos}
    if backbone.config.is_encoder_decoder:
        backbone.config.decoder_start_token_id = pad  # T5's convention
        generation["decoder_start_token_id"] = pad
    backbone.generation_config = GenerationConfig(**generation)


def _decoding_options(
    num_samples: int, temperature: float, top_k: int | None, num_beams: int
) -> dict:
    """The `transformers` generate arguments for the requested decoding."""
    if num_samples < 1:
        raise ValueError(f"num_samples must be at least 1, got {num_samples}")
    if num_beams > 1:
        if num_samples > num_beams:
            raise ValueError(
                f"beam search returns at most num_beams={num_beams} samples, asked {num_samples}"
            )
        return {"do_sample": False, "num_beams": num_beams, "num_return_sequences": num_samples}
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        if num_samples != 1:
            raise ValueError(
                f"greedy decoding (temperature 0) gives one sample, asked {num_samples}"
            )
        return {"do_sample": False}
    return {
        "do_sample": True,
        "temperature": temperature,
        "top_k": top_k,
        "num_return_sequences": num_samples,
    }


@contextmanager
def _evaluating(module: nn.Module) -> Iterator[None]:
    """Put `module` in eval mode (no dropout) for the block, then restore its mode."""
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)
