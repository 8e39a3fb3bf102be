"""Scopes and the symbols declared in them: what the checker knows about each name."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# 'name' is a declared name whose kind the checker could not tell (e.g. from `using a::b;`).
SymbolKind = Literal["variable", "function", "type", "namespace", "macro", "name"]
# Scopes whose names must be unique among variables (function bodies and inner blocks,
# with the parameters or the for-loop variables that belong to them, and namespace scope).
ScopeKind = Literal["file", "namespace", "class", "template", "function", "block", "lambda"]


@dataclass(frozen=True)
class Symbol:
    """One declared name. `type` is the declared type as normalised text ('' when unknown);
    `certain` is True when the declaration was understood completely (only those take part
    in redeclaration checks); `extern` marks declarations that may repeat; `line` is where
    the name was declared (0 when unknown)."""

    name: str
    kind: SymbolKind
    type: str = ""
    certain: bool = False
    extern: bool = False
    line: int = 0


@dataclass
class Scope:
    kind: ScopeKind
    symbols: dict[str, Symbol] = field(default_factory=dict)


class SymbolTable:
    """A stack of scopes, innermost last, plus the names of scopes that have closed."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = [Scope("file")]
        self.closed_names: set[str] = set()  # names declared in a scope that has since closed

    @property
    def current(self) -> Scope:
        return self.scopes[-1]

    def push(self, kind: ScopeKind) -> Scope:
        scope = Scope(kind)
        self.scopes.append(scope)
        return scope

    def pop(self) -> None:
        scope = self.scopes.pop()
        self.closed_names.update(scope.symbols)

    def declare(self, symbol: Symbol, scope: Scope | None = None) -> Symbol | None:
        """Add `symbol` to `scope` (the innermost by default); returns the symbol of the same
        name it replaces in that scope, if any."""
        target = scope or self.current
        previous = target.symbols.get(symbol.name)
        if previous is None or not previous.certain or symbol.certain:
            target.symbols[symbol.name] = symbol
        return previous

    def lookup(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            if name in scope.symbols:
                return scope.symbols[name]
        return None

    def enclosing(self, kinds: tuple[ScopeKind, ...]) -> Scope:
        """The innermost scope whose kind is in `kinds` (the file scope when none is)."""
        for scope in reversed(self.scopes):
            if scope.kind in kinds:
                return scope
        return self.scopes[0]
