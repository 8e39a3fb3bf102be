"""The streaming syntax checker against the real compiler, on mutated kernels.

For every valid program of a corpus, seeded random mutants are made (a deleted '}', ';'
or ')', a misspelt name, an inserted undeclared name, a conflicting redeclaration, a
broken entry signature); each is compiled with nvcc and judged by the checker, whole and
streamed in random chunks of 1-8 characters. Reported:

  * false_rejections: the checker rejects a program nvcc accepts (must be 0);
  * caught_fraction: of the programs nvcc rejects, the fraction the checker rejects;
  * caught_before_end_fraction: the fraction the streamed checker stopped before their
    last character, and the characters (tokens) such a stop saves;
  * the same for the ABI (require_abi=True) on mutants of ABI kernels, where the truth is
    "nvcc accepts and the harness's ABI check passes";
  * checker milliseconds per KB of source against nvcc milliseconds per program.

The corpus is VALID_PROGRAMS of tests/test_syntax.py plus, when the package has them,
`sparserl.kernels.all_variant_sources()`; `evaluate` takes any sources. Results go to
eval/results/syntax_vs_nvcc.json.

    python eval/bench_syntax.py --mutants-per-program 4 --workers 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from sparserl.abi import ABIError, check_entry_signature, parse_header
from sparserl.harness.nvcc import compile_check
from sparserl.syntax import StreamingChecker, check
from sparserl.syntax.lexer import Lexer, Token
from sparserl.syntax.vocabulary import KEYWORDS, SPECIFIER_KEYWORDS, TYPE_KEYWORDS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "eval" / "results" / "syntax_vs_nvcc.json"
TEST_PROGRAMS = ROOT / "tests" / "test_syntax.py"


def corpus_sources() -> dict[str, str]:
    """Valid programs by name: the syntax tests' corpus, and the expert kernels if present."""
    spec = importlib.util.spec_from_file_location("syntax_test_programs", TEST_PROGRAMS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sources = {f"test/{name}": source for name, source in module.VALID_PROGRAMS.items()}
    try:
        from sparserl.kernels import all_variant_sources
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
    """The tokens of `source` outside comments and preprocessor lines."""
    lexer = Lexer()
    return [
        t for t in lexer.feed(source) + lexer.finish() if t.kind not in ("comment", "directive")
    ]


def _replace(source: str, token: Token, text: str) -> str:
    return source[: token.start] + text + source[token.end :]


def delete_closer(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Delete one '}', ';' or ')'."""
    candidates = [t for t in tokens if t.text in ("}", ";", ")")]
    return _replace(source, rng.choice(candidates), "") if candidates else None


def misspell_name(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Swap two letters of one use of a name (not its first occurrence)."""
    seen: set[str] = set()
    uses = []
    for index, token in enumerate(tokens):
        if token.kind == "ident" and token.text not in KEYWORDS and len(token.text) > 1:
            if token.text in seen and tokens[index - 1].text not in (".", "->", "::"):
                uses.append(token)
            seen.add(token.text)
    if not uses:
        return None
    token = rng.choice(uses)
    at = rng.randrange(len(token.text) - 1)
    typo = token.text[:at] + token.text[at + 1] + token.text[at] + token.text[at + 2 :]
    return _replace(source, token, typo) if typo != token.text else None


def insert_undeclared(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Add an undeclared name to the value of an assignment, initializer or return."""
    candidates = [t for t in tokens if t.text in ("=", "+=", "return")]
    if not candidates:
        return None
    token = rng.choice(candidates)
    return source[: token.end] + " undeclared_value +" + source[token.end :]


def redeclare(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Repeat a local declaration `[const] T name = ...;` right after itself with another type."""
    candidates = []
    depth = 0
    for index, token in enumerate(tokens[:-2]):
        depth += {"{": 1, "}": -1}.get(token.text, 0)
        name, assign = tokens[index + 1], tokens[index + 2]
        if (
            depth > 0
            and token.text in TYPE_KEYWORDS
            and name.kind == "ident"
            and assign.text == "="
        ):
            start = index - 1
            while start >= 0 and tokens[start].text in SPECIFIER_KEYWORDS:
                start -= 1
            end = next((t for t in tokens[index:] if t.text == ";"), None)
            if start >= 0 and tokens[start].text in (";", "{", "}") and end is not None:
                candidates.append((token.text, name.text, end))
    if not candidates:
        return None
    type_name, name, end = rng.choice(candidates)
    other = "double" if type_name != "double" else "int"
    return source[: end.end] + f" {other} {name} = 0;" + source[end.end :]


def break_entry_signature(source: str, tokens: list[Token], rng: random.Random) -> str | None:
    """Change a parameter type of the entry kernel, drop its last parameter, or misspell it."""
    entry = next((i for i, t in enumerate(tokens) if t.text == "sparserl_kernel"), None)
    if entry is None:
        return None
    close = next(i for i in range(entry, len(tokens)) if tokens[i].text == ")")
    choice = rng.randrange(3)
    if choice == 0:
        types = [t for t in tokens[entry:close] if t.text in ("int", "float")]
        return _replace(source, rng.choice(types), "double")
    if choice == 1:
        comma = max(i for i in range(entry, close) if tokens[i].text == ",")
        return source[: tokens[comma].start] + source[tokens[close].start :]
    return _replace(source, tokens[entry], "sparserl_kernal")


Mutation = Callable[[str, list[Token], random.Random], str | None]
MUTATIONS: dict[str, Mutation] = {
    "delete_closer": delete_closer,
    "misspell_name": misspell_name,
    "insert_undeclared": insert_undeclared,
    "redeclare": redeclare,
    "break_entry_signature": break_entry_signature,
}


def make_mutants(sources: Mapping[str, str], per_program: int, seed: int) -> list[Mutant]:
    """Up to `per_program` distinct mutants of each source, mutation kinds drawn at random."""
    rng = random.Random(seed)
    mutants = []
    for name, source in sources.items():
        tokens = code_tokens(source)
        made = {source}
        for _ in range(per_program * 5):
            if len(made) > per_program:
                break
            kind = rng.choice(list(MUTATIONS))
            mutated = MUTATIONS[kind](source, tokens, rng)
            if mutated is not None and mutated not in made:
                made.add(mutated)
                mutants.append(Mutant(name, kind, mutated))
    return mutants


# ---------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Judgement:
    program: str
    kind: str
    characters: int
    tokens: int
    nvcc_ok: bool
    nvcc_seconds: float
    nvcc_error: str
    has_header: bool
    harness_abi_ok: bool  # the harness's own ABI check: header and entry signature
    checker_ok: bool  # require_abi=False, the whole text
    checker_abi_ok: bool  # require_abi=True
    checker_reason: str
    checker_seconds: float
    stopped_at: int | None  # characters read when the streamed checker stopped it, if it did
    tokens_read: int | None


def judge(mutant: Mutant, chunk_seed: int) -> Judgement:
    compiled = compile_check(mutant.source)
    start = time.perf_counter()
    verdict = check(mutant.source, require_abi=False)
    checker_seconds = time.perf_counter() - start
    tokens = code_tokens(mutant.source)
    stop = streamed_stop(mutant.source, random.Random(chunk_seed))
    return Judgement(
        program=mutant.program,
        kind=mutant.kind,
        characters=len(mutant.source),
        tokens=len(tokens),
        nvcc_ok=compiled.ok,
        nvcc_seconds=compiled.seconds,
        nvcc_error=compiled.errors[0].message if compiled.errors else "",
        has_header="/*@sparserl" in mutant.source,
        harness_abi_ok=harness_abi_ok(mutant.source),
        checker_ok=verdict.ok,
        checker_abi_ok=check(mutant.source, require_abi=True).ok,
        checker_reason=verdict.reason,
        checker_seconds=checker_seconds,
        stopped_at=stop,
        tokens_read=None if stop is None else sum(t.end <= stop for t in tokens),
    )


def streamed_stop(source: str, rng: random.Random) -> int | None:
    """Feed `source` in random chunks of 1-8 characters (require_abi=False); the characters
    read when the checker stopped it, or None when it never did before the end."""
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


def _fraction(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def summarise(judgements: list[Judgement]) -> dict:
    """The headline numbers over all mutants, by mutation kind and by corpus part."""
    summary = _counts(judgements)
    summary["by_kind"] = {
        kind: _counts([j for j in judgements if j.kind == kind], brief=True)
        for kind in sorted({j.kind for j in judgements})
    }
    summary["by_corpus"] = {
        part: _counts([j for j in judgements if j.program.split("/")[0] == part], brief=True)
        for part in sorted({j.program.split("/")[0] for j in judgements})
    }
    return summary


def _counts(judgements: list[Judgement], brief: bool = False) -> dict:
    rejected = [j for j in judgements if not j.nvcc_ok]
    early = [j for j in rejected if j.stopped_at is not None and j.stopped_at < j.characters]
    saved = {id(j): 1 - j.stopped_at / j.characters for j in early}
    counts = {
        "mutants": len(judgements),
        "nvcc_rejected": len(rejected),
        "false_rejections": sum(j.nvcc_ok and not j.checker_ok for j in judgements),
        "caught_fraction": _fraction(sum(not j.checker_ok for j in rejected), len(rejected)),
        "caught_before_end_fraction": _fraction(len(early), len(rejected)),
    }
    if brief:
        return counts
    abi = [j for j in judgements if j.has_header]
    abi_valid = [j for j in abi if j.nvcc_ok and j.harness_abi_ok]
    abi_invalid = [j for j in abi if not (j.nvcc_ok and j.harness_abi_ok)]
    kilobytes = sum(j.characters for j in judgements) / 1000
    return counts | {
        "programs": len({j.program for j in judgements}),
        "mean_characters_saved_when_stopped": _mean(list(saved.values())),
        "mean_tokens_saved_when_stopped": _mean([1 - j.tokens_read / j.tokens for j in early]),
        "mean_characters_saved_per_rejected": _mean([saved.get(id(j), 0.0) for j in rejected]),
        "abi_mutants": len(abi),
        "abi_false_rejections": sum(not j.checker_abi_ok for j in abi_valid),
        "abi_invalid": len(abi_invalid),
        "abi_caught_fraction": _fraction(
            sum(not j.checker_abi_ok for j in abi_invalid), len(abi_invalid)
        ),
        "checker_ms_per_kb": round(
            1000 * sum(j.checker_seconds for j in judgements) / kilobytes, 3
        ),
        "nvcc_ms_per_program": round(
            1000 * sum(j.nvcc_seconds for j in judgements) / len(judgements), 1
        ),
        "mean_program_kb": round(kilobytes / len(judgements), 2),
    }


def evaluate(
    sources: Mapping[str, str] | Iterable[str], per_program: int, seed: int, workers: int
) -> tuple[dict, list[Judgement]]:
    """Mutate, compile and judge; `sources` is a name -> source mapping or any iterable."""
    if not isinstance(sources, Mapping):
        sources = {f"source/{index}": source for index, source in enumerate(sources)}
    refused = [name for name, source in sources.items() if not check(source, require_abi=False).ok]
    refused += [
        f"{name} (require_abi)"
        for name, source in sources.items()
        if "/*@sparserl" in source and not check(source, require_abi=True).ok
    ]
    if refused:
        raise SystemExit(f"the checker rejects valid corpus programs: {refused}")
    mutants = make_mutants(sources, per_program, seed)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        judgements = list(pool.map(judge, mutants, range(seed, seed + len(mutants)), chunksize=4))
    return summarise(judgements), judgements


def scaling(sources: Mapping[str, str], copies: tuple[int, ...] = (1, 4, 16)) -> list[dict]:
    """Checker time per KB on ever longer texts (the corpus repeated, each program in
    its own namespace), fed whole and one character at a time: linear work keeps it flat."""
    programs = [
        f"namespace copy{copy}_{index} {{\n{source.replace('sparserl_kernel', 'entry')}\n}}"
        for copy in range(max(copies))
        for index, source in enumerate(
            s for s in sources.values() if "#include" not in s and "#if" not in s
        )
    ]
    rows = []
    for count in copies:
        text = "\n".join(programs[: count * len(programs) // max(copies)])
        for chunk in (len(text), 1):
            checker = StreamingChecker(require_abi=False)
            start = time.perf_counter()
            for offset in range(0, len(text), chunk):
                checker.feed(text[offset : offset + chunk])
            ok = checker.finish().ok
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "kilobytes": round(len(text) / 1000),
                    "chunk": "whole" if chunk > 1 else "1 char",
                    "ms_per_kb": round(1000 * seconds / (len(text) / 1000), 3),
                    "ok": ok,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mutants-per-program", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    summary, judgements = evaluate(
        corpus_sources(), args.mutants_per_program, args.seed, args.workers
    )
    summary["command"] = "python eval/bench_syntax.py " + " ".join(
        f"--{key.replace('_', '-')} {value}" for key, value in vars(args).items() if key != "output"
    )
    summary["wall_seconds"] = round(time.perf_counter() - started, 1)
    summary["scaling"] = scaling(corpus_sources())
    missed = [asdict(j) for j in judgements if not j.nvcc_ok and j.checker_ok]
    false_rejections = [asdict(j) for j in judgements if j.nvcc_ok and not j.checker_ok]
    report = {"summary": summary, "false_rejections": false_rejections, "missed": missed}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    headline = {k: v for k, v in summary.items() if not k.startswith("by_") and k != "scaling"}
    print(json.dumps(headline, indent=2))
    for group in ("by_kind", "by_corpus"):
        for name, counts in summary[group].items():
            print(f"  {name:22s} {counts}")
    for row in summary["scaling"]:
        print(f"  scaling {row}")
    print(
        f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}"
    )


if __name__ == "__main__":
    main()
