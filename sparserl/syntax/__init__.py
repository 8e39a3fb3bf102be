"""Streaming CUDA syntax checking: reject generations that cannot compile, as early as possible.

    verdict = check(source, require_abi=False)        # the whole text at once
    checker = StreamingChecker()                       # or chunk by chunk while generating
    for piece in pieces:
        if (verdict := checker.feed(piece)) is not None:
            break                                      # doomed: stop generating
    verdict = checker.finish()

The checker never rejects a program nvcc accepts; it may miss errors (docs/syntax_checker.md).
"""

from sparserl.syntax.checker import StreamingChecker
from sparserl.syntax.extraction import extract_code
from sparserl.syntax.verdict import SyntaxVerdict

__all__ = ["StreamingChecker", "SyntaxVerdict", "check", "extract_code"]


def check(source: str, require_abi: bool = True) -> SyntaxVerdict:
    """Judge a complete source: the same as feeding it whole to a `StreamingChecker` and
    finishing. With `require_abi` the kernel ABI (header, entry signature) is checked too."""
    checker = StreamingChecker(require_abi=require_abi)
    checker.feed(source)
    return checker.finish()
