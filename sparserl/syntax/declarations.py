"""Reading declarations: `specifiers declarator [= init], declarator ...`.

`parse_specifiers` reads the part before the names (`static __shared__ float`,
`const cg::thread_block`, `struct S {...}`) and says whether it is a declaration at all;
`parse_declarator` reads one declarator (`*__restrict__ y`, `buf[32]`, `f(int a)`,
`(*fn)(float)`) with its initializer. Both only read: declaring the names and checking
the expressions inside is the caller's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparserl.syntax.lexer import Token
from sparserl.syntax.names import NameResolver
from sparserl.syntax.token_groups import (
    matching,
    matching_angle,
    skip_attributes,
    split_top_level,
    texts,
)
from sparserl.syntax.vocabulary import (
    CLASS_KEYS,
    KEYWORDS,
    SPECIFIER_KEYWORDS,
    TYPE_KEYWORDS,
)

_CV = frozenset({"const", "volatile"})
_POINTER_WORDS = frozenset({"*", "&", "&&", "const", "volatile", "__restrict__", "__restrict"})
_AFTER_PARAMETERS = frozenset(
    {
        "const",
        "volatile",
        "&",
        "&&",
        "override",
        "final",
        "mutable",
        "constexpr",
        "__device__",
        "__host__",
    }
)


@dataclass
class Specifiers:
    """The declaration specifiers of a declaration, up to (not including) its declarators."""

    end: int  # index of the first token after the specifiers
    type_words: list[str]  # the type as written, cv-qualifiers included, storage left out
    storage: set[str]  # static, extern, typedef, __shared__, __device__, ...
    certain: bool  # every word is a keyword or a known type: the parse is not a guess
    unknown: Token | None = None  # an undeclared name standing where a type goes
    class_key: str | None = None  # 'struct', 'class', 'union' or 'enum'
    tag: Token | None = None  # the class or enum name
    has_body: bool = False  # the class or enum body is part of the declaration
    linkage: str | None = None  # '"C"' for extern "C"


@dataclass
class Declarator:
    """One declarator and its initializer."""

    name: Token | None
    qualified: bool = False  # A::name: a member defined outside its class
    pointer: list[str] = field(default_factory=list)  # '*', '&', cv words before the name
    array_sizes: list[list[Token]] = field(default_factory=list)
    parameters: list[Token] | None = None  # inside '(...)' of a function declarator
    initializer: list[Token] = field(default_factory=list)
    bindings: list[Token] = field(default_factory=list)  # names of 'auto [a, b] = ...'
    special_body: bool = False  # '= 0', '= default', '= delete'

    @property
    def is_function(self) -> bool:
        return self.parameters is not None


def parse_specifiers(tokens: list[Token], start: int, names: NameResolver) -> Specifiers | None:
    """Read the specifiers at `start`; None when the tokens there do not begin a declaration."""
    spec = Specifiers(end=start, type_words=[], storage=set(), certain=True)
    index = start
    saw_type = False
    while index < len(tokens):
        token = tokens[index]
        text = token.text
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        after_attributes = skip_attributes(tokens, index)
        if after_attributes != index:
            index = after_attributes
        elif text == "extern" and following is not None and following.kind == "string":
            spec.linkage = following.text
            index += 2
        elif text in _CV:
            spec.type_words.append(text)
            index += 1
        elif text in SPECIFIER_KEYWORDS:
            spec.storage.add(text)
            index += 1
        elif text in TYPE_KEYWORDS:
            spec.type_words.append(text)
            saw_type = True
            index += 1
        elif (
            text in ("decltype", "__typeof__", "typeof")
            and following is not None
            and following.text == "("
        ):
            close = matching(tokens, index + 1)
            spec.type_words += texts(tokens[index : close + 1])
            spec.certain = False
            saw_type = True
            index = close + 1
        elif text in CLASS_KEYS and not saw_type:
            index = _class_specifier(tokens, index, spec)
            saw_type = True
        elif not saw_type and (token.kind == "ident" and text not in KEYWORDS or text == "::"):
            end = _type_name(tokens, index, names, spec)
            if end is None:
                break
            saw_type = True
            index = end
        else:
            break
    if index == start:
        return None
    spec.end = index
    return spec


def _class_specifier(tokens: list[Token], index: int, spec: Specifiers) -> int:
    """Read `struct [name] [: bases] [{body}]` at `index` into `spec`; returns the index after."""
    spec.class_key = tokens[index].text
    index += 1
    if (
        spec.class_key == "enum"
        and index < len(tokens)
        and tokens[index].text in ("class", "struct")
    ):
        index += 1
    index = skip_attributes(tokens, index)
    if index < len(tokens) and tokens[index].kind == "ident" and tokens[index].text not in KEYWORDS:
        spec.tag = tokens[index]
        index = _qualified_name_end(tokens, index)
    if index < len(tokens) and tokens[index].text == ":":  # base classes or an enum's base type
        while index < len(tokens) and tokens[index].kind != "body" and tokens[index].text != ";":
            index += 1
    if index < len(tokens) and tokens[index].kind == "body":
        spec.has_body = True
        index += 1
    spec.type_words += [spec.class_key, spec.tag.text if spec.tag else "<anonymous>"]
    return index


def _type_name(
    tokens: list[Token], index: int, names: NameResolver, spec: Specifiers
) -> int | None:
    """Read a (possibly qualified or templated) type name at `index` into `spec`.

    Returns the index after it, or None when the name there is not a type: a variable or
    a function, or an unknown name not followed by something that looks like a declarator.
    """
    first = tokens[index + 1] if tokens[index].text == "::" else tokens[index]
    if first.kind != "ident":
        return None
    kind = names.kind_of(first.text)
    if kind in ("variable", "function") and names.symbols.lookup(first.text) is not None:
        return None  # a declared value: the statement is an expression
    if kind in ("variable", "function"):
        kind = "name"  # a built-in value, by the header scan; trust only the shape that follows
    end = _qualified_name_end(tokens, index)
    qualified = end - index > 1
    if kind != "type" and not _starts_declarator(tokens, end):
        return None
    if kind is None:
        spec.unknown = first
    spec.certain = spec.certain and kind == "type" and not qualified
    spec.type_words += texts(tokens[index:end])
    return end


def _qualified_name_end(tokens: list[Token], index: int) -> int:
    """Index after a name such as `a`, `::a`, `A::B<int, 4>::c` starting at `index`."""
    if tokens[index].text == "::":
        index += 1
    index += 1
    while index < len(tokens):
        text = tokens[index].text
        if text == "<":
            close = matching_angle(tokens, index)
            if close >= len(tokens):
                return index
            index = close + 1
        elif text == "::" and index + 1 < len(tokens):
            index += 2 if tokens[index + 1].text != "template" else 3
        else:
            return index
    return index


def _starts_declarator(tokens: list[Token], index: int) -> bool:
    """Whether a declarator (as opposed to an expression's rest) begins at `index`:
    a name, or pointer marks followed by a name and then '=', ',', '[', ';' or the end."""
    if index >= len(tokens):
        return False
    token = tokens[index]
    if token.kind == "ident":
        return (
            token.text not in KEYWORDS
            or token.text in SPECIFIER_KEYWORDS
            or token.text == "operator"
        )
    if token.text not in ("*", "&", "&&"):
        return False
    while index < len(tokens) and tokens[index].text in _POINTER_WORDS:
        index += 1
    if index >= len(tokens) or tokens[index].kind != "ident" or tokens[index].text in KEYWORDS:
        return False
    return index + 1 == len(tokens) or tokens[index + 1].text in ("=", ",", "[", ";", ")")


def parse_declarator(
    tokens: list[Token], index: int, names: NameResolver
) -> tuple[Declarator, int]:
    """Read the declarator at `index` with its initializer; returns it and the index after."""
    declarator = Declarator(name=None)
    while index < len(tokens) and (
        tokens[index].text in _POINTER_WORDS or skip_attributes(tokens, index) != index
    ):
        if tokens[index].text in _POINTER_WORDS:
            declarator.pointer.append(tokens[index].text)
            index += 1
        else:
            index = skip_attributes(tokens, index)
    if index < len(tokens) and tokens[index].text == "[":  # a structured binding
        close = matching(tokens, index)
        declarator.bindings = [t for t in tokens[index + 1 : close] if t.kind == "ident"]
        index = close + 1
    elif (
        index + 1 < len(tokens)
        and tokens[index].text == "("
        and tokens[index + 1].text in ("*", "&", "^")
    ):
        close = matching(tokens, index)  # '(*name)': a pointer to a function or an array
        inner, _ = parse_declarator(tokens[index + 1 : close], 0, names)
        declarator.name, declarator.pointer = inner.name, declarator.pointer + inner.pointer
        declarator.array_sizes = inner.array_sizes
        index = close + 1
        if index < len(tokens) and tokens[index].text == "(":  # the pointee's parameters
            index = _skip_suffixes(tokens, matching(tokens, index) + 1)
    else:
        index = _declarator_name(tokens, index, declarator)
    index = _suffixes(tokens, index, declarator, names)
    return declarator, _initializer(tokens, index, declarator)


def _declarator_name(tokens: list[Token], index: int, declarator: Declarator) -> int:
    if index < len(tokens) and tokens[index].text == "...":
        index += 1
    start = index
    while index < len(tokens):
        token = tokens[index]
        if token.text == "operator":
            declarator.name = token
            return _skip_operator_symbol(tokens, index + 1)
        if token.kind == "ident" and token.text not in KEYWORDS:
            declarator.name = token
            index += 1
            if index < len(tokens) and tokens[index].text == "<" and index > start:  # A<T>::f
                close = matching_angle(tokens, index)
                if close + 1 < len(tokens) and tokens[close + 1].text == "::":
                    index = close + 1
            if index < len(tokens) and tokens[index].text == "::":
                declarator.qualified = True
                index += 1
                continue
            return index
        if token.text == "~" or (token.text == "::" and index == start):
            declarator.qualified = declarator.qualified or token.text == "::"
            index += 1
            continue
        return index
    return index


def _skip_operator_symbol(tokens: list[Token], index: int) -> int:
    """Index after the symbol of `operator+`, `operator()`, `operator[]`, `operator new`..."""
    if index < len(tokens) and tokens[index].text in ("(", "["):
        return index + 2
    return index + 1


def _suffixes(tokens: list[Token], index: int, declarator: Declarator, names: NameResolver) -> int:
    """Read array sizes and a parameter list (or a parenthesised initializer)."""
    while index < len(tokens):
        text = tokens[index].text
        if skip_attributes(tokens, index) != index:  # int x __attribute__((unused)), asm("r")
            index = skip_attributes(tokens, index)
        elif text == "[":
            close = matching(tokens, index)
            declarator.array_sizes.append(tokens[index + 1 : close])
            index = close + 1
        elif text == "(" and declarator.parameters is None:
            close = matching(tokens, index)
            inside = tokens[index + 1 : close]
            if (
                declarator.name is not None
                and not declarator.array_sizes
                and not _is_parameter_list(inside, names)
            ):
                declarator.initializer = inside  # direct initialisation: float4 v(a, b, c, d)
                return close + 1
            declarator.parameters = inside
            index = _skip_suffixes(tokens, close + 1)
        else:
            return index
    return index


def _skip_suffixes(tokens: list[Token], index: int) -> int:
    """Skip what may follow a parameter list: cv, ref, noexcept(...), attributes, '-> T'."""
    while index < len(tokens):
        text = tokens[index].text
        if text in _AFTER_PARAMETERS:
            index += 1
        elif text in ("noexcept", "throw"):
            index += 1
            if index < len(tokens) and tokens[index].text == "(":
                index = matching(tokens, index) + 1
        elif text == "->":  # a trailing return type runs to the initializer or the end
            while index < len(tokens) and tokens[index].text not in ("=", ",", ";"):
                index = (
                    matching(tokens, index) + 1 if tokens[index].text in ("(", "[") else index + 1
                )
        elif skip_attributes(tokens, index) != index:
            index = skip_attributes(tokens, index)
        else:
            return index
    return index


def _is_parameter_list(inside: list[Token], names: NameResolver) -> bool:
    """Whether '( ... )' after a declarator name holds parameters rather than initial values."""
    if not inside:
        return True
    first = inside[0]
    if first.text in TYPE_KEYWORDS or first.text in SPECIFIER_KEYWORDS or first.text in CLASS_KEYS:
        return True
    if first.kind != "ident" or first.text in KEYWORDS:
        return first.text in ("...", "__attribute__") or texts(inside[:2]) == ["[", "["]
    return names.kind_of(first.text) in ("type", None, "name", "macro", "namespace")


def _initializer(tokens: list[Token], index: int, declarator: Declarator) -> int:
    """Read '= expr', '{...}' or a bit-field width; returns the index after it."""
    if index >= len(tokens):
        return index
    text = tokens[index].text
    if text == "{":
        close = matching(tokens, index)
        declarator.initializer = tokens[index : close + 1]
        return close + 1
    if text in ("=", ":"):
        end = index + 1
        while end < len(tokens) and tokens[end].text != ",":
            end = matching(tokens, end) + 1 if tokens[end].text in ("(", "[", "{") else end + 1
        value = tokens[index + 1 : end]
        if declarator.is_function and texts(value) in (["0"], ["default"], ["delete"]):
            declarator.special_body = True
        else:
            declarator.initializer = value
        return end
    return index


def parse_parameters(
    tokens: list[Token], names: NameResolver
) -> list[tuple[Specifiers | None, Declarator]]:
    """The parameters of a parameter list: (specifiers, declarator) each; the specifiers are
    None for a parameter the checker cannot read (its declarator then has no name)."""
    parameters = []
    for part in split_top_level(tokens, ",", angles=True):
        if not part or texts(part) in (["void"], ["..."]):
            continue
        spec = parse_specifiers(part, 0, names)
        if spec is None:
            parameters.append((None, Declarator(name=None)))
            continue
        declarator, _ = parse_declarator(part, spec.end, names)
        parameters.append((spec, declarator))
    return parameters


def declared_type(spec: Specifiers, declarator: Declarator) -> str:
    """The declared type as normalised text, e.g. 'const float*' or 'int[]'."""
    words = " ".join(spec.type_words)
    pointer = "".join(
        word if word in ("*", "&", "&&") else f" {word}" for word in declarator.pointer
    )
    return words + pointer + "[]" * len(declarator.array_sizes)
