"""Reading the names a preprocessed header declares at global scope.

Used only to generate `cuda_names.txt` (see `cuda_names.py`), where the compiler then
confirms which names exist: the scan's job is to tell their kinds. The input is `nvcc -E
-Xcompiler -dD` output: code, line markers and `#define` lines. The scan is shallow on
purpose: it finds each top-level statement and takes the name it declares; linkage
blocks (`extern "C" { ... }`) are transparent, the bodies of namespaces, classes and
functions are skipped (only enumerators leak out of enums).
"""

from __future__ import annotations

from sparserl.syntax.lexer import Lexer

Kind = str  # 'type', 'function' (any value), 'namespace' or 'macro'

_CLASS_KEYS = frozenset({"struct", "class", "union", "enum"})
# Keywords followed by a parenthesised group that declares nothing.
_SKIPPED_GROUPS = frozenset(
    "__attribute__ __location__ __annotate__ alignas __declspec noexcept throw __asm__ asm "
    "decltype __align__".split()
)
_BODY = "{...}"


def global_names(preprocessed: str) -> tuple[dict[str, Kind], set[str]]:
    """(kind of every name declared at global scope or defined as a macro, every identifier
    the code uses): the scan finds most declarations, the identifiers bound what exists."""
    names: dict[str, Kind] = {}
    code_lines = []
    for line in preprocessed.split("\n"):
        if line.startswith("#define "):
            names[line.split()[1].split("(")[0]] = "macro"
        code_lines.append("" if line.startswith("#") else line)  # line markers, #define, #undef
    lexer = Lexer(directives=False)
    tokens = [t for t in lexer.feed("\n".join(code_lines)) + lexer.finish() if t.kind != "comment"]
    for name, kind in _declarations([t.text for t in tokens]):
        names.setdefault(name, kind)
    return names, {t.text for t in tokens if t.kind == "ident"}


def _declarations(words: list[str]) -> list[tuple[str, Kind]]:
    """(name, kind) for each global declaration in a stream of token texts."""
    found: list[tuple[str, Kind]] = []
    statement: list[str] = []
    index = 0
    while index < len(words):
        text = words[index]
        if text == "{":
            head = _without_groups(statement)
            close = _matching_brace(words, index)
            if head[:1] == ["extern"] and len(head) == 2:  # extern "C" {: transparent
                statement = []
                index += 1
                continue
            if "namespace" in head[:2]:
                found += [(name, "namespace") for name in head[head.index("namespace") + 1 :][:1]]
                statement = []
            elif _class_key(head):
                found += _class_names(head, words[index + 1 : close])
                statement.append(_BODY)
            elif any(
                w == "=" and head[i - 1] != "operator" for i, w in enumerate(head)
            ):  # initializer
                statement.append(_BODY)
            else:  # a function definition
                found += _statement_names(head)
                statement = []
            index = close + 1
            continue
        if text == ";":
            found += _statement_names(_without_groups(statement))
            statement = []
        elif text == "}":  # closes a linkage block
            statement = []
        else:
            statement.append(text)
        index += 1
    return found


def _matching_brace(words: list[str], open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(words)):
        depth += {"{": 1, "}": -1}.get(words[index], 0)
        if depth == 0:
            return index
    return len(words) - 1


def _class_key(head: list[str]) -> str | None:
    """The class key of a head that defines or names a class or enum (None for functions)."""
    head = _without_template_prefix(head)
    keys = [word for word in head if word in _CLASS_KEYS]
    return keys[0] if keys and "(" not in head else None


def _tag_name(after_key: list[str]) -> list[str]:
    """The class or enum name after its key ('enum class E' included), as a 0/1-item list."""
    return [
        word for word in after_key[:2] if word.isidentifier() and word not in ("class", "struct")
    ][:1]


def _class_names(head: list[str], body: list[str]) -> list[tuple[str, Kind]]:
    """The tag of a class or enum definition, and an enum body's enumerators."""
    head = _without_template_prefix(head)
    key = _class_key(head) or ""
    names = [(tag, "type") for tag in _tag_name(head[head.index(key) + 1 :])]
    if key == "enum":
        names += [
            (word, "function")
            for position, word in enumerate(body)
            if word.isidentifier() and (position == 0 or body[position - 1] == ",")
        ]
    return names


def _statement_names(words: list[str]) -> list[tuple[str, Kind]]:
    """The names one global declaration introduces."""
    words = _without_template_prefix(words)
    if not words or words[0] in ("static_assert", "namespace"):
        return []
    if words[0] == "using":
        if len(words) > 2 and words[2] == "=":
            return [(words[1], "type")]
        if words[1] != "namespace" and words[-1].isidentifier():
            return [(words[-1], "function")]
        return []
    kind = "type" if "typedef" in words else "function"
    key = _class_key(words)
    names = []
    if key:
        if kind != "type":
            names += [(tag, "type") for tag in _tag_name(words[words.index(key) + 1 :])]
        # the declarators follow the class body, if any, else the tag name
        words = words[words.index(_BODY) + 1 :] if _BODY in words else words[words.index(key) + 2 :]
        if words[:1] == ["<"]:
            return names
    for declarator in _split_top_level(words):
        name = _declarator_name(declarator)
        if name:
            names.append((name, kind))
    return names


def _split_top_level(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    depth = 0
    for word in words:
        depth += (word in ("(", "[")) - (word in (")", "]"))
        if word == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(word)
    return parts


def _declarator_name(words: list[str]) -> str | None:
    """The name a declarator introduces: before its first '(' (a function), inside '(*name)'
    (a function pointer), else the last identifier before '=', '[' or ':'."""
    if "(" in words:
        paren = words.index("(")
        if words[paren + 1 : paren + 2] == ["*"] and paren + 2 < len(words):
            return words[paren + 2] if words[paren + 2].isidentifier() else None
        if paren == 0 or (paren > 1 and words[paren - 2] == "operator"):
            return None
        before = words[paren - 1]
        return before if before.isidentifier() and before != "operator" else None
    for stop in ("=", "[", ":"):
        if stop in words:
            words = words[: words.index(stop)]
    names = [word for word in words if word.isidentifier()]
    return names[-1] if names else None


def _without_template_prefix(words: list[str]) -> list[str]:
    """Drop leading `template <...>` groups (angle brackets matched, '>>' closing two)."""
    while words[:2] == ["template", "<"]:
        depth, end = 0, len(words)
        for index in range(1, len(words)):
            depth += {"<": 1, ">": -1, ">>": -2}.get(words[index], 0)
            if depth <= 0:
                end = index
                break
        words = words[end + 1 :]
    return words[1:] if words[:1] == ["template"] else words  # an explicit instantiation


def _without_groups(words: list[str]) -> list[str]:
    """Drop attribute-like keywords together with the parenthesised group after them."""
    kept: list[str] = []
    index = 0
    while index < len(words):
        if words[index] in _SKIPPED_GROUPS and words[index + 1 : index + 2] == ["("]:
            depth, index = 0, index + 1
            while index < len(words):
                depth += (words[index] == "(") - (words[index] == ")")
                index += 1
                if depth == 0:
                    break
            continue
        kept.append(words[index])
        index += 1
    return kept
