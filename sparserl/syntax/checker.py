"""The streaming syntax checker: is a partly generated CUDA source already doomed?

Text arrives in chunks; the lexer turns it into tokens; every bracket is matched as it
arrives, and at each statement boundary (';', '{', '}') the finished statement or
region head is checked by `StatementReader`. Each token is handled once and each
statement read once, so the total work is linear in the text length.

Regions are the braces that contain statements or declarations (function bodies,
blocks, lambdas, classes, namespaces); other braces are initializer lists and stay
inside their statement. Each region remembers the statement it is reading.

Where the checker cannot follow the code it stops judging rather than guess:
conditional compilation (#if) or a macro with unbalanced brackets turns every check
off for the rest of the text (only the ABI is still checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from sparserl.syntax.abi_rules import AbiTracker
from sparserl.syntax.lexer import Lexer, Token
from sparserl.syntax.names import NameResolver, parse_define
from sparserl.syntax.statements import StatementReader
from sparserl.syntax.token_groups import (
    CLOSERS,
    matching,
    skip_attributes,
    template_prefix_end,
    texts,
)
from sparserl.syntax.verdict import OK, Doomed, SyntaxVerdict
from sparserl.syntax.vocabulary import (
    CLASS_KEYS,
    CONTROL_WITH_HEAD,
    CONTROL_WITHOUT_HEAD,
    KEYWORDS,
)

RegionKind = Literal["file", "namespace", "linkage", "class", "enum", "function", "block", "lambda"]
_BLOCK_LIKE = ("function", "block", "lambda")
# After these, a '(' may hold a ';': for (;;), if (init; cond), switch (init; value).
_HEADS_WITH_SEMICOLONS = frozenset({"for", "if", "switch", "constexpr"})
_LAMBDA_SPECIFIERS = frozenset(
    {"mutable", "constexpr", "consteval", "static", "__device__", "__host__"}
)
_TYPE_PUNCTUATION = frozenset({"::", "<", ">", ">>", "*", "&", "&&", ","})
_CONDITIONAL_DIRECTIVES = frozenset(
    {"if", "ifdef", "ifndef", "elif", "else", "endif", "elifdef", "elifndef"}
)
_DIRECTIVE_NAME = re.compile(r"#\s*(\w*)")
_INCLUDED = re.compile(r'[<"]([^>"]+)[>"]')


@dataclass
class Region:
    """A brace-delimited region holding statements or declarations, and the statement it
    is reading. `bracket_base` is the bracket depth just inside its '{'."""

    kind: RegionKind
    bracket_base: int
    scopes: int = 0  # scopes pushed for it, popped at its '}'
    lenient: bool = False  # undeclared names are not errors (class bodies, templates)
    anonymous: bool = False  # an anonymous class or union: its members leak out
    statement: list[Token] = field(default_factory=list)
    opaque: bool = False  # the statement being read uses a macro the checker cannot read
    braced: bool = False  # the statement being read has an initializer list at its top level


@dataclass(frozen=True)
class Bracket:
    """An open bracket. `statement_index` is its position in its region's statement and
    `after` the text of the token before it (a '(' after 'for' may hold ';')."""

    token: Token
    statement_index: int
    after: str


class StreamingChecker:
    """Feed generated text in any chunks; learn as early as possible that it cannot compile.

    Contract:
      * `feed(text)` returns None while the text so far can still become a valid program,
        and a `SyntaxVerdict` with ok=False as soon as it cannot (its `stopped_at` says how
        many characters had been read when that was certain). Once doomed, every later
        `feed` returns that same verdict without reading. Each call costs time in
        proportion to the length of `text` (plus the statements it completes).
      * `finish()` ends the text and returns the final verdict (ok=True when nothing
        was found): it adds the end-of-text checks (unclosed brackets, literals and
        comments, a statement without ';', and with `require_abi` the header and the
        entry kernel).
      * It never rejects a program nvcc accepts; where unsure it accepts.
    """

    def __init__(self, require_abi: bool = True):
        self.require_abi = require_abi
        self._abi = AbiTracker() if require_abi else None
        self._lexer = Lexer()
        self._names = NameResolver()
        self._reader = StatementReader(self._names, self._entry_declared)
        self._regions = [Region("file", 0)]
        self._brackets: list[Bracket] = []
        self._permissive = False  # set once the checker can no longer follow the code
        self._chunks: list[str] = []  # the text, kept for the final ABI check
        self._length = 0
        self._verdict: SyntaxVerdict | None = None
        self._finished: SyntaxVerdict | None = None

    def feed(self, text: str) -> SyntaxVerdict | None:
        if self._verdict is None and self._finished is None:
            if self._abi is not None:
                self._chunks.append(text)
            self._length += len(text)
            self._take_all(self._lexer.feed(text))
        return self._verdict

    def finish(self) -> SyntaxVerdict:
        if self._finished is not None:
            return self._finished
        if self._verdict is None:
            self._take_all(self._lexer.finish())
        if self._verdict is None:
            try:
                self._end_of_text()
            except Doomed as doomed:
                self._verdict = _verdict(doomed, self._length)
        self._finished = self._verdict or OK
        return self._finished

    # ------------------------------------------------------------------ tokens

    def _take_all(self, tokens: list[Token]) -> None:
        for token in tokens:
            try:
                self._take(token)
            except Doomed as doomed:
                self._verdict = _verdict(doomed, token.end)
                return

    def _take(self, token: Token) -> None:
        if token.kind == "comment":
            if self._abi is not None:
                self._abi.comment(token)
            return
        if token.kind == "directive":
            self._directive(token)
            return
        if token.kind == "bad":
            if not self._permissive:
                raise Doomed(f"unterminated literal or stray character {token.text[:20]!r}", token)
            return
        region = self._regions[-1]
        if token.kind == "ident" and token.text in self._names.macros:
            shape = self._names.macro_shape(token.text)
            self._permissive = self._permissive or shape == "unsafe"
            region.opaque = region.opaque or shape == "statement"
        text = token.text
        if text in ("(", "["):
            self._brackets.append(Bracket(token, len(region.statement), _last_text(region)))
            region.statement.append(token)
        elif text in (")", "]"):
            self._close_bracket(token, region)
            region.statement.append(token)
        elif text == "{":
            self._open_brace(token, region)
        elif text == "}":
            self._close_brace(token, region)
        elif text == ";":
            self._semicolon(token, region)
        else:
            region.statement.append(token)

    def _directive(self, token: Token) -> None:
        name = _DIRECTIVE_NAME.match(token.text)
        word = name.group(1) if name else ""
        if word in _CONDITIONAL_DIRECTIVES:
            self._permissive = True
        elif word == "include":
            header = _INCLUDED.search(token.text)
            self._names.include(header.group(1) if header else "")
        elif word == "define":
            macro = parse_define(token.text)
            if macro is not None:
                self._names.macros[macro.name] = macro

    # ------------------------------------------------------------------ brackets

    def _close_bracket(self, token: Token, region: Region) -> None:
        """')' or ']': it must close the innermost open bracket of this statement."""
        opener = CLOSERS[token.text]
        if len(self._brackets) > region.bracket_base and self._brackets[-1].token.text == opener:
            self._brackets.pop()
        elif not self._permissive:
            raise Doomed(_mismatch(token, self._brackets[-1] if self._brackets else None), token)

    def _semicolon(self, token: Token, region: Region) -> None:
        if len(self._brackets) == region.bracket_base:
            self._end_statement(region)
            return
        opener = self._brackets[-1]
        if not (self._permissive or region.opaque or self._names.stands_for_anything(opener.after)):
            if opener.token.text == "{" and opener.after == "(":
                region.opaque = True  # a GNU statement expression: ({ ...; })
            elif opener.token.text != "(" or opener.after not in _HEADS_WITH_SEMICOLONS:
                raise Doomed(
                    f"';' inside the '{opener.token.text}' opened on line {opener.token.line} "
                    f"(a missing '{_CLOSING[opener.token.text]}'?)",
                    token,
                )
        region.statement.append(token)

    def _end_statement(self, region: Region) -> None:
        tokens, opaque = region.statement, region.opaque
        region.statement, region.opaque, region.braced = [], False, False
        if self._permissive or opaque:
            self._reader.declare_names_only(tokens)
            return
        if not tokens:
            return
        if region.kind in _BLOCK_LIKE:
            self._reader.block_statement(tokens, region.lenient)
        elif region.kind == "class":
            self._reader.class_statement(tokens)
        elif region.kind == "enum":
            raise Doomed("';' inside an enum body", tokens[-1])
        else:
            self._reader.namespace_statement(tokens, region.lenient, region.kind)

    # ------------------------------------------------------------------ braces

    def _open_brace(self, token: Token, region: Region) -> None:
        kind, start = self._classify_brace(region, token)
        if kind is None:  # an initializer list: part of the statement
            if len(self._brackets) == region.bracket_base:
                self._first_initializer_brace(region)
            self._brackets.append(Bracket(token, len(region.statement), _last_text(region)))
            region.statement.append(token)
            return
        head = region.statement[start:]
        if kind == "lambda":
            del region.statement[start:]  # the lambda becomes one operand of the statement
        elif kind not in ("class", "enum"):  # (a class's statement goes on after its '}')
            region.statement, region.braced = [], False
        opaque = region.opaque
        if kind not in ("class", "enum", "lambda"):
            region.opaque = False
        inner = Region(kind, len(self._brackets) + 1, lenient=region.lenient)
        self._enter(inner, head, region.kind, skip_checks=opaque or self._permissive)
        self._brackets.append(Bracket(token, len(region.statement), _last_text(region)))
        self._regions.append(inner)

    def _enter(
        self, inner: Region, head: list[Token], outer_kind: RegionKind, skip_checks: bool
    ) -> None:
        """Read a region's head: push the scopes its body sees, decide how leniently to read it."""
        reader, symbols = self._reader, self._names.symbols
        if inner.kind == "linkage":
            return
        if skip_checks:
            symbols.push("block")
            inner.scopes, inner.lenient = 1, True
        elif inner.kind == "block":
            # a block opened by a macro (FOR_EACH(i, n) { ... }) may be anything: its first
            # statement, or its contents when they end without ';', are not checked
            inner.scopes, inner.opaque = reader.block_head(head, inner.lenient)
        elif inner.kind == "function":
            inner.scopes, inner.lenient = reader.function_head(head, inner.lenient, outer_kind)
        elif inner.kind == "lambda":
            inner.scopes = reader.lambda_head(head, inner.lenient)
        elif inner.kind in ("class", "enum"):
            (inner.scopes, inner.anonymous), inner.lenient = reader.class_head(head), True
        else:
            inner.scopes = reader.namespace_head(head)

    def _close_brace(self, token: Token, region: Region) -> None:
        if len(self._brackets) > region.bracket_base:  # inside the statement: an initializer list
            if self._brackets[-1].token.text == "{":
                self._brackets.pop()
                region.statement.append(token)
                return
            if not self._permissive:
                raise Doomed(_mismatch(token, self._brackets[-1]), token)
            del self._brackets[region.bracket_base :]
        if region.kind == "file":
            if not self._permissive:
                raise Doomed("'}' without a matching '{'", token)
            return
        self._brackets.pop()
        self._regions.pop()
        self._close_region(region, token)

    def _close_region(self, region: Region, closing: Token) -> None:
        symbols, reader = self._names.symbols, self._reader
        checking = not (self._permissive or region.opaque)
        if checking and region.kind in _BLOCK_LIKE:
            reader.leftover(region.statement, closing)
        inner_scope = symbols.current
        for _ in range(region.scopes):
            symbols.pop()
        if region.kind == "enum" and checking:
            reader.enumerators(region.statement, self._regions[-1].lenient)
        elif region.kind == "enum":
            reader.declare_names_only(region.statement)
        if region.scopes and (region.kind == "namespace" or region.anonymous):
            reader.export(inner_scope)
        if region.kind in ("class", "enum", "lambda"):  # the enclosing statement goes on
            body = Token("body", "{...}", closing.start, closing.line)
            self._regions[-1].statement.append(body)

    def _classify_brace(self, region: Region, brace: Token) -> tuple[RegionKind | None, int]:
        """What the '{' arriving now opens: (region kind, index in the statement where the
        region's head starts), or (None, 0) for an initializer list."""
        statement = region.statement
        if len(self._brackets) > region.bracket_base:  # inside parentheses or an initializer
            start = _lambda_start(statement, self._brackets[-1].statement_index + 1)
            return ("lambda", start) if start is not None else (None, 0)
        start = _lambda_start(statement, 0)
        if start is not None:
            return "lambda", start
        if region.kind in _BLOCK_LIKE:
            return self._classify_in_block(statement), 0
        return self._classify_at_namespace_level(statement, brace), 0

    def _classify_in_block(self, statement: list[Token]) -> RegionKind | None:
        start = _after_control_heads(statement)
        if start == len(statement):
            return "block"
        if key := _class_key(statement, start):
            return key
        if statement[-1].text == ")" and self._names.stands_for_anything(statement[start].text):
            return "block"  # MACRO(args) { ... }
        if not self._permissive:
            self._reader.reject_function_definition(statement, start)
        return None

    def _first_initializer_brace(self, region: Region) -> None:
        """The first initializer list at a statement's top level in a function body: a
        statement keyword before it means a ';' is missing ('float s = 0 for (...) {')."""
        if region.kind in _BLOCK_LIKE and not (region.braced or region.opaque or self._permissive):
            start = _after_control_heads(region.statement)
            self._reader.reject_statement_keyword(region.statement, start)
        region.braced = True

    def _classify_at_namespace_level(
        self, statement: list[Token], brace: Token
    ) -> RegionKind | None:
        start = skip_attributes(statement, template_prefix_end(statement))
        if start >= len(statement):
            if self._permissive:
                return "block"
            raise Doomed("'{' outside any function", brace)
        words = texts(statement[start : start + 3])
        if words[0] == "extern" and len(words) == 2 and statement[start + 1].kind == "string":
            return "linkage"
        if words[0] == "namespace" or words[:2] == ["inline", "namespace"]:
            return "namespace"
        if key := _class_key(statement, start):
            return key
        if _is_function_head(statement, start):
            return "function"
        return None

    # ------------------------------------------------------------------ ABI and the end

    def _entry_declared(self, tokens: list[Token], name: Token) -> None:
        if self._abi is not None and not self._permissive:
            self._abi.entry_declared(tokens, name)

    def _end_of_text(self) -> None:
        if not self._permissive:
            if self._brackets:
                opener = self._brackets[-1].token
                raise Doomed(
                    f"'{opener.text}' opened on line {opener.line} is never closed", opener
                )
            rest = self._regions[-1]
            if rest.statement and not rest.opaque:
                if not any(self._names.stands_for_anything(t.text) for t in rest.statement):
                    last = rest.statement[-1]
                    raise Doomed("the text ends inside a declaration (a missing ';'?)", last)
        if self._abi is not None:
            self._abi.final_check("".join(self._chunks))


# ---------------------------------------------------------------------------- helpers

_CLOSING = {"(": ")", "[": "]", "{": "}"}


def _verdict(doomed: Doomed, stopped_at: int) -> SyntaxVerdict:
    token = doomed.token
    return SyntaxVerdict(
        ok=False,
        reason=doomed.reason,
        position=token.start if token else None,
        line=token.line if token else None,
        stopped_at=stopped_at,
    )


def _mismatch(token: Token, opener: Bracket | None) -> str:
    if opener is None:
        return f"'{token.text}' without a matching '{CLOSERS[token.text]}'"
    return f"'{token.text}' does not match the '{opener.token.text}' opened on line {opener.token.line}"


def _last_text(region: Region) -> str:
    return region.statement[-1].text if region.statement else ""


def _after_control_heads(tokens: list[Token]) -> int:
    """Index after the leading labels, attributes and control heads ('if (...)', 'else')."""
    index = 0
    while index < len(tokens):
        index = skip_attributes(tokens, index)
        if index >= len(tokens):
            break
        word = tokens[index].text
        following = tokens[index + 1].text if index + 1 < len(tokens) else ""
        if word in CONTROL_WITHOUT_HEAD:
            index += 1
        elif word in CONTROL_WITH_HEAD:
            index = matching(tokens, index + 2 if following == "constexpr" else index + 1) + 1
        elif word in ("case", "default") or (tokens[index].kind == "ident" and following == ":"):
            colons = (i for i in range(index, len(tokens)) if tokens[i].text == ":")
            index = next(colons, len(tokens) - 1) + 1
        else:
            break
    return min(index, len(tokens))


def _class_key(tokens: list[Token], start: int) -> RegionKind | None:
    """'class' or 'enum' when `tokens[start:]` head a class/struct/union or enum definition:
    a class key before any '(', '=' or initializer brace (attributes aside)."""
    key: RegionKind | None = None
    index = start
    while index < len(tokens):
        after = skip_attributes(tokens, index)
        if after != index:
            index = after
            continue
        text = tokens[index].text
        if text in ("(", "=", "{", ";"):
            return None
        if key is None and text in CLASS_KEYS:
            key = "enum" if text == "enum" else "class"
        index += 1
    return key


def _is_function_head(tokens: list[Token], start: int) -> bool:
    """Whether a '{' after `tokens[start:]` (at namespace or class level) opens a function
    body: a parameter list comes before any '=' or initializer brace, and the '{' does not
    follow a name among a constructor's member initializers (`S() : x{1}`)."""
    index = start
    while index < len(tokens):
        after = skip_attributes(tokens, index)
        if after != index:
            index = after
            continue
        text = tokens[index].text
        before = tokens[index - 1].text if index > start else ""
        if (text == "=" and before != "operator") or text in ("{", ";"):
            return False
        if text == "(" and before in ("decltype", "__typeof__", "typeof", "noexcept"):
            index = matching(tokens, index) + 1
            continue
        if text == "(":
            close = matching(tokens, index)
            has_initializers = any(t.text == ":" for t in tokens[close + 1 :])
            return not (has_initializers and tokens[-1].kind == "ident")
        index += 1
    return False


def _lambda_start(statement: list[Token], segment_start: int) -> int | None:
    """Index of the '[' of a lambda whose body the arriving '{' opens, or None.

    Reads backwards from the end: an optional trailing return type '-> T', specifiers
    (mutable, __device__, noexcept(...)), an optional parameter list, then the ']' of the
    capture list, whose '[' must not follow an operand (that would be a subscript).
    """
    index = len(statement) - 1
    arrow = _trailing_return_arrow(statement, index, segment_start)
    if arrow is not None:
        index = arrow - 1
    index = _skip_lambda_specifiers(statement, index, segment_start)
    if index >= segment_start and statement[index].text == ")":
        index = _matching_backwards(statement, index, segment_start) - 1
        index = _skip_lambda_specifiers(statement, index, segment_start)
    if index < segment_start or statement[index].text != "]":
        return None
    opener = _matching_backwards(statement, index, segment_start)
    if opener < segment_start or statement[opener + 1].text == "[":  # [[attribute]]
        return None
    before = statement[opener - 1] if opener > segment_start else None
    if before is not None and _ends_operand(before):
        return None
    return opener


def _trailing_return_arrow(statement: list[Token], index: int, segment_start: int) -> int | None:
    """Index of the '->' of a trailing return type ending at `index`, if there is one."""
    angles = 0  # a ',' belongs to a type only inside template arguments
    while index >= segment_start:
        token = statement[index]
        if token.text == "->":
            return index
        if token.text == ")":  # -> decltype(...)
            opener = _matching_backwards(statement, index, segment_start)
            if opener > segment_start and statement[opener - 1].text == "decltype":
                index = opener - 2
                continue
            return None
        angles += {">": 1, ">>": 2, "<": -1}.get(token.text, 0)
        is_type_word = token.kind == "ident" and token.text not in _LAMBDA_SPECIFIERS
        if not (is_type_word or token.text in _TYPE_PUNCTUATION) or (
            token.text == "," and angles <= 0
        ):
            return None
        index -= 1
    return None


def _skip_lambda_specifiers(statement: list[Token], index: int, segment_start: int) -> int:
    """Index of the last token before the specifiers (mutable, noexcept(...), ...) ending at `index`."""
    while index >= segment_start:
        text = statement[index].text
        if text in _LAMBDA_SPECIFIERS or text == "noexcept":
            index -= 1
        elif text == ")":
            opener = _matching_backwards(statement, index, segment_start)
            if opener <= segment_start or statement[opener - 1].text != "noexcept":
                return index
            index = opener - 2
        else:
            return index
    return index


def _matching_backwards(statement: list[Token], close_index: int, segment_start: int) -> int:
    """Index of the bracket opening the one closing at `close_index` (< segment_start if none)."""
    depth = 0
    for index in range(close_index, segment_start - 1, -1):
        text = statement[index].text
        if text in (")", "]", "}"):
            depth += 1
        elif text in ("(", "[", "{"):
            depth -= 1
            if depth == 0:
                return index
    return segment_start - 1


def _ends_operand(token: Token) -> bool:
    if token.kind in ("number", "string", "body"):
        return True
    if token.kind == "ident":
        return token.text not in KEYWORDS or token.text in ("this", "true", "false", "nullptr")
    return token.text in (")", "]")
