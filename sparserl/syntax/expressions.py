"""Checking the tokens of an expression: every name must be declared, and no two operands
may stand side by side (`x y`, `0 float`), nor a statement keyword appear (`= 0 for`):
both are what a missing ';' or operator looks like.

Names after `.`, `->` or `::`, and the insides of attributes, `asm` and macro arguments
are not looked up. A use of an expression-like macro may declare any name in its body
or arguments, so those are added to the scope as names of unknown kind.
"""

from __future__ import annotations

from sparserl.syntax.lexer import Token
from sparserl.syntax.names import NameResolver
from sparserl.syntax.scopes import Symbol
from sparserl.syntax.token_groups import matching, skip_attributes
from sparserl.syntax.verdict import Doomed
from sparserl.syntax.vocabulary import (
    CLASS_KEYS,
    KEYWORDS,
    LITERAL_KEYWORDS,
    OPAQUE_GROUPS,
    SPECIFIER_KEYWORDS,
    STATEMENT_KEYWORDS,
    TYPE_KEYWORDS,
)

# After these a name is a member, a qualified name or a dependent template: not looked up.
_QUALIFIERS = frozenset({".", "->", ".*", "->*", "::", "template"})
# Keywords that cannot follow an operand: they start an operand, a declaration or a statement.
_STARTS_OPERAND_OR_DECLARATION = (
    TYPE_KEYWORDS | LITERAL_KEYWORDS | SPECIFIER_KEYWORDS | CLASS_KEYS | {"static_assert"}
)
# Words of a fundamental, non-pointer type: a variable of such a type is no function.
_FUNDAMENTAL = (TYPE_KEYWORDS - {"auto", "void"}) | {"const", "volatile"}


def check_expression(tokens: list[Token], names: NameResolver, lenient: bool) -> None:
    """Raise `Doomed` when `tokens` (an expression, or a list of them) cannot compile.

    `lenient` turns the undeclared-name check off (class bodies, templates).
    """
    operand_before = False  # the previous token ends an operand: a literal, a value, a call
    # For each open bracket: whether it closes an operand (a call or a subscript, which
    # follow an operand) or not (a cast, a grouping, a lambda's captures).
    closes_operand: list[bool] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        text = token.text
        previous = tokens[index - 1] if index else None
        following = tokens[index + 1].text if index + 1 < len(tokens) else ""
        if token.kind == "ident" and text in OPAQUE_GROUPS and following == "(":
            index = matching(tokens, index + 1) + 1
            operand_before = False
            continue
        if text == "[" and following == "[":
            index = skip_attributes(tokens, index)
            continue
        if token.kind == "ident" and text == "operator":  # a.operator+(b), operator() ...
            index += 2
            operand_before = False
            continue
        if token.kind == "ident" and text in KEYWORDS:
            if text in STATEMENT_KEYWORDS:
                raise Doomed(f"'{text}' cannot appear inside an expression (a missing ';'?)", token)
            starts_operand = text in _STARTS_OPERAND_OR_DECLARATION
            _check_adjacent(operand_before and starts_operand, token)
            operand_before = text in LITERAL_KEYWORDS
        elif token.kind == "ident" and previous is not None and previous.text in _QUALIFIERS:
            operand_before = previous.text != "::"  # a member ends an operand; A::B may be a type
        elif token.kind == "ident":
            kind = names.kind_of(text)
            if kind == "macro":
                index = _macro_use(tokens, index, names)
                operand_before = False
                continue
            if kind is None and not lenient and names.undeclared_is_error(text, following):
                raise Doomed(f"'{text}' is not declared", token)
            is_value = kind in ("variable", "function")
            _check_adjacent(operand_before and is_value, token)
            if following == "(" and kind == "variable":
                _check_callable(names, token)
            operand_before = is_value and following != "::"
        elif token.kind in ("number", "string"):
            concatenation = (
                token.kind == "string" and previous is not None and previous.kind == "string"
            )
            _check_adjacent(operand_before and not concatenation, token)
            operand_before = True
        elif text in ("(", "["):
            closes_operand.append(operand_before)
            operand_before = False
        elif text in (")", "]"):
            operand_before = closes_operand.pop() if closes_operand else False
        elif text in ("++", "--"):
            pass  # after an operand a postfix operator: still an operand ('x++ y' is an error)
        else:
            operand_before = False
        index += 1


def _check_adjacent(adjacent: bool, token: Token) -> None:
    if adjacent:
        raise Doomed(f"expected an operator or ';' before '{token.text}'", token)


def _check_callable(names: NameResolver, token: Token) -> None:
    """A variable of a fundamental type (int, const float, ...) cannot be called."""
    symbol = names.symbols.lookup(token.text)
    words = symbol.type.split() if symbol is not None else []
    if words and all(word in _FUNDAMENTAL for word in words):
        raise Doomed(f"'{token.text}' is a variable of type '{symbol.type}', not a function", token)


def _macro_use(tokens: list[Token], index: int, names: NameResolver) -> int:
    """A macro may declare names from its body or arguments: add the undeclared ones.
    Returns the index after the macro and its argument list."""
    macro = names.macros.get(tokens[index].text)
    candidates = set(macro.body_names) if macro else set()
    end = index + 1
    takes_arguments = macro is None or macro.function_like  # a header's macro may take some
    if takes_arguments and end < len(tokens) and tokens[end].text == "(":
        close = matching(tokens, end)
        candidates.update(t.text for t in tokens[end + 1 : close] if t.kind == "ident")
        end = close + 1
    for name in candidates:
        if name not in KEYWORDS and names.kind_of(name) is None:
            names.symbols.declare(Symbol(name, "name"))
    return end
