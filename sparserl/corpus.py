"""The licence-filtered CUDA source corpus the policy is pretrained on.

`build_corpus` walks folders of CUDA/C++ sources and keeps only files whose licence
is one of `ALLOWED_LICENCES`. A file's licence is decided by the first of these that
says anything:

1. an ``SPDX-License-Identifier:`` line in its first `SPDX_SEARCH_LINES` lines;
2. a licence notice in its leading comment (the comment blocks before the first line
   of code), classified by `classify_licence_text`;
3. the nearest licence file (``LICENSE``, ``COPYING``, ...) in its folder or a parent
   folder, up to the source's root;
4. the source's own fallback licence file (for installed wheels, whose licence sits
   in ``*.dist-info`` rather than above the code).

A licence that is recognised but not allowed (GPL, proprietary, Boost, ...) rejects
the file at once; so does finding nothing. Kept files are de-duplicated by the hash
of their whitespace-normalised text, first come first kept.

Texts whose licence the caller vouches for (this project's own kernels) can be added
as `DeclaredDocument`s. The output folder holds ``corpus.jsonl`` (one ``{path,
licence, sha256, text}`` object per kept file, text exactly as on disk),
``manifest.csv`` (every file seen: kept, duplicate or rejected, with the reason) and
``summary.json`` (file counts and bytes by status, source and licence).
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from pathlib import Path

from tqdm import tqdm

ALLOWED_LICENCES = frozenset(
    {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "CC0-1.0", "Unlicense", "ISC"}
)
# SPDX exceptions only ever add permissions; we accept the one we have read.
# LLVM-exception waives Apache-2.0's attribution conditions for compiled object code.
ALLOWED_EXCEPTIONS = frozenset({"LLVM-exception"})
DEFAULT_EXTENSIONS = (".cu", ".cuh", ".h", ".hpp", ".inl")
LICENCE_FILE_NAMES = (
    "LICENSE",
    "LICENSE.txt",
    "LICENSE.md",
    "LICENSE.rst",
    "LICENCE",
    "COPYING",
    "COPYING.txt",
)
SPDX_SEARCH_LINES = 30
CORPUS_FILE = "corpus.jsonl"
MANIFEST_FILE = "manifest.csv"
SUMMARY_FILE = "summary.json"


# --------------------------------------------------------------------------- SPDX


class SpdxSyntaxError(ValueError):
    """An SPDX licence expression that does not parse."""


_SPDX_LINE = re.compile(r"SPDX-License-Identifier:\s*(.*)")
_SPDX_TOKEN = re.compile(r"\s*(\(|\)|[A-Za-z0-9.+:-]+)")
_CANONICAL_IDS = {name.lower(): name for name in ALLOWED_LICENCES | ALLOWED_EXCEPTIONS}


def find_spdx_expression(text: str) -> str | None:
    """The SPDX expression(s) in the first `SPDX_SEARCH_LINES` lines of `text`.

    Several ``SPDX-License-Identifier`` lines are joined with AND (the file is under
    all of them). Returns None when there is none.
    """
    expressions = []
    for line in text.splitlines()[:SPDX_SEARCH_LINES]:
        match = _SPDX_LINE.search(line)
        if match:
            # Drop a comment closer that shares the line: `/* SPDX-...: MIT */`.
            expression = re.split(r"\*/|-->", match.group(1))[0].strip()
            expressions.append(expression)
    if not expressions:
        return None
    if len(expressions) == 1:
        return expressions[0]
    return " AND ".join(f"({expression})" for expression in expressions)


def spdx_expression_allowed(expression: str) -> bool:
    """Whether an SPDX licence expression lets us use the file.

    ``A OR B`` is allowed when either side is, ``A AND B`` when both are, and
    ``A WITH exception`` when A is allowed and the exception is in
    `ALLOWED_EXCEPTIONS`. Licence ids match case-insensitively; a trailing ``+``
    ("or later") keeps the id's verdict.

    Raises:
        SpdxSyntaxError: the expression does not parse (names the expression).
    """
    tokens = _tokenize_spdx(expression)
    parser = _SpdxParser(tokens, expression)
    allowed = parser.or_expression()
    if parser.position != len(tokens):
        raise SpdxSyntaxError(
            f"SPDX expression {expression!r}: unexpected {tokens[parser.position]!r}"
        )
    return allowed


def _tokenize_spdx(expression: str) -> list[str]:
    tokens, position = [], 0
    expression = expression.rstrip()
    while position < len(expression):
        match = _SPDX_TOKEN.match(expression, position)
        if match is None:
            raise SpdxSyntaxError(
                f"SPDX expression {expression!r}: unexpected character at {position}"
            )
        tokens.append(match.group(1))
        position = match.end()
    if not tokens:
        raise SpdxSyntaxError("empty SPDX expression")
    return tokens


class _SpdxParser:
    """Recursive descent over SPDX tokens, evaluating 'allowed' as it goes.

    Grammar: or := and (OR and)*; and := with (AND with)*;
    with := primary [WITH exception]; primary := licence-id | "(" or ")".
    """

    def __init__(self, tokens: list[str], expression: str):
        self.tokens = tokens
        self.expression = expression
        self.position = 0

    def _peek_operator(self) -> str | None:
        if self.position < len(self.tokens):
            token = self.tokens[self.position].upper()
            if token in ("AND", "OR", "WITH"):
                return token
        return None

    def _next(self, what: str) -> str:
        if self.position >= len(self.tokens):
            raise SpdxSyntaxError(f"SPDX expression {self.expression!r}: expected {what}")
        token = self.tokens[self.position]
        self.position += 1
        return token

    def or_expression(self) -> bool:
        allowed = self.and_expression()
        while self._peek_operator() == "OR":
            self.position += 1
            allowed = self.and_expression() or allowed
        return allowed

    def and_expression(self) -> bool:
        allowed = self.with_expression()
        while self._peek_operator() == "AND":
            self.position += 1
            allowed = self.with_expression() and allowed
        return allowed

    def with_expression(self) -> bool:
        allowed = self.primary()
        if self._peek_operator() == "WITH":
            self.position += 1
            exception = self._next("an exception id after WITH")
            allowed = allowed and _CANONICAL_IDS.get(exception.lower()) in ALLOWED_EXCEPTIONS
        return allowed

    def primary(self) -> bool:
        token = self._next("a licence id")
        if token == "(":
            allowed = self.or_expression()
            if self._next("')'") != ")":
                raise SpdxSyntaxError(f"SPDX expression {self.expression!r}: expected ')'")
            return allowed
        if token == ")" or token.upper() in ("AND", "OR", "WITH"):
            raise SpdxSyntaxError(
                f"SPDX expression {self.expression!r}: expected a licence id, got {token!r}"
            )
        return _CANONICAL_IDS.get(token.removesuffix("+").lower()) in ALLOWED_LICENCES


# ------------------------------------------------------------ licence texts


@dataclass(frozen=True)
class _Signature:
    """A licence is present when every phrase matches the normalised text."""

    licence: str
    phrases: tuple[str, ...]


# Phrases are regular expressions over normalised text: lower case, every run of
# non-alphanumerics a single space ("and/or" reads "and or", "2.0" reads "2 0").
_SIGNATURES = (
    _Signature(
        "MIT",
        (
            "permission is hereby granted free of charge to any person obtaining a copy",
            "the above copyright notice and this permission notice shall be included in "
            "all copies or substantial portions of the software",
        ),
    ),
    _Signature("MIT", ("under the mit license",)),
    _Signature(
        "Apache-2.0",
        (
            "apache license",
            "version 2 0 january 2004",
            "terms and conditions for use reproduction and distribution",
        ),
    ),
    _Signature("Apache-2.0", ("under the apache license version 2 0",)),
    _Signature("Apache-2.0", ("under the apache license v2 0",)),
    _Signature(
        "BSD-2-Clause",
        (
            "redistributions of source code must retain the above copyright notice "
            "this list of conditions and the following disclaimer",
            "redistributions in binary form must reproduce the above copyright notice "
            "this list of conditions and the following disclaimer in the documentation "
            "and or other materials provided with the distribution",
        ),
    ),
    _Signature(
        "BSD-3-Clause",
        (
            "redistributions of source code must retain the above copyright notice "
            "this list of conditions and the following disclaimer",
            "redistributions in binary form must reproduce the above copyright notice "
            "this list of conditions and the following disclaimer in the documentation "
            "and or other materials provided with the distribution",
            "used to endorse or promote products derived from this software without "
            "specific prior written permission",
        ),
    ),
    _Signature(
        "ISC",
        (
            "permission to use copy modify and (or )?distribute this software for any "
            "purpose with or without fee is hereby granted provided that the above "
            "copyright notice and this permission notice appear in all copies",
        ),
    ),
    _Signature("CC0-1.0", ("cc0 1 0 universal",)),
    _Signature("CC0-1.0", ("creativecommons org publicdomain zero 1 0",)),
    _Signature(
        "Unlicense",
        ("this is free and unencumbered software released into the public domain",),
    ),
    # Recognised and rejected: named so the manifest says why.
    _Signature("GPL", ("gnu general public license",)),
    _Signature("LGPL", ("gnu (lesser|library) general public license",)),
    _Signature("AGPL", ("gnu affero general public license",)),
    _Signature("MPL", ("mozilla public license",)),
    _Signature("BSL-1.0", ("boost software license",)),
    _Signature("NCSA", ("university of illinois ncsa open source license",)),
    _Signature(
        "BSD-4-Clause",
        (
            "all advertising materials mentioning features or use of this software "
            "must display the following acknowledgement",
        ),
    ),
    _Signature("CC-BY", ("creative commons attribution",)),
    _Signature("proprietary", ("nvidia software license",)),
    _Signature("proprietary", ("end user license agreement",)),
    _Signature("proprietary", ("proprietary and confidential",)),
    _Signature("proprietary", ("retain all intellectual property",)),
)
_COMPILED_SIGNATURES = tuple(
    (signature.licence, tuple(re.compile(rf" {phrase} ") for phrase in signature.phrases))
    for signature in _SIGNATURES
)
# A licence whose text contains another's phrases hides that other one.
_SUBSUMES = {
    "BSD-3-Clause": {"BSD-2-Clause"},
    "BSD-4-Clause": {"BSD-3-Clause", "BSD-2-Clause"},
    "LGPL": {"GPL"},
    "AGPL": {"GPL"},
}


def normalise_licence_text(text: str) -> str:
    """Lower-case words separated by single spaces, with a space at each end."""
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def classify_licence_text(text: str) -> frozenset[str]:
    """The licences whose distinctive phrases all appear in `text`.

    `text` is a licence file or a notice in a source comment. The result holds SPDX
    ids for the allowed licences and family names ("GPL", "proprietary", ...) for
    recognised others; it is empty when nothing is recognised. A text carrying
    several licences (a LICENSE that appends third-party notices) yields them all.
    """
    normalised = normalise_licence_text(text)
    found = {
        licence
        for licence, phrases in _COMPILED_SIGNATURES
        if all(phrase.search(normalised) for phrase in phrases)
    }
    hidden = set().union(*(_SUBSUMES.get(licence, set()) for licence in found))
    return frozenset(found - hidden)


def leading_comment(text: str) -> str:
    """The ``//`` and ``/* */`` comments at the top of a source, before any code."""
    position, comments = 0, []
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if text.startswith("//", position):
            end = text.find("\n", position)
        elif text.startswith("/*", position):
            end = text.find("*/", position + 2)
            end = -1 if end < 0 else end + 2
        else:
            return "\n".join(comments)
        end = len(text) if end < 0 else end
        comments.append(text[position:end])
        position = end


# ------------------------------------------------------------ licence decision


@dataclass(frozen=True)
class LicenceDecision:
    """What licence a file is under, where that was read, and whether we may use it.

    `licence` is an SPDX expression ("MIT", "Apache-2.0 WITH LLVM-exception",
    "BSD-3-Clause AND MIT") or "" when nothing was found. `origin` is "spdx",
    "header", "file:<path of the licence file>" or "none".
    """

    licence: str
    origin: str
    allowed: bool


def _spdx_decision(expression: str, origin: str) -> LicenceDecision:
    """A malformed expression is a licence we cannot read: not allowed."""
    try:
        allowed = spdx_expression_allowed(expression)
    except SpdxSyntaxError:
        allowed = False
    return LicenceDecision(expression, origin, allowed)


def _decision_from_text(text: str, origin: str) -> LicenceDecision | None:
    found = classify_licence_text(text)
    if not found:
        return None
    return LicenceDecision(" AND ".join(sorted(found)), origin, found <= ALLOWED_LICENCES)


class LicenceResolver:
    """Decides the licence of files under one source root.

    `fallback_licence_file` covers files with no nearer licence (a wheel's
    ``dist-info`` licence). Licence files are read and classified once each.
    """

    def __init__(self, root: Path, fallback_licence_file: Path | None = None):
        self.root = Path(root)
        self.fallback_licence_file = fallback_licence_file
        self._file_decisions: dict[Path, LicenceDecision] = {}

    def decide(self, path: Path, text: str) -> LicenceDecision:
        """The licence of `path` (under the root), whose decoded content is `text`."""
        expression = find_spdx_expression(text)
        if expression is not None:
            return _spdx_decision(expression, "spdx")
        decision = _decision_from_text(leading_comment(text), "header")
        if decision is not None:
            return decision
        licence_files = self._nearest_licence_files(path.parent)
        if not licence_files and self.fallback_licence_file is not None:
            licence_files = [self.fallback_licence_file]
        if not licence_files:
            return LicenceDecision("", "none", False)
        return self._licence_file_decision(licence_files)

    def _nearest_licence_files(self, folder: Path) -> list[Path]:
        """The licence files of the nearest folder, from `folder` up to the root, that has any."""
        while True:
            found = [folder / name for name in LICENCE_FILE_NAMES if (folder / name).is_file()]
            if found or folder == self.root or self.root not in folder.parents:
                return found
            folder = folder.parent

    def _licence_file_decision(self, licence_files: list[Path]) -> LicenceDecision:
        """Several licence files side by side all apply (AND)."""
        key = licence_files[0]
        if key not in self._file_decisions:
            text = "\n".join(path.read_text(errors="replace") for path in licence_files)
            origin = "file:" + ",".join(self._display(path) for path in licence_files)
            self._file_decisions[key] = _decision_from_text(text, origin) or LicenceDecision(
                "", origin, False
            )
        return self._file_decisions[key]

    def _display(self, path: Path) -> str:
        """`path` relative to the root (with ``..`` for a fallback file outside it)."""
        return Path(os.path.relpath(path, self.root)).as_posix()


# ------------------------------------------------------------ corpus


@dataclass(frozen=True)
class CorpusSource:
    """A folder of sources to walk.

    `name` prefixes the manifest paths (say which package and version it is);
    `exclude` holds fnmatch patterns (``*`` also crosses ``/``) on paths relative to
    `root`, e.g. ``"vendor/*"`` for a vendored copy;
    `fallback_licence_file` is used where no licence is found nearer to a file.
    """

    name: str
    root: Path
    exclude: tuple[str, ...] = ()
    fallback_licence_file: Path | None = None


@dataclass(frozen=True)
class DeclaredDocument:
    """A text whose licence the caller vouches for (e.g. this project's own kernels)."""

    path: str
    text: str
    licence: str


@dataclass(frozen=True)
class ManifestEntry:
    """One file seen while building: `status` is "kept", "duplicate" or "rejected".

    `path` is ``<source name>/<path under the source root>``; `sha256` hashes the
    file's bytes; `bytes` is its size; `note` gives the reason for a rejection or
    names the kept file a duplicate repeats.
    """

    path: str
    status: str
    licence: str
    licence_source: str
    sha256: str
    bytes: int
    note: str = ""


@dataclass(frozen=True)
class CorpusRecord:
    """One kept file of a built corpus: `text` exactly as on disk, `sha256` of its bytes."""

    path: str
    licence: str
    sha256: str
    text: str


@dataclass
class CorpusManifest:
    """Every file `build_corpus` saw, in the order it saw them."""

    entries: list[ManifestEntry] = field(default_factory=list)

    def kept(self) -> list[ManifestEntry]:
        return [entry for entry in self.entries if entry.status == "kept"]

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, [f.name for f in fields(ManifestEntry)])
            writer.writeheader()
            writer.writerows(asdict(entry) for entry in self.entries)

    def summary(self) -> dict:
        """File counts and bytes by status, by source (first path part) and, for kept
        files, by licence."""

        def tally(groups: dict, key: str, entry: ManifestEntry) -> None:
            group = groups.setdefault(key, {"files": 0, "bytes": 0})
            group["files"] += 1
            group["bytes"] += entry.bytes

        by_status: dict = {}
        by_source: dict = {}
        by_licence: dict = {}
        for entry in self.entries:
            tally(by_status, entry.status, entry)
            tally(by_source.setdefault(entry.path.split("/")[0], {}), entry.status, entry)
            if entry.status == "kept":
                tally(by_licence, entry.licence, entry)
        return {"by_status": by_status, "by_source": by_source, "by_licence": by_licence}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dedup_key(text: str) -> str:
    """Hash of the text with every whitespace run made one space."""
    return _sha256(" ".join(text.split()).encode())


def _declared_decision(decision: LicenceDecision, text: str) -> LicenceDecision:
    """A declared document's licence decision, whatever its text."""
    return decision


def _source_files(source: CorpusSource, extensions: tuple[str, ...]) -> list[Path]:
    """Regular files under the root with a wanted extension, sorted, minus excluded ones."""
    found = []
    for folder, subfolders, names in os.walk(source.root):
        subfolders.sort()
        for name in sorted(names):
            path = Path(folder) / name
            relative = path.relative_to(source.root).as_posix()
            if (
                path.suffix in extensions
                and path.is_file()
                and not path.is_symlink()
                and not any(fnmatch.fnmatch(relative, pattern) for pattern in source.exclude)
            ):
                found.append(path)
    return found


def _decode_source(data: bytes) -> tuple[str | None, str]:
    """The text of a source file, or None and the reason it is not usable text."""
    if b"\0" in data:
        return None, "binary (NUL bytes)"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 (byte {error.start})"


class _CorpusWriter:
    """Writes kept texts to corpus.jsonl and records every file in the manifest."""

    def __init__(self, corpus_file: Path):
        self.handle = open(corpus_file, "w", encoding="utf-8")
        self.manifest = CorpusManifest()
        self.first_path_by_key: dict[str, str] = {}

    def add(self, path: str, data: bytes, decide: Callable[[str], LicenceDecision]) -> None:
        """Keep one file's text, or list it as a duplicate or a rejection.

        `decide` gives the licence of the decoded text.
        """
        text, note = _decode_source(data)
        decision = LicenceDecision("", "none", False) if text is None else decide(text)
        sha256 = _sha256(data)
        status = "rejected"
        if text is not None and not decision.allowed:
            note = "licence not allowed" if decision.licence else "no licence found"
        elif text is not None:
            key = _dedup_key(text)
            if key in self.first_path_by_key:
                status, note = "duplicate", f"duplicate of {self.first_path_by_key[key]}"
            else:
                status = "kept"
                self.first_path_by_key[key] = path
                record = CorpusRecord(path, decision.licence, sha256, text)
                self.handle.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
        self.manifest.entries.append(
            ManifestEntry(path, status, decision.licence, decision.origin, sha256, len(data), note)
        )


def build_corpus(
    sources: Iterable[CorpusSource | str | Path],
    out_dir: str | Path,
    *,
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS,
    declared: Iterable[DeclaredDocument] = (),
    progress: bool = True,
) -> CorpusManifest:
    """Walk `sources`, keep the allowed-licence files, write the corpus to `out_dir`.

    Args:
        sources: folders to walk, in priority order (a duplicate keeps its first
            copy). A bare path becomes a `CorpusSource` named after the folder.
        out_dir: created if needed; receives corpus.jsonl, manifest.csv, summary.json.
        extensions: file suffixes to read; others are not looked at (nor listed).
        declared: extra texts with a caller-declared licence, added after the folders.
        progress: show a tqdm bar per source.

    Raises:
        FileNotFoundError: a source root is not a folder.
    """
    sources = [
        source
        if isinstance(source, CorpusSource)
        else CorpusSource(Path(source).name, Path(source))
        for source in sources
    ]
    for source in sources:
        if not Path(source.root).is_dir():
            raise FileNotFoundError(f"corpus source {source.name!r}: {source.root} is not a folder")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = _CorpusWriter(out_dir / CORPUS_FILE)
    with writer.handle:
        for source in sources:
            resolver = LicenceResolver(Path(source.root), source.fallback_licence_file)
            files = _source_files(source, extensions)
            for path in tqdm(files, desc=source.name, unit="file", disable=not progress):
                display = f"{source.name}/{path.relative_to(source.root).as_posix()}"
                writer.add(display, path.read_bytes(), partial(resolver.decide, path))
        for document in declared:
            decision = _spdx_decision(document.licence, "declared")
            writer.add(document.path, document.text.encode(), partial(_declared_decision, decision))
    manifest = writer.manifest
    manifest.write_csv(out_dir / MANIFEST_FILE)
    (out_dir / SUMMARY_FILE).write_text(json.dumps(manifest.summary(), indent=2) + "\n")
    return manifest


def read_corpus(corpus_dir: str | Path) -> Iterator[CorpusRecord]:
    """The records of a corpus written by `build_corpus`, in corpus order.

    Raises:
        FileNotFoundError: `corpus_dir` holds no corpus.jsonl.
        ValueError: a line is not a corpus record (names the file and line).
    """
    corpus_file = Path(corpus_dir) / CORPUS_FILE
    if not corpus_file.is_file():
        raise FileNotFoundError(
            f"{corpus_file} not found: build the corpus first (python data/build_corpus.py)"
        )
    with open(corpus_file, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            try:
                yield CorpusRecord(**json.loads(line))
            except (json.JSONDecodeError, TypeError) as error:
                raise ValueError(
                    f"{corpus_file}, line {line_number}: expected a JSON object with keys "
                    f"{[f.name for f in fields(CorpusRecord)]}"
                ) from error


# ------------------------------------------------------------ where sources live


def find_cccl_dir() -> Path | None:
    """The CCCL headers (cub, thrust, libcu++) of a CUDA install on this machine, if any.

    Looks under $CUDA_HOME, /usr/local/cuda and /usr/local/cuda-* (``include/cccl``
    or ``targets/*/include/cccl``).
    """
    roots = [
        os.environ.get("CUDA_HOME", ""),
        "/usr/local/cuda",
        *sorted(Path("/usr/local").glob("cuda-*")),
    ]
    for root in roots:
        if not root:
            continue
        root = Path(root)
        for candidate in [root / "include" / "cccl", *sorted(root.glob("targets/*/include/cccl"))]:
            if (candidate / "cub").is_dir() or (candidate / "thrust").is_dir():
                return candidate.resolve()
    return None


def sparserl_kernel_documents() -> list[DeclaredDocument]:
    """This project's expert kernels (every `sparserl.kernels.all_variants` source), under
    its own licence, Apache-2.0."""
    from sparserl.kernels import all_variants  # imported here: it pulls in scipy

    return [
        DeclaredDocument(
            f"sparserl-kernels/{variant.variant_id}.cu", variant.source(), "Apache-2.0"
        )
        for variant in all_variants()
    ]
