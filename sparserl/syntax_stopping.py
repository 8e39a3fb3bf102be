"""Stopping doomed samples during generation with the streaming syntax checker.

`SyntaxStoppingCriteria` is a `transformers.StoppingCriteria` that keeps one
`sparserl.syntax.StreamingChecker` per generated sequence. After every decoding step
it decodes each running sequence's new token to text (`IncrementalDecoder`), feeds
that text to the sequence's checker, and reports the sequence as finished as soon as
the checker says the source can no longer become valid. `transformers` then stops
extending that sequence, so no more compute goes into a sample that will fail.

It relies on row i of `input_ids` being the same sequence at every step, which holds
for greedy decoding and sampling but not for beam search (beams are reordered), so the
policy uses it only for the former. Time spent in `feed()` and in decoding is recorded,
so the checker's share of generation time can be reported.
"""

from __future__ import annotations

import time

import torch
from transformers import PreTrainedTokenizerBase, StoppingCriteria

from sparserl.syntax import StreamingChecker, SyntaxVerdict


class IncrementalDecoder:
    """Turns a stream of token ids into a stream of text, one token at a time.

    Decoding one token alone can be wrong: a byte-level token may hold half of a UTF-8
    character, and some tokenizers drop a leading space at the start of a decode. So the
    new text is found by decoding a short window of recent tokens with and without the
    new ones; text is held back while it ends in an incomplete character.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        self.tokenizer = tokenizer
        self.token_ids: list[int] = []
        self.prefix_offset = 0  # start of the context window
        self.read_offset = 0  # tokens before this one have been emitted as text

    def _decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(
            token_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )

    def push(self, token_id: int) -> str:
        """Add one token; return the text it completes (possibly empty)."""
        self.token_ids.append(token_id)
        emitted = self._decode(self.token_ids[self.prefix_offset : self.read_offset])
        extended = self._decode(self.token_ids[self.prefix_offset :])
        if len(extended) <= len(emitted) or extended.endswith("\ufffd"):
            return ""
        self.prefix_offset = self.read_offset
        self.read_offset = len(self.token_ids)
        return extended[len(emitted) :]


class SyntaxStoppingCriteria(StoppingCriteria):
    """Per-sequence streaming syntax check; stops each sequence once it is doomed.

    Args:
        tokenizer: the policy's tokenizer, to turn tokens into text.
        n_sequences: rows of the generation batch (tasks × samples per task).
        eos_token_id: the end-of-code token; a sequence that emits it is not fed further.
        require_abi: passed to each `StreamingChecker`.

    After generation, `doomed_at[i]` is the 0-based step whose token doomed sequence i
    (None if it was not doomed) and `verdicts[i]` the checker's verdict for it.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        n_sequences: int,
        eos_token_id: int,
        require_abi: bool = True,
    ):
        self.eos_token_id = eos_token_id
        self.checkers = [StreamingChecker(require_abi=require_abi) for _ in range(n_sequences)]
        self.decoders = [IncrementalDecoder(tokenizer) for _ in range(n_sequences)]
        self.done = [False] * n_sequences
        self.doomed_at: list[int | None] = [None] * n_sequences
        self.verdicts: list[SyntaxVerdict | None] = [None] * n_sequences
        self.step = -1
        self.feed_seconds = 0.0  # total time inside StreamingChecker.feed
        self.decode_seconds = 0.0  # total time turning tokens into text

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        """Feed each running sequence's newest token; True for the sequences that are doomed."""
        self.step += 1
        newest = input_ids[:, -1].tolist()
        for row, token_id in enumerate(newest):
            if self.done[row]:
                continue
            if token_id == self.eos_token_id:
                self.done[row] = True
                continue
            started = time.perf_counter()
            text = self.decoders[row].push(token_id)
            fed = time.perf_counter()
            verdict = self.checkers[row].feed(text) if text else None
            self.decode_seconds += fed - started
            self.feed_seconds += time.perf_counter() - fed
            if verdict is not None and not verdict.ok:
                self.done[row] = True
                self.doomed_at[row] = self.step
                self.verdicts[row] = verdict
        return torch.tensor(
            [at is not None for at in self.doomed_at], dtype=torch.bool, device=input_ids.device
        )
