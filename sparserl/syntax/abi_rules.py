"""The kernel ABI, checked while the text streams in (rules: docs/kernel_abi.md).

The header block is parsed as soon as its comment closes, and each declaration of the
entry kernel as soon as its head is complete; both use `sparserl.abi` itself, so the
streaming verdict and the harness's own check cannot disagree. `final_check` repeats
the harness's checks on the whole text.
"""

from __future__ import annotations

import re

from sparserl.abi import ABIError, KernelHeader, check_entry_signature, parse_header
from sparserl.syntax.lexer import Token
from sparserl.syntax.verdict import Doomed

HEADER_START = "/*@sparserl"
_HEADER_OPENING = re.compile(r"/\*@sparserl\b")


class AbiTracker:
    """The ABI facts seen so far: the header, and the entry kernel's declarations."""

    def __init__(self) -> None:
        self.header: KernelHeader | None = None
        self._entry_declarations: list[str] = []

    def comment(self, token: Token) -> None:
        """Parse the first `/*@sparserl ... */` comment as the header."""
        if self.header is not None or _HEADER_OPENING.match(token.text) is None:
            return
        padding = "\n" * (token.line - 1)  # so that the header's line numbers are the source's
        try:
            self.header = parse_header(padding + token.text)
        except ABIError as error:
            raise Doomed(f"ABI header: {error}", token) from None

    def entry_declared(self, tokens: list[Token], name: Token) -> None:
        """A declaration of the entry kernel (its tokens up to the body or ';')."""
        self._entry_declarations.append(" ".join(token.text for token in tokens))
        if self.header is None:
            return  # the header may still come: the final check decides
        try:
            check_entry_signature(
                "\n".join(self._entry_declarations), self.header.op, self.header.format
            )
        except ABIError as error:
            raise Doomed(f"ABI: {error}", name) from None

    def final_check(self, source: str) -> None:
        try:
            header = parse_header(source)
            check_entry_signature(source, header.op, header.format)
        except ABIError as error:
            raise Doomed(f"ABI: {error}") from None
