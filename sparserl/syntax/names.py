"""What a name refers to: declared symbols, the program's macros, and CUDA's built-ins.

`NameResolver` answers `kind_of(name)` and decides whether an undeclared name is an
error or may come from somewhere the checker cannot see (a header, a template's
instantiation). Macros are classified by the shape of their body, which tells the
checker how much of the code that uses them it can still read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sparserl.syntax.cuda_names import builtin_kinds, header_kinds, is_reserved
from sparserl.syntax.lexer import Lexer
from sparserl.syntax.scopes import SymbolKind, SymbolTable
from sparserl.syntax.token_groups import CLOSERS, OPENERS
from sparserl.syntax.vocabulary import BUILTIN_PREFIXES, KEYWORDS, STATEMENT_KEYWORDS

# Macros the compiler defines without any header.
PREDEFINED_MACROS = frozenset(
    "__LINE__ __FILE__ __DATE__ __TIME__ __COUNTER__ __VA_ARGS__ __CUDA_ARCH__ "
    "__CUDA_ARCH_LIST__ __CUDACC__ __NVCC__ __CUDACC_RTC__ __cplusplus".split()
)

# expression: brackets balanced, no ';', braces or statement keywords: it stands for a value
#   or a type, and the statement using it is still checked.
# statement: balanced, but with ';', braces or statement keywords: statements using it are
#   not checked.
# unsafe: unbalanced brackets or token pasting ('##'): nothing after its first use is.
MacroShape = Literal["expression", "statement", "unsafe"]

_DEFINE = re.compile(r"#\s*define\s+([^\W\d]\w*)(\([^)]*\))?(.*)", re.DOTALL)


@dataclass(frozen=True)
class Macro:
    name: str
    function_like: bool
    shape: MacroShape
    body_names: frozenset[str]  # identifiers in the body: a use may declare any of them


def parse_define(directive: str) -> Macro | None:
    """The macro a `#define` line defines (None when the line names none)."""
    match = _DEFINE.match(directive.replace("\\\r\n", " ").replace("\\\n", " "))
    if match is None:
        return None
    name, parameters, body = match.groups()
    lexer = Lexer(directives=False)
    tokens = [t for t in lexer.feed(body) + lexer.finish() if t.kind != "comment"]
    return Macro(
        name,
        parameters is not None,
        _shape([t.text for t in tokens]),
        frozenset(t.text for t in tokens if t.kind == "ident" and t.text not in KEYWORDS),
    )


def _shape(words: list[str]) -> MacroShape:
    depth = {opener: 0 for opener in OPENERS}
    for word in words:
        if word in OPENERS:
            depth[word] += 1
        elif word in CLOSERS:
            depth[CLOSERS[word]] -= 1
            if depth[CLOSERS[word]] < 0:
                return "unsafe"
    if any(depth.values()) or "##" in words:
        return "unsafe"
    if any(word in (";", "{", "}") or word in STATEMENT_KEYWORDS for word in words):
        return "statement"
    return "expression"


class NameResolver:
    """Symbols in scope, macros defined so far, and whether unknown names are errors."""

    def __init__(self) -> None:
        self.symbols = SymbolTable()
        self.macros: dict[str, Macro] = {}
        self.builtins: dict[str, str] = builtin_kinds()  # copied before a header extends it
        self.included = False  # an #include was seen: reserved names (__x) may come from it
        # True once an unknown header, or a `using namespace` of a header's namespace, may
        # have brought in names the checker cannot know.
        self.open_world = False

    def include(self, header: str) -> None:
        """Take in the names `header` (as written between <> or "") declares."""
        self.included = True
        names = header_kinds(header)
        if names is None:
            self.open_world = True
            return
        if self.builtins is builtin_kinds():
            self.builtins = dict(self.builtins)
        self.builtins.update(names)

    def kind_of(self, name: str) -> SymbolKind | None:
        """What `name` refers to here, or None when it is declared nowhere the checker knows."""
        if name in self.macros or name in PREDEFINED_MACROS:
            return "macro"
        symbol = self.symbols.lookup(name)
        if symbol is not None:
            return symbol.kind
        kind = self.builtins.get(name)
        if kind is not None:
            return kind  # type: ignore[return-value]
        if name.startswith(BUILTIN_PREFIXES):
            return "function"
        if self.included and is_reserved(name):
            return "name"
        return None

    def macro_shape(self, name: str) -> MacroShape:
        """The shape of the program's macro `name`, counting the macros its body uses."""
        shapes = ("expression", "statement", "unsafe")
        worst, pending, seen = "expression", [name], set()
        while pending:
            macro = self.macros.get(pending.pop())
            if macro is None or macro.name in seen:
                continue
            seen.add(macro.name)
            worst = max(worst, macro.shape, key=shapes.index)
            pending.extend(macro.body_names)
        return worst  # type: ignore[return-value]

    def stands_for_anything(self, text: str) -> bool:
        """Whether the word `text` may expand to, or declare, anything: a macro, or in an
        open world any undeclared name (it may be a header's macro)."""
        if not text.isidentifier() or text in KEYWORDS:
            return False
        kind = self.kind_of(text)
        return kind == "macro" or (kind is None and self.open_world)

    def undeclared_is_error(self, name: str, next_text: str) -> bool:
        """Whether using the undeclared `name` (followed by `next_text`) is certainly an error.

        In an open world a header may declare anything a call, a template or a qualified
        name could refer to, so only a name last seen in a scope that has closed counts.
        """
        if not self.open_world:
            return True
        return next_text not in ("(", "<", "::") and name in self.symbols.closed_names
