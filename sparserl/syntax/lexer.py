"""An incremental C++/CUDA lexer: text goes in in arbitrary chunks, finished tokens come out.

A token is handed out only once the text after it proves it complete (an identifier
needs the character that ends it, a comment its `*/`), so feeding a text whole or
one character at a time yields the same tokens. Each character is scanned a bounded
number of times, so the total work is linear in the text length.

Kinds: 'ident', 'number', 'string' (string and character literals), 'punct',
'directive' (a whole preprocessor line, continuations included), 'comment' (block
comments only; line comments are dropped), 'bad' (an unterminated literal or a
character that cannot start a token).
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
        self._comment_searched = 0  # how far past its start an unfinished comment was searched

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
            end, kind = self._token_end(text, position, final)
            if end is None:  # the token may continue in text not generated yet
                break
            token_text = text[position:end]
            if kind != "comment":
                self._at_line_start = False
            if kind is not None:
                tokens.append(Token(kind, token_text, self._offset + position, self._line))
            self._line += token_text.count("\n")
            position = end
            self._comment_searched = 0
        self._buffer = text[position:]
        self._offset += position
        return tokens

    def _token_end(self, text: str, start: int, final: bool) -> tuple[int | None, str | None]:
        """(end, kind) of the token at `start`; end None when more text is needed, kind None
        for text that makes no token (a line comment)."""
        char = text[start]
        if char == "#" and self._at_line_start and self._directives:
            return _directive_end(text, start, final), "directive"
        if text.startswith("/*", start):
            close = text.find("*/", start + max(2, self._comment_searched - 1))
            if close < 0:
                self._comment_searched = len(text) - start
                return (len(text), "bad") if final else (None, None)
            return close + 2, "comment"
        if text.startswith("//", start):
            newline = _line_end(text, start)
            if newline is None:
                return (len(text), None) if final else (None, None)
            return newline, None
        if char in "\"'":
            return _quoted_end(text, start, final)
        if match := _IDENT.match(text, start):
            return self._word_end(text, start, match.end(), final)
        if match := _NUMBER.match(text, start):
            end = match.end()
            # a digit separator needs the digit after it: 1' may still become 1'000
            at_end = end == len(text) or (text[end] == "'" and end + 1 == len(text))
            return (None if at_end and not final else end), "number"
        if match := _PUNCT.match(text, start):
            # the longest punctuator has three characters: with three in view the match is final
            if match.group() in _FINAL_PUNCT or final or start + 3 <= len(text):
                return match.end(), "punct"
            return None, None
        return start + 1, "bad"

    def _word_end(self, text: str, start: int, end: int, final: bool) -> tuple[int | None, str]:
        """An identifier, or a string literal when it is a prefix such as L"..." or R"(...)"."""
        if end == len(text) and not final:
            return None, "ident"
        word = text[start:end]
        if end < len(text) and text[end] == '"' and word in _RAW_PREFIXES:
            return _raw_string_end(text, end, final), "string"
        if end < len(text) and text[end] in "\"'" and word in _STRING_PREFIXES:
            return _quoted_end(text, end, final)
        return end, "ident"


def _line_end(text: str, start: int) -> int | None:
    """Offset of the newline that ends the line at `start` (line splices continue it)."""
    newline = text.find("\n", start)
    while newline >= 0 and _is_spliced(text, newline):
        newline = text.find("\n", newline + 1)
    return None if newline < 0 else newline


def _is_spliced(text: str, newline: int) -> bool:
    """True when the newline at `newline` follows a backslash (the line continues)."""
    return text[newline - 1 : newline] == "\\" or text[newline - 2 : newline] == "\\\r"


def _directive_end(text: str, start: int, final: bool) -> int | None:
    """End of the preprocessor line at `start`: its first newline that no backslash continues
    and that lies outside block comments and literals."""
    position = start + 1
    while True:
        match = _DIRECTIVE_STOPS.search(text, position)
        if match is None:
            return len(text) if final else None
        stop = match.group()
        if stop == "\n":
            if _is_spliced(text, match.start()):
                position = match.end()
                continue
            return match.start()
        if stop == "/*":
            close = text.find("*/", match.end())
            if close < 0:
                return len(text) if final else None
            position = close + 2
            continue
        end, _ = _quoted_end(text, match.start(), final)
        if end is None:
            return None
        position = end


def _quoted_end(text: str, start: int, final: bool) -> tuple[int | None, str]:
    """A string or character literal from its opening quote; 'bad' when a newline ends it."""
    quote = text[start]
    position = start + 1
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == quote:
            return position + 1, "string"
        if char == "\n":
            return position, "bad"
        position += 1
    return (len(text), "bad") if final else (None, "string")


def _raw_string_end(text: str, quote: int, final: bool) -> int | None:
    """A raw string R"delim( ... )delim" whose opening quote is at `quote`."""
    paren = text.find("(", quote)
    if paren < 0:
        return len(text) if final else None
    closing = ")" + text[quote + 1 : paren] + '"'
    close = text.find(closing, paren)
    if close < 0:
        return len(text) if final else None
    return close + len(closing)
