"""Small operations on lists of tokens: matching brackets, splitting at top-level
separators, and peeling off prefixes (attributes, labels, `template <...>`)."""

from __future__ import annotations

from sparserl.syntax.lexer import Token
from sparserl.syntax.vocabulary import OPAQUE_GROUPS

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}


def texts(tokens: list[Token]) -> list[str]:
    return [token.text for token in tokens]


def matching(tokens: list[Token], open_index: int) -> int:
    """Index of the bracket closing the one at `open_index` (len(tokens) when unclosed)."""
    depth = 0
    for index in range(open_index, len(tokens)):
        text = tokens[index].text
        if text in OPENERS:
            depth += 1
        elif text in CLOSERS:
            depth -= 1
            if depth == 0:
                return index
    return len(tokens)


def matching_angle(tokens: list[Token], open_index: int) -> int:
    """Index of the '>' closing the '<' at `open_index` ('>>' closes two; brackets nest)."""
    depth = 0
    index = open_index
    while index < len(tokens):
        text = tokens[index].text
        if text in OPENERS:
            index = matching(tokens, index) + 1
            continue
        if text in CLOSERS or text == ";":
            return len(tokens)
        if text == "<":
            depth += 1
        elif text in (">", ">>"):
            depth -= len(text)
            if depth <= 0:
                return index
        index += 1
    return len(tokens)


def split_top_level(tokens: list[Token], separator: str, angles: bool = False) -> list[list[Token]]:
    """Split at `separator` tokens outside brackets (and outside '<...>' when `angles`)."""
    parts: list[list[Token]] = [[]]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.text in OPENERS or (angles and token.text == "<"):
            end = (
                matching(tokens, index) if token.text in OPENERS else matching_angle(tokens, index)
            )
            parts[-1].extend(tokens[index : end + 1])
            index = end + 1
            continue
        if token.text == separator:
            parts.append([])
        else:
            parts[-1].append(token)
        index += 1
    return parts


def find_top_level(tokens: list[Token], text: str, start: int = 0) -> int:
    """Index of the first `text` token outside brackets at or after `start` (-1 when none)."""
    index = start
    while index < len(tokens):
        if tokens[index].text == text:
            return index
        index = matching(tokens, index) + 1 if tokens[index].text in OPENERS else index + 1
    return -1


def skip_attributes(tokens: list[Token], index: int) -> int:
    """Index after any `[[...]]` attributes and `__attribute__((...))`-like groups at `index`."""
    while index < len(tokens):
        text = tokens[index].text
        if text == "[" and index + 1 < len(tokens) and tokens[index + 1].text == "[":
            index = matching(tokens, index) + 1
        elif text in OPAQUE_GROUPS and index + 1 < len(tokens) and tokens[index + 1].text == "(":
            index = matching(tokens, index + 1) + 1
        elif text == "__extension__":
            index += 1
        else:
            return index
    return index


def strip_labels(tokens: list[Token]) -> list[Token]:
    """Drop leading labels ('name:', 'case X:', 'default:') and `[[...]]` attributes."""
    while tokens:
        start = skip_attributes(tokens, 0)
        if start:
            tokens = tokens[start:]
            continue
        first = tokens[0].text
        if first == "default" and len(tokens) > 1 and tokens[1].text == ":":
            tokens = tokens[2:]
        elif first == "case":
            colon = _case_colon(tokens)
            if colon < 0:
                return tokens
            tokens = tokens[colon + 1 :]
        elif tokens[0].kind == "ident" and len(tokens) > 1 and tokens[1].text == ":":
            tokens = tokens[2:]
        else:
            return tokens
    return tokens


def _case_colon(tokens: list[Token]) -> int:
    """Index of the ':' ending a `case` label (skipping the ':' of a conditional)."""
    pending_questions = 0
    index = 1
    while index < len(tokens):
        text = tokens[index].text
        if text in OPENERS:
            index = matching(tokens, index) + 1
            continue
        if text == "?":
            pending_questions += 1
        elif text == ":":
            if pending_questions == 0:
                return index
            pending_questions -= 1
        index += 1
    return -1


def template_prefix(tokens: list[Token]) -> tuple[list[list[Token]], list[Token]]:
    """Split leading `template <...>` groups off: (parameter lists, the rest)."""
    parameter_lists = []
    index = 0
    while (
        index + 1 < len(tokens)
        and tokens[index].text == "template"
        and tokens[index + 1].text == "<"
    ):
        close = matching_angle(tokens, index + 1)
        parameter_lists.append(tokens[index + 2 : close])
        index = close + 1
    return parameter_lists, tokens[index:]


def template_prefix_end(tokens: list[Token]) -> int:
    """Index after the leading `template <...>` groups (0 when there are none)."""
    index = 0
    while (
        index + 1 < len(tokens)
        and tokens[index].text == "template"
        and tokens[index + 1].text == "<"
    ):
        index = matching_angle(tokens, index + 1) + 1
    return min(index, len(tokens))
