"""SparseRLPolicy and SparseRLValueModel on tiny random-initialised backbones of both kinds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse
import torch
from tiny_models import tiny_config
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

from sparserl.kernels import all_variant_sources
from sparserl.model_configs import default_config
from sparserl.policy import (
    LoraSettings,
    SparseRLPolicy,
    SparseRLValueModel,
    all_feature_names,
)
from sparserl.syntax import StreamingChecker, check, extract_code
from sparserl.syntax_stopping import IncrementalDecoder, SyntaxStoppingCriteria
from sparserl.tokenizer import (
    MATRIX_TOKEN,
    SPECIAL_TOKENS,
    SPMM_TOKEN,
    SPMV_TOKEN,
    default_tokenizer,
)

VOCAB = len(default_tokenizer())
KINDS = ["qwen", "t5"]
CODE = """/*@sparserl
op: spmv
format: csr
grid: ceil_div(m, 128)
block: 128
*/
extern "C" __global__ void sparserl_kernel(const int* row_ptr, const int* col_idx,
    const float* values, const float* x, float* y, int m, int n, int nnz) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < m) {
    float sum = 0.0f;
    for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += values[k] * x[col_idx[k]];
    y[row] = sum;
  }
}
"""


def tiny_policy(kind: str, **settings) -> SparseRLPolicy:
    torch.manual_seed(0)
    settings.setdefault("index_dim", 16)
    settings.setdefault("max_nonzeros", 48)
    return SparseRLPolicy.from_backbone(tiny_config(kind), **settings).eval()


def random_matrix(rows: int, cols: int, density: float, seed: int) -> scipy.sparse.csr_array:
    return scipy.sparse.random_array((rows, cols), density=density, rng=seed, format="csr")


@pytest.fixture(scope="module")
def matrices():
    return [random_matrix(30, 30, 0.04, seed=1), random_matrix(60, 50, 0.05, seed=2)]


# --------------------------------------------------------------------------- input layout


@pytest.mark.parametrize("kind", KINDS)
def test_prefix_is_marker_nonzeros_and_op(kind, matrices):
    policy = tiny_policy(kind)
    A = matrices[0]
    task = policy.make_task(A)
    assert len(task.rows) == A.nnz  # small: every nonzero is shown
    embeds = policy.embed_task(task)
    assert embeds.shape == (1 + A.nnz + 1, 32)
    token_embedding = policy.backbone.get_input_embeddings()
    ids = policy.tokenizer.convert_tokens_to_ids([MATRIX_TOKEN, SPMV_TOKEN, SPMM_TOKEN])
    torch.testing.assert_close(embeds[0], token_embedding.weight[ids[0]])
    torch.testing.assert_close(embeds[-1], token_embedding.weight[ids[1]])
    rows, cols = torch.from_numpy(task.rows), torch.from_numpy(task.cols)
    torch.testing.assert_close(embeds[1:-1], policy.matrix_encoder(rows, cols))

    # SpMM: <spmm> then the digits of N.
    spmm = policy.embed_task(policy.make_task(A, "spmm", n_cols=128))
    n_digit_tokens = len(policy.tokenizer("128", add_special_tokens=False)["input_ids"])
    assert len(spmm) == 1 + A.nnz + 1 + n_digit_tokens
    torch.testing.assert_close(spmm[1 + A.nnz], token_embedding.weight[ids[2]])


@pytest.mark.parametrize("kind", KINDS)
def test_prompt_goes_first_and_large_matrices_are_sampled(kind, matrices):
    policy = tiny_policy(kind, max_nonzeros=40)
    A = matrices[1]
    assert A.nnz > 40
    prompt = "Write a fast kernel."
    prompt_ids = policy.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    task = policy.make_task(A, prompt=prompt)
    assert len(task.rows) <= 40
    embeds = policy.embed_task(task)
    assert len(embeds) == len(prompt_ids) + 1 + len(task.rows) + 1
    torch.testing.assert_close(
        embeds[: len(prompt_ids)], policy.backbone.get_input_embeddings().weight[prompt_ids]
    )


@pytest.mark.parametrize("kind", KINDS)
def test_feature_tokens_extend_the_prefix(kind, matrices):
    policy = tiny_policy(kind, n_feature_tokens=3)
    A = matrices[0]
    task = policy.make_task(A)
    assert task.features.shape == (len(all_feature_names()),)
    assert len(policy.embed_task(task)) == 1 + 3 + A.nnz + 1


@pytest.mark.parametrize("kind", KINDS)
def test_the_model_reads_the_matrix(kind, matrices):
    policy = tiny_policy(kind)
    code_ids = [policy.code_token_ids(CODE)[:20]]
    with torch.no_grad():
        first, _ = policy.log_probs([policy.make_task(matrices[0])], code_ids)
        moved = matrices[0].tolil()
        moved[0, 0], moved[29, 29] = 0.0, 1.0
        second, _ = policy.log_probs([policy.make_task(moved.tocsr())], code_ids)
    assert not torch.allclose(first, second)


def test_make_task_rejects_bad_requests(matrices):
    policy = tiny_policy("qwen")
    with pytest.raises(ValueError, match="n_cols"):
        policy.make_task(matrices[0], "spmm")
    with pytest.raises(ValueError, match="spmm only"):
        policy.make_task(matrices[0], "spmv", n_cols=4)
    with pytest.raises(ValueError, match="unknown operation"):
        policy.make_task(matrices[0], "sddmm")
    with pytest.raises(TypeError, match="scipy.sparse"):
        policy.make_task(np.eye(3))


# --------------------------------------------------------------------------- training


@pytest.mark.parametrize("kind", KINDS)
def test_loss_is_finite_and_decreases_with_training(kind, matrices):
    policy = tiny_policy(kind).train()
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    losses = []
    for _ in range(6):
        loss = policy.loss(matrices[0], CODE)
        assert torch.isfinite(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(np.log(VOCAB), rel=0.1)  # untrained: near uniform
    assert losses[-1] < losses[0] - 0.5
    assert policy.matrix_encoder.adapter.weight.grad is not None


@pytest.mark.parametrize("kind", KINDS)
def test_batching_pads_without_changing_results(kind, matrices):
    policy = tiny_policy(kind)
    tasks = [policy.make_task(matrices[0]), policy.make_task(matrices[1], "spmm", n_cols=8)]
    continuations = [policy.code_token_ids(CODE), policy.code_token_ids(CODE[:80])]
    with torch.no_grad():
        together, mask = policy.log_probs(tasks, continuations)
        for row in range(2):
            alone, _ = policy.log_probs(tasks[row : row + 1], continuations[row : row + 1])
            n = len(continuations[row])
            torch.testing.assert_close(together[row, :n], alone[0], atol=1e-5, rtol=1e-5)
            assert mask[row].sum() == n and not together[row, n:].any()
        loss = policy.batch_loss(tasks, [CODE, CODE[:80]])
    torch.testing.assert_close(loss, -together.sum() / mask.sum())


@pytest.mark.parametrize("kind", KINDS)
def test_log_probs_score_what_greedy_generation_chose(kind, matrices):
    policy = tiny_policy(kind)
    tasks = [policy.make_task(matrices[0]), policy.make_task(matrices[1])]
    kernels, _ = policy.generate_batch(tasks, temperature=0, max_new_tokens=12, syntax_check=False)
    continuations = [kernels[0][0].token_ids, kernels[1][0].token_ids]
    with torch.no_grad():
        logits, mask = policy.logits(tasks, continuations)
        log_probs, _ = policy.log_probs(tasks, continuations)
    for row, ids in enumerate(continuations):
        n = len(ids)
        assert logits[row, :n].argmax(-1).tolist() == ids
        expected = torch.log_softmax(logits[row, :n].float(), -1).max(-1).values
        torch.testing.assert_close(log_probs[row, :n], expected, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- generation


@pytest.mark.parametrize("kind", KINDS)
def test_syntax_checker_stops_garbage_early(kind, matrices):
    policy = tiny_policy(kind)
    torch.manual_seed(1)
    max_new_tokens = 40
    kernels, stats = policy.generate_batch(
        [policy.make_task(matrices[0]), policy.make_task(matrices[1], "spmm", n_cols=16)],
        num_samples=3,
        max_new_tokens=max_new_tokens,
    )
    samples = [kernel for per_task in kernels for kernel in per_task]
    assert len(kernels) == 2 and all(len(per_task) == 3 for per_task in kernels)
    stopped = [kernel for kernel in samples if kernel.stopped_early]
    assert stopped, "a random model's output should be doomed early"
    assert stats.n_stopped_early == len(stopped) and stats.n_sequences == 6
    assert stats.feed_seconds > 0 and 0 < stats.checker_share < 1
    for kernel in samples:
        assert kernel.verdict is not None and not kernel.verdict.ok
        assert kernel.source == extract_code(kernel.text)
        assert kernel.n_tokens <= max_new_tokens
    for kernel in stopped:
        assert kernel.verdict.reason
        # A fresh checker fed the sample's text dooms it at the same place: the streamed
        # text was exactly the decoded output, and generation stopped right there.
        verdict = StreamingChecker().feed(kernel.text)
        assert verdict is not None and verdict.position == kernel.verdict.position
    for kernel in samples:
        if not kernel.stopped_early:
            assert kernel.verdict == check(kernel.source)


def test_streaming_check_accepts_expert_kernels_token_by_token():
    # The stopping criterion must never stop a valid program: feed expert kernels to it
    # one token at a time, as generation does, over a batch of two rows.
    tokenizer = default_tokenizer()
    for source in itertools.islice(all_variant_sources(), 0, None, 15):
        ids = torch.tensor(tokenizer(source, add_special_tokens=False)["input_ids"]).repeat(2, 1)
        criteria = SyntaxStoppingCriteria(tokenizer, 2, tokenizer.eos_token_id)
        for step in range(ids.shape[1]):
            assert not criteria(ids[:, : step + 1], None).any(), criteria.verdicts
        decoder = IncrementalDecoder(tokenizer)
        streamed = "".join(decoder.push(token_id) for token_id in ids[0].tolist())
        assert streamed == source
        assert criteria.checkers[0].finish().ok


@pytest.mark.parametrize("kind", KINDS)
def test_generation_without_checker_and_with_beams(kind, matrices):
    policy = tiny_policy(kind)
    unchecked = policy.generate(matrices[0], num_samples=2, max_new_tokens=10, syntax_check=False)
    assert all(k.verdict is None and not k.stopped_early and k.n_tokens <= 10 for k in unchecked)
    beams = policy.generate(matrices[0], num_beams=3, num_samples=2, max_new_tokens=10)
    assert len(beams) == 2
    assert all(not k.stopped_early and k.verdict == check(k.source) for k in beams)
    with pytest.raises(ValueError, match="num_beams"):
        policy.generate(matrices[0], num_beams=2, num_samples=3)
    with pytest.raises(ValueError, match="greedy"):
        policy.generate(matrices[0], temperature=0, num_samples=2)


# --------------------------------------------------------------------------- saving


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_give_identical_outputs(kind, matrices, tmp_path):
    policy = tiny_policy(kind, n_feature_tokens=2)
    policy.save_pretrained(tmp_path)
    loaded = SparseRLPolicy.from_pretrained(tmp_path).eval()
    assert loaded.config == policy.config
    tasks = [policy.make_task(matrices[1], "spmm", n_cols=32)]
    continuation = [policy.code_token_ids(CODE)]
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.logits(tasks, continuation)[0], policy.logits(tasks, continuation)[0]
        )
    greedy = policy.generate(matrices[0], temperature=0, max_new_tokens=12, syntax_check=False)
    again = loaded.generate(matrices[0], temperature=0, max_new_tokens=12, syntax_check=False)
    assert greedy[0].token_ids == again[0].token_ids

    with pytest.raises(ValueError, match="not a 'value' model"):
        SparseRLValueModel.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a sparserl model folder"):
        SparseRLPolicy.from_pretrained(tmp_path / "missing")


def test_bf16_checkpoint_keeps_its_dtype(matrices, tmp_path):
    policy = tiny_policy("qwen").to(torch.bfloat16)
    policy.save_pretrained(tmp_path)
    loaded = SparseRLPolicy.from_pretrained(tmp_path)
    assert loaded.dtype == torch.bfloat16
    for (name, saved), (_, restored) in zip(
        policy.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert torch.equal(saved, restored), name
    assert SparseRLPolicy.from_pretrained(tmp_path, dtype=torch.float32).dtype == torch.float32


@pytest.mark.parametrize("kind", KINDS)
def test_default_configs_fit_in_25_megabytes_as_bf16(kind, tmp_path):
    policy = SparseRLPolicy.from_backbone(default_config(kind, vocab_size=VOCAB))
    n_parameters = sum(p.numel() for p in {id(p): p for p in policy.parameters()}.values())
    assert n_parameters * 2 < 25e6
    policy.to(torch.bfloat16).save_pretrained(tmp_path)
    assert (tmp_path / "sparserl_model.safetensors").stat().st_size < 25e6


# --------------------------------------------------------------------------- pretrained checkpoints and LoRA


def foreign_tokenizer() -> PreTrainedTokenizerFast:
    """A tokenizer like a pretrained checkpoint's own: none of sparserl's special tokens."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["[PAD]", "[UNK]"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([CODE] * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]")


@pytest.fixture
def checkpoint(tmp_path):
    """A 'pretrained' Qwen3 checkpoint folder with its own tokenizer, as downloaded ones are."""
    tokenizer = foreign_tokenizer()
    torch.manual_seed(3)
    model = AutoModelForCausalLM.from_config(tiny_config("qwen", vocab_size=len(tokenizer)))
    folder = tmp_path / "checkpoint"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model


def test_from_checkpoint_loads_weights_and_adds_tokens(checkpoint):
    folder, model = checkpoint
    with pytest.warns(UserWarning, match="resizing the embeddings"):
        policy = SparseRLPolicy.from_backbone(folder, index_dim=8)
    vocabulary = policy.tokenizer.get_vocab()
    assert all(token in vocabulary for token in SPECIAL_TOKENS)
    assert policy.backbone.get_input_embeddings().num_embeddings == len(policy.tokenizer)
    layer = policy.backbone.model.layers[1].mlp.down_proj.weight
    torch.testing.assert_close(layer, model.model.layers[1].mlp.down_proj.weight)


@pytest.mark.parametrize("kind", KINDS)
def test_lora_trains_only_adapters_and_round_trips(kind, matrices, tmp_path):
    torch.manual_seed(0)
    policy = SparseRLPolicy.from_backbone(
        tiny_config(kind), lora=LoraSettings(r=4, alpha=8), index_dim=8
    )
    trainable = {name for name, p in policy.named_parameters() if p.requires_grad}
    assert trainable and all(
        "lora_" in name or name.startswith("matrix_encoder.") for name in trainable
    )
    assert any("lora_" in name for name in trainable)

    frozen_before = {
        name: p.detach().clone() for name, p in policy.named_parameters() if not p.requires_grad
    }
    optimizer = torch.optim.Adam([p for p in policy.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(2):
        optimizer.zero_grad()
        policy.loss(matrices[0], CODE).backward()
        optimizer.step()
    for name, p in policy.named_parameters():
        if not p.requires_grad:
            assert torch.equal(p, frozen_before[name]), name

    policy.eval().save_pretrained(tmp_path)
    loaded = SparseRLPolicy.from_pretrained(tmp_path).eval()
    assert loaded.config.lora == policy.config.lora
    assert {name for name, p in loaded.named_parameters() if p.requires_grad} == trainable
    tasks, continuation = [policy.make_task(matrices[0])], [policy.code_token_ids(CODE)]
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.logits(tasks, continuation)[0], policy.logits(tasks, continuation)[0]
        )


def test_lora_on_a_checkpoint_trains_the_added_token_embeddings(checkpoint):
    folder, _ = checkpoint
    with pytest.warns(UserWarning, match="resizing"):
        policy = SparseRLPolicy.from_backbone(folder, lora={"r": 4}, index_dim=8)
    added = policy.tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS)
    assert sorted(policy.config.lora.trainable_token_ids) == sorted(added)
    trainable = [name for name, p in policy.named_parameters() if p.requires_grad]
    assert any("trainable_tokens" in name for name in trainable)


# --------------------------------------------------------------------------- the value model


@pytest.mark.parametrize("kind", KINDS)
def test_value_model_starts_from_the_policy(kind, matrices, tmp_path):
    policy = tiny_policy(kind)
    critic = SparseRLValueModel.from_policy(policy).eval()
    policy_weights = policy.state_dict()
    for name, tensor in critic.state_dict().items():
        if not name.startswith("value_head."):
            assert torch.equal(tensor, policy_weights[name]), name

    tasks = [policy.make_task(matrices[0]), policy.make_task(matrices[1])]
    continuations = [policy.code_token_ids(CODE[:50]), policy.code_token_ids(CODE)]
    values, mask = critic.values(tasks, continuations)
    assert values.shape == mask.shape == (2, len(continuations[1]))
    assert not values.any()  # the head starts at zero

    torch.nn.init.normal_(critic.value_head.weight)
    with torch.no_grad():
        values, mask = critic.values(tasks, continuations)
    assert values[mask].std() > 0 and not values[~mask].any()

    critic.save_pretrained(tmp_path)
    loaded = SparseRLValueModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded.values(tasks, continuations)[0], values)
    with pytest.raises(ValueError, match="not a 'policy' model"):
        SparseRLPolicy.from_pretrained(tmp_path)


def test_value_model_of_a_lora_policy_keeps_the_adapters(matrices):
    torch.manual_seed(0)
    policy = SparseRLPolicy.from_backbone(tiny_config("qwen"), lora=LoraSettings(r=4), index_dim=8)
    critic = SparseRLValueModel.from_policy(policy)
    trainable = {name for name, p in critic.named_parameters() if p.requires_grad}
    assert {"value_head.weight", "value_head.bias"} <= trainable
    assert all("lora_" in n or n.startswith(("matrix_encoder.", "value_head.")) for n in trainable)
