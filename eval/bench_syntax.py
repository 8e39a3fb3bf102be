"""The streaming syntax checker against the real compiler, on mutated kernels.

For every valid program of a corpus, seeded random mutants are generated (a deleted
'}' ';' or ')', a misspelt name, an inserted undeclared name, a conflicting
redeclaration, a broken entry signature); each is compiled with nvcc and judged by the
checker, whole and streamed. Reported:

  * false rejections: the checker rejects a program nvcc accepts (must be 0);
  * caught: the fraction of nvcc-rejected programs the checker rejects;
  * early: the fraction of nvcc-rejected programs rejected before their last character,
    and the mean fraction of characters (and tokens) a generation stopped there saves;
  * checker time per KB against nvcc time per program.

The corpus is the valid programs of tests/test_syntax.py plus, when the package has
them, `sparserl.kernels.all_variant_sources()`. Results go to eval/results/syntax_vs_nvcc.json.

    python eval/bench_syntax.py --mutants-per-program 20 --workers 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from sparserl.abi import ABIError, check_entry_signature, parse_header
from sparserl.harness.nvcc import compile_check
from sparserl.syntax import StreamingChecker, check
from sparserl.syntax.lexer import Lexer, Token
from sparserl.syntax.vocabulary import KEYWORDS, TYPE_KEYWORDS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "eval" / "results" / "syntax_vs_nvcc.json"
TEST_PROGRAMS = ROOT / "tests" / "test_syntax.py"


# ---------------------------------------------------------------------------- the corpus


def corpus_sources() -> dict[str, str]:
    """Valid programs by name: the test suite's, and the expert kernels when present."""
    spec = importlib.util.spec_from_file_location("test_syntax_programs", TEST_PROGRAMS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sources = {f"test/{name}": source for name, source in module.VALID_PROGRAMS.items()}
    try:
        from sparserl.kernels import all_variant_sources  # written by the project lead
    except ImportError:
        return sources
    for index, source in enumerate(all_variant_sources()):
        sources[f"kernels/{index}"] = source
    return sources


# ---------------------------------------------------------------------------- mutants


@dataclass(frozen=True)
class Mutant:
    program: str
    kind: str
    source: str


def code_tokens(source: str) -> list[Token]:
    lexer = Lexer()
    return [
        t for t in lexer.feed(source) + lexer.finish() if t.kind not in ("comment", "directive")
    ]


def _replace(source: str, token: Token, text: str) -> str:
    return source[: token.start] + text + source[token.end :]


def delete_closer(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    candidates = [t for t in tokens if t.text in ("}", ";", ")")]
    return _replace(source, rng.choice(candidates), "") if candidates else None


def misspell_name(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Misspell one later use of a name that occurs more than once."""
    counts = Counter(t.text for t in tokens if t.kind == "ident")
    uses = [
        t
        for i, t in enumerate(tokens)
        if t.kind == "ident"
        and t.text not in KEYWORDS
        and counts[t.text] > 1
        and len(t.text) > 1
        and tokens[i - 1].text not in (".", "->", "::")
        and any(u.text == t.text for u in tokens[:i])
    ]
    if not uses:
        return None
    token = rng.choice(uses)
    position = rng.randrange(len(token.text) - 1)
    chars = list(token.text)
    chars[position], chars[position + 1] = chars[position + 1], chars[position]
    typo = "".join(chars) if "".join(chars) != token.text else token.text + "x"
    if typo in counts:
        typo = token.text + "_"
    return _replace(source, token, typo)


def insert_undeclared(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Add an undeclared name to the right-hand side of an assignment or initializer."""
    candidates = [t for t in tokens if t.text in ("=", "+=", "return")]
    if not candidates:
        return None
    token = rng.choice(candidates)
    return source[: token.end] + " undeclared_value +" + source[token.end :]


def redeclare(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Repeat a local declaration `T name = ...;` right after itself with another type."""
    depth, candidates = 0, []
    for i, t in enumerate(tokens[:-2]):
        depth += {"{": 1, "}": -1}.get(t.text, 0)
        if (
            depth > 0
            and t.text in TYPE_KEYWORDS
            and tokens[i + 1].kind == "ident"
            and tokens[i + 2].text == "="
        ):
            end = next((u for u in tokens[i:] if u.text == ";"), None)
            if end is not None and tokens[i - 1].text in (";", "{", "}"):
                candidates.append((tokens[i], tokens[i + 1], end))
        if t.text == "for":
            depth += 0
    if not candidates:
        return None
    type_token, name, end = rng.choice(candidates)
    other = "double" if type_token.text != "double" else "int"
    return source[: end.end] + f" {other} {name.text} = 0;" + source[end.end :]


def break_entry_signature(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Change a parameter type, drop the last parameter, or misspell the entry's name."""
    entry = next((i for i, t in enumerate(tokens) if t.text == "sparserl_kernel"), None)
    if entry is None:
        return None
    close = next(i for i in range(entry, len(tokens)) if tokens[i].text == ")")
    choice = rng.randrange(3)
    if choice == 0:
        ints = [t for t in tokens[entry:close] if t.text == "int"]
        return _replace(source, rng.choice(ints), "double") if ints else None
    if choice == 1:
        comma = max(i for i in range(entry, close) if tokens[i].text == ",")
        return source[: tokens[comma].start] + source[tokens[close].start :]
    return _replace(source, tokens[entry], "sparserl_kernal")


MUTATIONS: dict[str, Callable[[str, list[Token], random.Random], str | None]] = {
    "delete_closer": delete_closer,
    "misspell_name": misspell_name,
    "insert_undeclared": insert_undeclared,
    "redeclare": redeclare,
    "break_entry_signature": break_entry_signature,
}


def make_mutants(sources: dict[str, str], per_program: int, seed: int) -> list[Mutant]:
    rng = random.Random(seed)
    mutants = []
    for name, source in sources.items():
        tokens = code_tokens(source)
        seen = {source}
        for _ in range(per_program * 4):
            if sum(m.program == name for m in mutants) >= per_program:
                break
            kind = rng.choice(list(MUTATIONS))
            mutated = MUTATIONS[kind](source, tokens, rng)
            if mutated is not None and mutated not in seen:
                seen.add(mutated)
                mutants.append(Mutant(name, kind, mutated))
    return mutants


# ---------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Judgement:
    program: str
    kind: str
    length: int
    nvcc_ok: bool
    nvcc_seconds: float
    abi_ok: bool  # the harness's own ABI check (header and entry signature)
    checker_ok: bool  # require_abi=False, whole text
    checker_abi_ok: bool  # require_abi=True
    streamed_stop: int | None  # characters read when the streamed checker stopped
    streamed_tokens_read: int | None
    tokens: int
    checker_seconds: float
    reason: str


def judge(mutant: Mutant, chunk_seed: int) -> Judgement:
    compiled = compile_check(mutant.source)
    start = time.perf_counter()
    verdict = check(mutant.source, require_abi=False)
    checker_seconds = time.perf_counter() - start
    abi_verdict = check(mutant.source, require_abi=True)
    stop = streamed_stop(mutant.source, random.Random(chunk_seed))
    tokens = code_tokens(mutant.source)
    return Judgement(
        program=mutant.program,
        kind=mutant.kind,
        length=len(mutant.source),
        nvcc_ok=compiled.ok,
        nvcc_seconds=compiled.seconds,
        abi_ok=harness_abi_ok(mutant.source),
        checker_ok=verdict.ok,
        checker_abi_ok=abi_verdict.ok,
        streamed_stop=stop,
        streamed_tokens_read=None if stop is None else sum(t.end <= stop for t in tokens),
        tokens=len(tokens),
        checker_seconds=checker_seconds,
        reason=verdict.reason,
    )


def streamed_stop(source: str, rng: random.Random) -> int | None:
    """Feed `source` in random chunks of 1-8 characters (require_abi=False); the characters
    read when the checker stopped the stream, or None when it never did before the end."""
    checker = StreamingChecker(require_abi=False)
    position = 0
    while position < len(source):
        step = rng.randint(1, 8)
        verdict = checker.feed(source[position : position + step])
        position += step
        if verdict is not None:
            return verdict.stopped_at
    return None


def harness_abi_ok(source: str) -> bool:
    try:
        header = parse_header(source)
        check_entry_signature(source, header.op, header.format)
    except ABIError:
        return False
    return True


# ---------------------------------------------------------------------------- report


def summarise(judgements: list[Judgement], valid_programs: int) -> dict:
    rejected = [j for j in judgements if not j.nvcc_ok]
    caught = [j for j in rejected if not j.checker_ok]
    early = [j for j in rejected if j.streamed_stop is not None and j.streamed_stop < j.length]
    saved_chars = [1 - j.streamed_stop / j.length for j in early]
    saved_tokens = [1 - j.streamed_tokens_read / j.tokens for j in early if j.tokens]
    abi_programs = [
        j for j in judgements if "sparserl_kernel" in j.reason or j.kind == "break_entry_signature"
    ]
    abi_valid = [j for j in judgements if j.nvcc_ok and j.abi_ok]
    abi_invalid = [
        j for j in judgements if not (j.nvcc_ok and j.abi_ok) and j.program.startswith("test/abi")
    ]
    kilobytes = sum(j.length for j in judgements) / 1000
    by_kind = {}
    for kind in sorted({j.kind for j in judgements}):
        group = [j for j in judgements if j.kind == kind]
        group_rejected = [j for j in group if not j.nvcc_ok]
        by_kind[kind] = {
            "mutants": len(group),
            "nvcc_rejected": len(group_rejected),
            "caught": sum(not j.checker_ok for j in group_rejected),
            "false_rejections": sum(j.nvcc_ok and not j.checker_ok for j in group),
        }
    del abi_programs
    return {
        "valid_programs": valid_programs,
        "mutants": len(judgements),
        "nvcc_rejected": len(rejected),
        "false_rejections": sum(j.nvcc_ok and not j.checker_ok for j in judgements),
        "caught_fraction": len(caught) / max(len(rejected), 1),
        "caught_before_end_fraction": len(early) / max(len(rejected), 1),
        "mean_chars_saved_when_stopped": sum(saved_chars) / max(len(saved_chars), 1),
        "mean_chars_saved_over_rejected": sum(saved_chars) / max(len(rejected), 1),
        "mean_tokens_saved_when_stopped": sum(saved_tokens) / max(len(saved_tokens), 1),
        "abi_false_rejections": sum(not j.checker_abi_ok for j in abi_valid),
        "abi_invalid": len(abi_invalid),
        "abi_invalid_caught_fraction": sum(not j.checker_abi_ok for j in abi_invalid)
        / max(len(abi_invalid), 1),
        "checker_ms_per_kb": 1000
        * sum(j.checker_seconds for j in judgements)
        / max(kilobytes, 1e-9),
        "nvcc_ms_per_program": 1000
        * sum(j.nvcc_seconds for j in judgements)
        / max(len(judgements), 1),
        "mean_program_kb": kilobytes / max(len(judgements), 1),
        "by_kind": by_kind,
    }


def evaluate(
    sources: dict[str, str], per_program: int, seed: int, workers: int
) -> tuple[dict, list[Judgement]]:
    valid_rejections = [
        name for name, source in sources.items() if not check(source, require_abi=False).ok
    ]
    if valid_rejections:
        raise SystemExit(f"the checker rejects valid corpus programs: {valid_rejections}")
    mutants = make_mutants(sources, per_program, seed)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        judgements = list(pool.map(judge, mutants, range(seed, seed + len(mutants))))
    return summarise(judgements, len(sources)), judgements


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mutants-per-program", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sources = corpus_sources()
    summary, judgements = evaluate(sources, args.mutants_per_program, args.seed, args.workers)
    misses = [asdict(j) for j in judgements if j.nvcc_ok != j.checker_ok]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"summary": summary, "disagreements": misses}, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
