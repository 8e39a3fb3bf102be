"""The checker's answer, and the exception its parts raise when a text is doomed."""

from __future__ import annotations

from dataclasses import dataclass

from sparserl.syntax.lexer import Token


@dataclass(frozen=True)
class SyntaxVerdict:
    """Whether a (partial) CUDA source can still compile.

    `ok` False means no continuation of the text can compile (or meet the ABI);
    `reason` says why, `position` and `line` locate the offending token (offset into
    the source, 1-based line), and `stopped_at` is how many characters had been read when
    the checker knew: a generation could have been stopped there.
    """

    ok: bool
    reason: str = ""
    position: int | None = None
    line: int | None = None
    stopped_at: int | None = None


OK = SyntaxVerdict(True)


class Doomed(Exception):
    """Raised inside the checker when the text can no longer compile."""

    def __init__(self, reason: str, token: Token | None = None):
        super().__init__(reason)
        self.reason = reason
        self.token = token
