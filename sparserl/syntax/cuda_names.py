"""The names CUDA code may use without declaring them: what `nvcc` puts in scope by itself.

nvcc includes `cuda_runtime.h` (and with it the math library, the vector types, the
intrinsics and parts of the C library) in every translation unit. The names those
headers declare at global scope, and the macros they define, are stored in
`cuda_names.txt` (one `kind name` per line; kinds: type, value, namespace, macro),
generated from the installed compiler:

    python -m sparserl.syntax.cuda_names      # rewrites cuda_names.txt

Generation preprocesses an empty file with `nvcc -E` (the device pass) and collects
the declarations at global scope: typedef, struct/class/union/enum names and
`using` aliases are types; functions, variables and enumerators are values;
namespace bodies are skipped, only their names kept.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sparserl.syntax.lexer import Lexer, Token

NAMES_FILE = Path(__file__).with_name("cuda_names.txt")
KINDS = ("type", "value", "namespace", "macro")


@dataclass(frozen=True)
class BuiltinNames:
    """Names in scope in every CUDA translation unit, by kind."""

    types: frozenset[str]
    values: frozenset[str]  # functions, variables, enumerators
    namespaces: frozenset[str]
    macros: frozenset[str]

    def all(self) -> frozenset[str]:
        return self.types | self.values | self.namespaces | self.macros


@functools.cache
def builtin_names() -> BuiltinNames:
    """The names stored in `cuda_names.txt`."""
    by_kind: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for number, line in enumerate(NAMES_FILE.read_text().splitlines(), start=1):
        kind, _, name = line.partition(" ")
        if kind not in by_kind or not name:
            raise ValueError(f"{NAMES_FILE}:{number}: expected '<kind> <name>', got {line!r}")
        by_kind[kind].add(name)
    return BuiltinNames(*(frozenset(by_kind[kind]) for kind in KINDS))


def generate(nvcc: str = "nvcc", arch: str = "sm_90") -> BuiltinNames:
    """Collect the names from the installed compiler (runs nvcc twice, a few seconds)."""
    with tempfile.TemporaryDirectory(prefix="sparserl_names_") as folder:
        empty = Path(folder, "empty.cu")
        empty.write_text("\n")
        base = [nvcc, "-E", f"-arch={arch}", "-std=c++17", str(empty)]
        preprocessed = _run(base)
        macro_lines = _run(base + ["-Xcompiler", "-dM"])
    types, values, namespaces = global_declarations(preprocessed)
    macros = {
        line.split()[1].split("(")[0]
        for line in macro_lines.splitlines()
        if line.startswith("#define ")
    }
    return BuiltinNames(
        frozenset(types), frozenset(values), frozenset(namespaces), frozenset(macros)
    )


def write(names: BuiltinNames, path: Path = NAMES_FILE) -> None:
    lines = [
        f"{kind} {name}"
        for kind, group in zip(KINDS, (names.types, names.values, names.namespaces, names.macros))
        for name in sorted(group)
    ]
    path.write_text("\n".join(lines) + "\n")


def _run(command: list[str]) -> str:
    process = subprocess.run(command, capture_output=True, text=True, check=False)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{process.stderr}")
    return process.stdout


# ---------------------------------------------------------------------------- extraction

_CLASS_KEYS = frozenset({"struct", "class", "union", "enum"})
# Keywords followed by a parenthesised group that declares nothing.
_SKIPPED_GROUPS = frozenset(
    {
        "__attribute__",
        "__location__",
        "__annotate__",
        "alignas",
        "__declspec",
        "noexcept",
        "throw",
        "__asm__",
        "asm",
        "decltype",
        "__align__",
    }
)


def global_declarations(text: str) -> tuple[set[str], set[str], set[str]]:
    """(types, values, namespaces) declared at global scope in preprocessed C++ `text`.

    Linkage blocks (`extern "C" { ... }`) are transparent; the bodies of namespaces,
    functions and classes are skipped (only enumerators leak out of enum bodies).
    """
    lexer = Lexer()
    tokens = [
        t for t in lexer.feed(text) + lexer.finish() if t.kind not in ("directive", "comment")
    ]
    types: set[str] = set()
    values: set[str] = set()
    namespaces: set[str] = set()
    statement: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.text == "{":
            head = _without_skipped_groups([t.text for t in statement])
            close = _matching_brace(tokens, index)
            if head[:1] == ["extern"] and len(head) == 2:  # extern "C" {
                statement = []
                index += 1
                continue
            if "namespace" in head[:2]:
                namespaces.update(head[head.index("namespace") + 1 :][:1])
                statement = []
            elif _class_key(head):
                name_types, enumerators = _class_names(head, tokens[index + 1 : close])
                types.update(name_types)
                values.update(enumerators)
                statement.append(Token("ident", "__body__", token.start, token.line))
            elif "=" in head:  # a braced initialiser
                statement.append(Token("ident", "__body__", token.start, token.line))
            else:  # a function definition
                _declare(statement, types, values)
                statement = []
            index = close + 1
            continue
        if token.text == "}":  # closes a linkage block
            statement = []
        elif token.text == ";":
            _declare(statement, types, values)
            statement = []
        else:
            statement.append(token)
        index += 1
    return types, values, namespaces


def _matching_brace(tokens: list[Token], open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(tokens)):
        if tokens[index].text == "{":
            depth += 1
        elif tokens[index].text == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(tokens) - 1


def _class_key(head: list[str]) -> str | None:
    """The class key ('struct', 'enum', ...) of a head that defines or names a class or enum;
    None for function heads (they have a parameter list)."""
    head = _without_template_prefix(head)
    keys = [word for word in head if word in _CLASS_KEYS]
    return keys[0] if keys and "(" not in head else None


def _class_names(head: list[str], body: list[Token]) -> tuple[set[str], set[str]]:
    """The tag name of a class or enum head, and an enum body's enumerators."""
    head = _without_template_prefix(head)
    key = _class_key(head)
    tag = set(_tag_name(head[head.index(key) + 1 :]) if key else [])
    if key != "enum":
        return tag, set()
    texts = [t.text for t in body]
    enumerators = {
        word
        for position, word in enumerate(texts)
        if word.isidentifier() and (position == 0 or texts[position - 1] == ",")
    }
    return tag, enumerators


def _declare(statement: list[Token], types: set[str], values: set[str]) -> None:
    """Add the names one global declaration statement introduces."""
    words = _without_template_prefix(_without_skipped_groups([t.text for t in statement]))
    if not words or words[0] in ("static_assert", "namespace"):
        return
    if words[0] == "using":
        if len(words) > 2 and words[2] == "=":
            types.add(words[1])
        elif words[1] != "namespace" and words[-1].isidentifier():
            values.add(words[-1])
        return
    is_typedef = "typedef" in words
    key = _class_key(words)
    if key:
        if not is_typedef:
            types.update(_tag_name(words[words.index(key) + 1 :]))
        # the declarators follow the class body, if any, else the tag name
        words = (
            words[words.index("__body__") + 1 :]
            if "__body__" in words
            else words[words.index(key) + 2 :]
        )
        if words[:1] == ["<"]:
            return
    for declarator in _split_top_level(words):
        name = _declarator_name(declarator)
        if name:
            (types if is_typedef else values).add(name)


def _tag_name(after_key: list[str]) -> list[str]:
    """The class or enum name after its key ('enum class E' included), as a 0/1-item list."""
    words = [
        word for word in after_key[:2] if word.isidentifier() and word not in ("class", "struct")
    ]
    return words[:1]


def _split_top_level(words: list[str]) -> list[list[str]]:
    parts, depth, current = [], 0, []
    for word in words:
        depth += word in ("(", "[")
        depth -= word in (")", "]")
        if word == "," and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(word)
    return parts + [current]


def _declarator_name(words: list[str]) -> str | None:
    """The name a declarator introduces: before its first '(' (a function), inside '(*name)'
    (a function pointer), else the last identifier before '=', '[' or ':'."""
    if "(" in words:
        paren = words.index("(")
        if words[paren + 1 : paren + 2] == ["*"] and paren + 2 < len(words):
            return words[paren + 2] if words[paren + 2].isidentifier() else None
        before = words[paren - 1] if paren > 0 else ""
        if paren > 1 and words[paren - 2] == "operator":
            return None
        return before if before.isidentifier() and before != "operator" else None
    for stop in ("=", "[", ":"):
        if stop in words:
            words = words[: words.index(stop)]
    names = [word for word in words if word.isidentifier()]
    return names[-1] if names else None


def _without_template_prefix(words: list[str]) -> list[str]:
    """Drop leading `template <...>` groups (angle brackets matched, '>>' closing two)."""
    while words[:2] == ["template", "<"]:
        depth, index = 0, 1
        for index in range(1, len(words)):
            depth += words[index].count("<") if words[index] in ("<", "<<") else 0
            depth -= words[index].count(">") if words[index] in (">", ">>") else 0
            if depth <= 0:
                break
        words = words[index + 1 :]
    if words[:1] == ["template"]:  # an explicit instantiation
        words = words[1:]
    return words


def _without_skipped_groups(words: list[str]) -> list[str]:
    """Drop attribute-like keywords together with the parenthesised group after them."""
    kept, index = [], 0
    while index < len(words):
        if words[index] in _SKIPPED_GROUPS and words[index + 1 : index + 2] == ["("]:
            depth = 0
            for index in range(index + 1, len(words)):
                depth += words[index] == "("
                depth -= words[index] == ")"
                if depth == 0:
                    break
            index += 1
            continue
        kept.append(words[index])
        index += 1
    return kept


if __name__ == "__main__":
    write(generate())
    print(f"wrote {NAMES_FILE}")
