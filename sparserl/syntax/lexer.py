"""An incremental C++/CUDA lexer: text goes in in arbitrary chunks, finished tokens come out.

A token is handed out only once the text after it proves it complete (an identifier
needs the character that ends it, a comment its `*/`), so feeding a text whole or one
character at a time yields the same tokens. A token still open at the end of a chunk
remembers how far it was scanned, and the next chunk resumes there: every character is
scanned a bounded number of times, so the total work is linear in the text length.

Kinds: 'ident', 'number', 'string' (string and character literals), 'punct',
'directive' (a whole preprocessor line, continuations included), 'comment' (block
comments only; line comments are dropped), 'bad' (an unterminated literal or comment,
or a character that cannot start a token).
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Token(NamedTuple):
    kind: str
    text: str
    start: int  # character offset of the token's first character in the whole text
    line: int  # 1-based line of that character

    @property
    def end(self) -> int:
        return self.start + len(self.text)


class _Scan(NamedTuple):
    """Where the token at some start ends: `end` None when it may go on in text not yet
    generated, then `resume` is the offset (from the token's start) to scan on from."""

    end: int | None
    kind: str | None  # None: text that makes no token (a line comment)
    resume: int = 0


_IDENT = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"\.?\d(?:[eEpP][+-]|'(?=\w)|[\w.])*")
_PUNCT = re.compile(
    r">>=|<<=|->\*|\.\.\.|<=>|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^="
    r"|##|\.\*|[-+*/%&|^!~=<>?:;,.(){}\[\]#]"
)
# Punctuators that no further character can extend: handed out even at the end of the text,
# so a statement boundary is seen as soon as it is generated.
_FINAL_PUNCT = frozenset(";{}()[],?~")
_STRING_PREFIXES = frozenset({"L", "u", "U", "u8"})
_RAW_PREFIXES = frozenset({"R", "LR", "uR", "UR", "u8R"})
_SPACES = frozenset(" \t\r\f\v")
_DIRECTIVE_STOPS = re.compile(r'/\*|"|\'|\n')


class Lexer:
    """Turns chunks of text into tokens. `feed` returns the tokens each chunk completes;
    `finish` returns the rest, treating the end of the text as the end of every token."""

    def __init__(self, directives: bool = True) -> None:
        self._directives = directives  # False: '#' is punctuation (inside a macro body)
        self._buffer = ""  # text not yet turned into tokens; starts at a token boundary
        self._offset = 0  # offset of _buffer[0] in the whole text
        self._line = 1  # line of _buffer[0]
        self._at_line_start = True  # only blanks (and comments) since the last newline
        self._resume = 0  # how far past its start the unfinished token was scanned

    def feed(self, text: str) -> list[Token]:
        self._buffer += text
        return self._scan(final=False)

    def finish(self) -> list[Token]:
        return self._scan(final=True)

    def _scan(self, final: bool) -> list[Token]:
        text, position, tokens = self._buffer, 0, []
        while position < len(text):
            char = text[position]
            if char == "\n":
                self._line += 1
                self._at_line_start = True
                position += 1
                continue
            if char in _SPACES:
                position += 1
                continue
            if char == "\\" and text.startswith("\n", position + 1):  # a line splice
                self._line += 1
                position += 2
                continue
            scan = self._token_end(text, position, final)
            if scan.end is None:  # the token may continue in text not generated yet
                self._resume = scan.resume
                break
            token_text = text[position : scan.end]
            if scan.kind != "comment":
                self._at_line_start = False
            if scan.kind is not None:
                tokens.append(Token(scan.kind, token_text, self._offset + position, self._line))
            self._line += token_text.count("\n")
            position = scan.end
            self._resume = 0
        self._buffer = text[position:]
        self._offset += position
        return tokens

    def _token_end(self, text: str, start: int, final: bool) -> _Scan:
        char = text[start]
        if char == "#" and self._at_line_start and self._directives:
            return _directive_end(text, start, final, self._resume)
        if text.startswith("/*", start):
            return _block_comment_end(text, start, final, self._resume)
        if text.startswith("//", start):
            return _line_comment_end(text, start, final, self._resume)
        if char in "\"'":
            return _quoted_end(text, start, start, final, self._resume)
        if match := _IDENT.match(text, start):
            return self._word_end(text, start, match.end(), final)
        if match := _NUMBER.match(text, start):
            end = match.end()
            # a digit separator needs the digit after it: 1' may still become 1'000
            at_end = end == len(text) or (text[end] == "'" and end + 1 == len(text))
            return _Scan(None if at_end and not final else end, "number")
        if match := _PUNCT.match(text, start):
            # the longest punctuator has three characters: with three in view the match is final
            if match.group() in _FINAL_PUNCT or final or start + 3 <= len(text):
                return _Scan(match.end(), "punct")
            return _Scan(None, None)
        return _Scan(start + 1, "bad")

    def _word_end(self, text: str, start: int, end: int, final: bool) -> _Scan:
        """An identifier, or a string literal when it is a prefix such as L"..." or R"(...)"."""
        if end == len(text) and not final:
            return _Scan(None, "ident")
        word = text[start:end]
        if text[end : end + 1] == '"' and word in _RAW_PREFIXES:
            return _raw_string_end(text, start, end, final)
        if text[end : end + 1] in ('"', "'") and word in _STRING_PREFIXES:
            return _quoted_end(text, start, end, final, self._resume)
        return _Scan(end, "ident")


def _is_spliced(text: str, newline: int) -> bool:
    """True when the newline at `newline` follows a backslash (the line continues)."""
    return text[newline - 1 : newline] == "\\" or text[newline - 2 : newline] == "\\\r"


def _block_comment_end(text: str, start: int, final: bool, resume: int) -> _Scan:
    close = text.find("*/", start + max(2, resume - 1))
    if close >= 0:
        return _Scan(close + 2, "comment")
    return _Scan(len(text), "bad") if final else _Scan(None, None, len(text) - start)


def _line_comment_end(text: str, start: int, final: bool, resume: int) -> _Scan:
    """A line comment runs to the first newline that no backslash continues."""
    newline = text.find("\n", start + max(2, resume))
    while newline >= 0 and _is_spliced(text, newline):
        newline = text.find("\n", newline + 1)
    if newline >= 0:
        return _Scan(newline, None)
    return _Scan(len(text), None) if final else _Scan(None, None, max(2, len(text) - start - 1))


def _directive_end(text: str, start: int, final: bool, resume: int) -> _Scan:
    """A preprocessor line runs to its first newline that no backslash continues and that
    lies outside block comments and literals."""
    position = start + max(1, resume)
    while True:
        match = _DIRECTIVE_STOPS.search(text, position)
        if match is None:
            # the last character may be a backslash that a newline will follow: rescan it
            return (
                _Scan(len(text), "directive")
                if final
                else _Scan(None, None, max(1, len(text) - start - 1))
            )
        stop = match.group()
        if stop == "\n":
            if not _is_spliced(text, match.start()):
                return _Scan(match.start(), "directive")
            position = match.end()
        elif stop == "/*":
            close = text.find("*/", match.end())
            if close < 0:
                return (
                    _Scan(len(text), "directive")
                    if final
                    else _Scan(None, None, match.start() - start)
                )
            position = close + 2
        else:
            literal = _quoted_end(text, match.start(), match.start(), final, 0)
            if literal.end is None:
                return _Scan(None, None, match.start() - start)
            position = literal.end


def _quoted_end(text: str, start: int, quote: int, final: bool, resume: int) -> _Scan:
    """A string or character literal whose opening quote is at `quote` (its prefix, if any,
    starts at `start`); 'bad' when a newline ends it."""
    position = max(quote + 1, start + resume)
    closing = text[quote]
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == closing:
            return _Scan(position + 1, "string")
        if char == "\n":
            return _Scan(position, "bad")
        position += 1
    if final:
        return _Scan(len(text), "bad")
    return _Scan(None, None, position - start if position == len(text) else position - start - 2)


def _raw_string_end(text: str, start: int, quote: int, final: bool) -> _Scan:
    """A raw string R"delim( ... )delim" whose opening quote is at `quote`."""
    paren = text.find("(", quote)
    close = text.find(")" + text[quote + 1 : paren] + '"', paren) if paren >= 0 else -1
    if close >= 0:
        return _Scan(close + paren - quote + 1, "string")
    return _Scan(len(text), "bad") if final else _Scan(None, None)
