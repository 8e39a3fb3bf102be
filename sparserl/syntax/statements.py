"""Reading complete statements and the heads of braced regions, keeping the symbol table.

The streaming checker cuts the token stream at statement boundaries and hands each
piece here: a statement ended by ';' in a function body (`block_statement`) or at
namespace scope (`namespace_statement`), or the head of a '{' (`function_head`,
`block_head`, ...), which pushes the scopes the region's body will see. Every method
either returns quietly or raises `Doomed` for a certain error; where it cannot follow
the code (macros, templates, a header it cannot see) it declares liberally and checks
nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from sparserl.abi import ENTRY_NAME
from sparserl.syntax.declarations import (
    Declarator,
    Specifiers,
    declared_type,
    parse_declarator,
    parse_parameters,
    parse_specifiers,
)
from sparserl.syntax.expressions import check_expression
from sparserl.syntax.lexer import Token
from sparserl.syntax.names import NameResolver
from sparserl.syntax.scopes import Scope, Symbol, SymbolKind
from sparserl.syntax.token_groups import (
    find_top_level,
    matching,
    skip_attributes,
    split_top_level,
    strip_labels,
    template_prefix,
    texts,
)
from sparserl.syntax.verdict import Doomed
from sparserl.syntax.vocabulary import (
    CONTROL_FLOW_KEYWORDS,
    CONTROL_WITH_HEAD,
    CONTROL_WITHOUT_HEAD,
    KEYWORDS,
    OPAQUE_GROUPS,
    SPECIFIER_KEYWORDS,
    STATEMENT_KEYWORDS,
    TYPE_KEYWORDS,
)

# Region kinds at namespace level, where the ABI's entry kernel may be declared.
ENTRY_REGIONS = ("file", "linkage")

EntryHook = Callable[[list[Token], Token], None]
_STARTS_DECLARATION_OR_STATEMENT = TYPE_KEYWORDS | SPECIFIER_KEYWORDS | STATEMENT_KEYWORDS


class StatementReader:
    """Checks statements and region heads against the symbol table of `names`.

    `on_entry(tokens, name)` is called with the tokens of every declaration of the ABI's
    entry kernel at namespace level (its name token locates any error).
    """

    def __init__(self, names: NameResolver, on_entry: EntryHook):
        self.names = names
        self.symbols = names.symbols
        self.on_entry = on_entry

    # ------------------------------------------------------------------ statements

    def block_statement(self, tokens: list[Token], lenient: bool) -> None:
        """A statement ended by ';' inside a function body."""
        rest, pushed = self._control_prefix(tokens, lenient)
        if rest:
            self._simple_statement(rest, lenient)
        for _ in range(pushed):
            self.symbols.pop()

    def namespace_statement(self, tokens: list[Token], lenient: bool, region_kind: str) -> None:
        """A statement ended by ';' at file or namespace scope (or in an extern "C" block)."""
        tokens = tokens[skip_attributes(tokens, 0) :]
        if not tokens:
            return
        parameter_lists, rest = template_prefix(tokens)
        if parameter_lists or tokens[0].text == "template":
            self._template_declaration(parameter_lists, rest)
            return
        first = tokens[0]
        if first.text in ("using", "namespace"):
            self._using_or_alias(tokens, lenient)
            return
        if first.text in OPAQUE_GROUPS:
            return
        if first.text in CONTROL_FLOW_KEYWORDS:
            raise Doomed(f"'{first.text}' statement outside any function (a missing '{{'?)", first)
        spec = parse_specifiers(tokens, 0, self.names)
        if spec is None:
            if not lenient and self._certainly_not_a_declaration(first):
                raise Doomed("expected a declaration: statements must be inside a function", first)
            check_expression(tokens, self.names, lenient)
            return
        self._declaration(tokens, spec, lenient, region_kind)

    def class_statement(self, tokens: list[Token]) -> None:
        """A member declaration: its names are recorded (for anonymous unions), nothing checked."""
        tokens = strip_labels(tokens)  # public:, private:
        _, tokens = template_prefix(tokens)
        spec = parse_specifiers(tokens, 0, self.names) if tokens else None
        if spec is None:
            return
        index = spec.end
        while index < len(tokens):
            declarator, index = parse_declarator(tokens, index, self.names)
            if declarator.name is not None:
                self.symbols.declare(
                    Symbol(declarator.name.text, _kind_of_declarator(spec, declarator))
                )
            if index >= len(tokens) or tokens[index].text != ",":
                return
            index += 1

    def declare_names_only(self, tokens: list[Token]) -> None:
        """A statement the checker cannot read (it uses a statement-like macro, or a GNU
        statement expression): declare every undeclared name in it, check nothing."""
        for token in tokens:
            if (
                token.kind == "ident"
                and token.text not in KEYWORDS
                and self.names.kind_of(token.text) is None
            ):
                self.symbols.declare(Symbol(token.text, "name", line=token.line))

    def leftover(self, tokens: list[Token], closing: Token) -> None:
        """Tokens between the last ';' and the '}' of a function body or block."""
        tokens = strip_labels(tokens)
        if tokens and not any(self._may_hide_a_semicolon(t) for t in tokens):
            raise Doomed("expected ';' before '}'", closing)

    def enumerators(self, tokens: list[Token], lenient: bool) -> None:
        """Check and declare the enumerators of an enum body (`A = 1, B`), in the scope
        enclosing the enum."""
        for part in split_top_level(tokens, ","):
            if part and part[0].kind == "ident":
                if len(part) > 1 and part[1].text == "=":
                    check_expression(part[2:], self.names, lenient)
                self.symbols.declare(Symbol(part[0].text, "variable", line=part[0].line))

    def export(self, scope: Scope) -> None:
        """Make the names of a closed namespace or anonymous union visible in the enclosing
        scope (uncertainly: argument-dependent lookup and `using` can reach them)."""
        for name, symbol in scope.symbols.items():
            if self.symbols.current.symbols.get(name) is None:
                self.symbols.declare(Symbol(name, symbol.kind, symbol.type, line=symbol.line))

    # ------------------------------------------------------------------ region heads

    def block_head(self, tokens: list[Token], lenient: bool) -> tuple[int, bool]:
        """The head of a block: control statements ('for (...) {') or a macro; pushes the
        block's scope (sharing it with for-loop and condition variables).
        Returns (scopes pushed, whether a macro opened the block)."""
        rest, pushed = self._control_prefix(tokens, lenient)
        if rest:
            check_expression(rest, self.names, lenient)
        if pushed == 0:
            self.symbols.push("block")
            pushed = 1
        return pushed, bool(rest)

    def function_head(
        self, tokens: list[Token], lenient: bool, region_kind: str
    ) -> tuple[int, bool]:
        """The head of a function definition; pushes its template and parameter scopes.
        Returns (scopes pushed, whether the body is read leniently)."""
        parameter_lists, rest = template_prefix(tokens)
        pushed = 0
        if parameter_lists:
            self._push_template_parameters(parameter_lists)
            pushed, lenient = 1, True
        lenient = lenient or region_kind == "class"
        spec = parse_specifiers(rest, 0, self.names)
        declarator = parse_declarator(rest, spec.end, self.names)[0] if spec else None
        if spec is None or declarator is None or not declarator.is_function:
            self.symbols.push("function")  # a constructor, or a head only a macro explains
            return pushed + 1, True
        self._check_type_name(spec, lenient)
        name = declarator.name
        if declarator.qualified or name is None:
            lenient = True  # a member function defined outside its class
        else:
            # a friend defined in a class is found (by argument-dependent lookup) outside it
            friend = "friend" in spec.storage
            scope = (
                self.symbols.enclosing(("file", "namespace"))
                if friend
                else self._outside_templates()
            )
            self.symbols.declare(Symbol(name.text, "function", line=name.line), scope)
            if name.text == ENTRY_NAME and region_kind in ENTRY_REGIONS:
                self.on_entry(tokens, name)
        self.symbols.push("function")
        self._declare_parameters(declarator.parameters or [], lenient)
        return pushed + 1, lenient

    def lambda_head(self, tokens: list[Token], lenient: bool) -> int:
        """`[captures] specifiers (parameters) -> type`: pushes the lambda's scope."""
        close = matching(tokens, 0)
        self.symbols.push("lambda")
        for part in split_top_level(tokens[1:close], ","):  # init-captures declare names
            if len(part) > 1 and part[0].kind == "ident" and part[1].text in ("=", "{"):
                self.symbols.declare(Symbol(part[0].text, "variable", line=part[0].line))
        open_index = find_top_level(tokens, "(", close + 1)
        if open_index >= 0:
            self._declare_parameters(tokens[open_index + 1 : matching(tokens, open_index)], lenient)
        return 1

    def class_head(self, tokens: list[Token]) -> tuple[int, bool]:
        """`struct S : Base` (or enum): declares the tag, pushes the member scope.
        Returns (scopes pushed, whether the class is anonymous)."""
        parameter_lists, rest = template_prefix(tokens)
        pushed = 0
        if parameter_lists:
            self._push_template_parameters(parameter_lists)
            pushed = 1
        spec = parse_specifiers(rest, 0, self.names)
        tag = spec.tag if spec else None
        if tag is not None:
            self.symbols.declare(Symbol(tag.text, "type", line=tag.line), self._outside_templates())
        self.symbols.push("class")
        return pushed + 1, tag is None

    def namespace_head(self, tokens: list[Token]) -> int:
        """`namespace name {`: declares the namespace, pushes its scope."""
        names = [t for t in tokens if t.kind == "ident" and t.text not in ("namespace", "inline")]
        for name in names[:1]:
            self.symbols.declare(Symbol(name.text, "namespace", line=name.line))
        self.symbols.push("namespace")
        return 1

    def reject_function_definition(self, tokens: list[Token], start: int) -> None:
        """Raise when the head `tokens[start:]` of a '{' inside a function body defines a
        function or a template: neither may be defined there (usually a '}' is missing)."""
        first = tokens[start]
        if first.text == "template":
            raise Doomed("a template cannot be declared inside a function (a missing '}'?)", first)
        spec = parse_specifiers(tokens, start, self.names)
        if spec is None or not spec.certain or spec.class_key:
            return
        declarator, end = parse_declarator(tokens, spec.end, self.names)
        is_definition = end == len(tokens) and not (
            declarator.initializer or declarator.special_body
        )
        if declarator.is_function and declarator.name is not None and is_definition:
            raise Doomed(
                f"function '{declarator.name.text}' cannot be defined inside another function "
                "(a missing '}'?)",
                declarator.name,
            )

    def reject_statement_keyword(self, tokens: list[Token], start: int) -> None:
        """Raise when a control-flow keyword follows the first word of the statement
        `tokens[start:]` (outside brackets): the ';' before it is missing."""
        index = start + 1
        while index < len(tokens):
            token = tokens[index]
            if token.text in ("(", "[", "{"):
                index = matching(tokens, index) + 1
                continue
            if token.kind == "ident" and token.text in CONTROL_FLOW_KEYWORDS:
                raise Doomed(
                    f"'{token.text}' cannot appear inside an expression (a missing ';'?)", token
                )
            index += 1

    # ------------------------------------------------------------------ statements, inside

    def _control_prefix(self, tokens: list[Token], lenient: bool) -> tuple[list[Token], int]:
        """Strip labels and control heads ('if (...)', 'for (...)', 'else', 'do') off a
        statement, checking each head. Returns the rest and the number of scopes pushed
        for variables the heads declare."""
        pushed = 0
        while True:
            tokens = self._without_leading_macro(strip_labels(tokens))
            if not tokens:
                return tokens, pushed
            word = tokens[0].text
            if word in CONTROL_WITHOUT_HEAD:
                tokens = tokens[1:]
                continue
            if word not in CONTROL_WITH_HEAD:
                return tokens, pushed
            open_index = (
                2 if word == "if" and len(tokens) > 1 and tokens[1].text == "constexpr" else 1
            )
            if open_index >= len(tokens) or tokens[open_index].text != "(":
                if open_index < len(tokens) and self._may_hide_a_semicolon(tokens[open_index]):
                    return [], pushed
                raise Doomed(f"expected '(' after '{word}'", tokens[0])
            close = matching(tokens, open_index)
            self.symbols.push("block")
            pushed += 1
            self._control_header(word, tokens[open_index + 1 : close], lenient)
            tokens = tokens[close + 1 :]

    def _control_header(self, word: str, header: list[Token], lenient: bool) -> None:
        if word == "catch":
            return
        if word == "for":
            self._for_header(header, lenient)
            return
        parts = split_top_level(header, ";")
        if len(parts) > 2 or (len(parts) == 2 and word == "while"):
            raise Doomed(
                f"too many ';' in the '{word} (...)' condition", header[0] if header else None
            )
        if len(parts) == 2:
            self._simple_statement(parts[0], lenient)
        self._condition(parts[-1], lenient, visible_after=word == "if")

    def _for_header(self, header: list[Token], lenient: bool) -> None:
        parts = split_top_level(header, ";")
        if len(parts) == 3:
            if parts[0]:
                self._simple_statement(parts[0], lenient)
            if parts[1]:
                self._condition(parts[1], lenient)
            check_expression(parts[2], self.names, lenient)
            return
        colon = _range_colon(parts[-1])
        if len(parts) > 3 or colon < 0:
            if any(self._may_hide_a_semicolon(t) for t in header):
                return
            raise Doomed(
                "a 'for (...)' head needs two ';' (or a ':' for a range)",
                header[0] if header else None,
            )
        if len(parts) == 2 and parts[0]:
            self._simple_statement(parts[0], lenient)
        declaration, range_expression = parts[-1][:colon], parts[-1][colon + 1 :]
        check_expression(range_expression, self.names, lenient)
        spec = parse_specifiers(declaration, 0, self.names)
        if spec is not None:
            self._declaration(declaration, spec, lenient, "block")

    def _condition(self, tokens: list[Token], lenient: bool, visible_after: bool = False) -> None:
        """A condition: an expression, or a declaration with an initializer ('int x = f()')."""
        spec = parse_specifiers(tokens, 0, self.names)
        if spec is None or spec.end >= len(tokens):
            check_expression(tokens, self.names, lenient)
            return
        self._declaration(tokens, spec, lenient, "block")
        if visible_after:  # the variable of 'if (T x = ...)' is in scope in the else branch too
            outer = self.symbols.scopes[-2]
            for name, symbol in self.symbols.current.symbols.items():
                self.symbols.declare(
                    Symbol(name, symbol.kind, symbol.type, line=symbol.line), outer
                )

    def _simple_statement(self, tokens: list[Token], lenient: bool) -> None:
        """A statement without control heads, in a function body."""
        first = tokens[0]
        word = first.text
        if word in ("return", "throw", "co_return"):
            check_expression(tokens[1:], self.names, lenient)
        elif word in ("break", "continue"):
            if len(tokens) > 1 and not self._may_hide_a_semicolon(tokens[1]):
                raise Doomed(f"expected ';' after '{word}'", tokens[1])
        elif word == "goto" or word in OPAQUE_GROUPS:
            return
        elif word in ("using", "namespace"):
            self._using_or_alias(tokens, lenient)
        elif word == "template":
            raise Doomed("a template cannot be declared inside a function (a missing '}'?)", first)
        elif word == "extern" and len(tokens) > 1 and tokens[1].kind == "string":
            raise Doomed("extern \"C\" is not allowed inside a function (a missing '}'?)", first)
        elif word in CONTROL_FLOW_KEYWORDS:
            raise Doomed(f"'{word}' cannot start a statement here", first)
        else:
            spec = parse_specifiers(tokens, 0, self.names)
            if spec is None:
                check_expression(tokens, self.names, lenient)
            else:
                self._declaration(tokens, spec, lenient, "block")

    # ------------------------------------------------------------------ declarations

    def _declaration(
        self, tokens: list[Token], spec: Specifiers, lenient: bool, region_kind: str
    ) -> None:
        """Declare the names of one declaration and check its initializers.

        Declarators are split at top-level commas, which template arguments can fake
        (`f<int, float>(x)`): after an initializer with a '<', or a declarator followed by
        anything but ',', the rest is neither declared nor checked.
        """
        self._check_type_name(spec, lenient)
        if spec.class_key and spec.tag is not None and self.names.kind_of(spec.tag.text) is None:
            self.symbols.declare(Symbol(spec.tag.text, "type", line=spec.tag.line))
        certain = spec.certain and not lenient
        index = spec.end
        while index < len(tokens):
            declarator, end = parse_declarator(tokens, index, self.names)
            followed_by = tokens[end] if end < len(tokens) else None
            if followed_by is not None and followed_by.text != ",":
                self._check_declarator_end(declarator, followed_by)
                self.declare_names_only(tokens[index:])  # not understood: declare, check nothing
                return
            self._declare(spec, declarator, certain, region_kind, tokens)
            for size in declarator.array_sizes:
                check_expression(size, self.names, lenient)
            if declarator.is_function:
                self._check_parameter_types(declarator.parameters or [], lenient)
            else:
                check_expression(declarator.initializer, self.names, lenient)
            if any(t.text == "<" for t in declarator.initializer):
                self.declare_names_only(tokens[end + 1 :])  # the ',' may belong to f<a, b>
                return
            index = end + 1

    def _declare(
        self,
        spec: Specifiers,
        declarator: Declarator,
        certain: bool,
        region_kind: str,
        tokens: list[Token],
    ) -> None:
        names = declarator.bindings or ([declarator.name] if declarator.name else [])
        if declarator.qualified:
            return
        kind = _kind_of_declarator(spec, declarator)
        for name in names:
            symbol = Symbol(
                name.text,
                kind,
                declared_type(spec, declarator),
                certain=certain and kind == "variable",
                extern="extern" in spec.storage,
                line=name.line,
            )
            previous = self.symbols.declare(symbol)
            if previous is not None and _conflict(previous, symbol):
                how = "with a different type" if previous.type != symbol.type else "again"
                raise Doomed(
                    f"'{name.text}' is declared {how} in the same scope "
                    f"(first as '{previous.type}' on line {previous.line})",
                    name,
                )
            if name.text == ENTRY_NAME and kind == "function" and region_kind in ENTRY_REGIONS:
                self.on_entry(tokens, name)

    def _check_declarator_end(self, declarator: Declarator, following: Token) -> None:
        """After a named declarator only ',' or the end may follow; a name, a literal or a
        keyword that starts a declaration or statement (`float a float b`) is what a missing
        ';' looks like."""
        if declarator.name is None or declarator.is_function:
            return
        if following.kind == "ident" and following.text in KEYWORDS:
            starts_new = following.text in _STARTS_DECLARATION_OR_STATEMENT
        else:
            starts_new = following.kind in ("number", "string", "ident")
        if starts_new and not self._may_hide_a_semicolon(following):
            raise Doomed(f"expected ';' or ',' before '{following.text}'", following)

    def _check_type_name(self, spec: Specifiers, lenient: bool) -> None:
        unknown = spec.unknown
        if unknown is not None and not lenient and self.names.undeclared_is_error(unknown.text, ""):
            raise Doomed(f"'{unknown.text}' is not declared (it is used as a type)", unknown)

    def _check_parameter_types(self, tokens: list[Token], lenient: bool) -> None:
        for spec, declarator in parse_parameters(tokens, self.names):
            if spec is not None:
                self._check_type_name(spec, lenient)
            check_expression(declarator.initializer, self.names, lenient)

    def _declare_parameters(self, tokens: list[Token], lenient: bool) -> None:
        """Declare a function's (or lambda's) parameters in the current scope."""
        for spec, declarator in parse_parameters(tokens, self.names):
            if spec is None:
                continue
            self._check_type_name(spec, lenient)
            check_expression(declarator.initializer, self.names, lenient)
            self._declare(spec, declarator, spec.certain and not lenient, "parameters", [])

    def _push_template_parameters(self, parameter_lists: list[list[Token]]) -> None:
        self.symbols.push("template")
        for parameters in parameter_lists:
            for part in split_top_level(parameters, ",", angles=True):
                part = part[: find_top_level(part, "=")] if find_top_level(part, "=") >= 0 else part
                names = [t for t in part if t.kind == "ident" and t.text not in KEYWORDS]
                if names:
                    is_type = part[0].text in ("typename", "class", "template")
                    self.symbols.declare(Symbol(names[-1].text, "type" if is_type else "variable"))

    def _template_declaration(self, parameter_lists: list[list[Token]], rest: list[Token]) -> None:
        """A template declared (not defined) at namespace scope, or an explicit instantiation:
        declare its name, check nothing."""
        self._push_template_parameters(parameter_lists)
        spec = parse_specifiers(rest, 0, self.names) if rest else None
        declarator = parse_declarator(rest, spec.end, self.names)[0] if spec else None
        self.symbols.pop()
        if spec is not None and spec.class_key and spec.tag is not None:
            self.symbols.declare(Symbol(spec.tag.text, "type", line=spec.tag.line))
        elif declarator is not None and declarator.name is not None and not declarator.qualified:
            self.symbols.declare(
                Symbol(declarator.name.text, _kind_of_declarator(spec, declarator))
            )

    def _using_or_alias(self, tokens: list[Token], lenient: bool) -> None:
        """`using namespace x;`, `using T = type;`, `using a::b;`, `namespace a = b;`."""
        words = texts(tokens)
        if words[:2] == ["using", "namespace"]:
            target = self.names.kind_of(words[2]) if len(words) > 2 else None
            if target != "namespace" or self.names.symbols.lookup(words[2]) is None:
                self.names.open_world = True  # a header's namespace: its names are unknown
            return
        if len(words) > 2 and words[2] == "=" and tokens[1].kind == "ident":
            kind: SymbolKind = "type" if words[0] == "using" else "namespace"
            if kind == "namespace" and len(words) > 3 and self.names.kind_of(words[3]) is None:
                following = words[4] if len(words) > 4 else ""
                if not lenient and self.names.undeclared_is_error(words[3], following):
                    raise Doomed(f"namespace '{words[3]}' is not declared", tokens[3])
            self.symbols.declare(Symbol(words[1], kind, line=tokens[1].line))
            return
        if words[0] == "using" and tokens[-1].kind == "ident":
            self.symbols.declare(Symbol(words[-1], "name", line=tokens[-1].line))

    # ------------------------------------------------------------------ helpers

    def _may_hide_a_semicolon(self, token: Token) -> bool:
        return token.kind == "ident" and self.names.stands_for_anything(token.text)

    def _without_leading_macro(self, tokens: list[Token]) -> list[Token]:
        """Drop a macro (and its arguments) that precedes a control statement: it expands to
        something a statement may follow, such as `_Pragma("unroll")`."""
        if not tokens or tokens[0].kind != "ident" or self.names.kind_of(tokens[0].text) != "macro":
            return tokens
        after = matching(tokens, 1) + 1 if len(tokens) > 1 and tokens[1].text == "(" else 1
        if after < len(tokens) and tokens[after].text in CONTROL_WITH_HEAD | CONTROL_WITHOUT_HEAD:
            return tokens[after:]
        return tokens

    def _certainly_not_a_declaration(self, first: Token) -> bool:
        """At namespace scope, whether a statement starting with `first` (and not read as a
        declaration) can only be an expression: a value, a literal, an operator."""
        if first.kind == "ident":
            return self.names.kind_of(first.text) in ("variable", "function")
        return first.kind in ("number", "string") or first.text not in ("::", "~", "[")

    def _outside_templates(self) -> Scope:
        return self.symbols.enclosing(("file", "namespace", "class", "function", "block", "lambda"))


def _kind_of_declarator(spec: Specifiers | None, declarator: Declarator) -> SymbolKind:
    if spec is not None and "typedef" in spec.storage:
        return "type"
    return "function" if declarator.is_function else "variable"


def _conflict(previous: Symbol, symbol: Symbol) -> bool:
    """Two certain variable declarations of one name in one scope (extern ones may repeat)."""
    both_variables = previous.kind == symbol.kind == "variable"
    return (
        both_variables
        and previous.certain
        and symbol.certain
        and not (previous.extern or symbol.extern)
    )


def _range_colon(tokens: list[Token]) -> int:
    """Index of the ':' of a range-for head (not one of a conditional '?:'), -1 when none."""
    questions = 0
    index = 0
    while index < len(tokens):
        text = tokens[index].text
        if text in ("(", "[", "{"):
            index = matching(tokens, index) + 1
            continue
        if text == "?":
            questions += 1
        elif text == ":":
            if questions == 0:
                return index
            questions -= 1
        index += 1
    return -1
