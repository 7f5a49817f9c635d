"""Analyzer speed and results on the real-world corpus, against CPython's own parser as the bound.

    python bench/analyzer_corpus.py [--jobs N] [--repeat R] [--corpus DIR] [--files N] [--edits K]

Prints: the best time of reading and ``ast.parse``-ing every corpus file in a pool of N processes; of indexing
them in the same way, each file alone (the part of ``lint`` done per file, the floor of its cold time); the
cold ``autograph-cg lint`` time (fresh cache dir) with N processes and its ratio to ``ast.parse``; the
warm time (same cache, nothing changed) and whether it reports the same; findings per rule family;
verdict counts; and the files that made the analyzer fail although CPython parses them (must be 0).

The pre-commit path: `--files N` draws N corpus files at random (seeded) and checks that each, analyzed as a
hook analyzes it (the file named alone, so its package comes with it), gets exactly what the run over its whole
package reports for it: findings, the verdicts of its classes, its sites (what `rewrite --check FILE` decides).
`--edits K` copies the corpus, solves each package once with a cache, then edits K files with a forward at
random, one edit at a time, at the top of a forward's body: a comment line and a line printing a tensor (both
leave the summaries as they were), an assignment (it changes the forward's summary); and times the commands a
hook runs on the edited file, `lint FILE` and `rewrite --check FILE`, and `lint` over the whole corpus; each
answer is checked against a run without cache.
Exit status 1 when the analyzer cannot be run, crashed on a parseable file, or a file or edit check failed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

from corpus import CorpusRoot, fetch_all, python_files

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


class BenchError(Exception):
    """A step that cannot produce its figure; the message says which and why."""


def _parse_file(path: str) -> bool:
    """Read and parse one file as the analyzer must; False when CPython rejects it."""
    data = Path(path).read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of third-party code are noise here
        try:
            ast.parse(data, filename=path)
        except (SyntaxError, ValueError):
            return False
    return True


def _index_file(job: tuple[str, str, bool]) -> None:
    """Read and index one file as a cold `lint` does (its default index, no cache): the part of `lint` done per file."""
    from autograph_cg.analysis.runner import index_one

    path, module, is_package = job
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index_one(path, module, is_package, Path(path).read_bytes())


def _pool_time(work: Callable[[Any], Any], items: list[Any], jobs: int, repeat: int) -> tuple[float, list[Any]]:
    """Best wall time of `work` over `items` in a pool of `jobs` (its start-up included, as the CLI pays it) over
    `repeat` runs, and the last run's results."""
    chunk = max(1, len(items) // (jobs * 8))
    best = float("inf")
    results: list[Any] = []
    for _ in range(repeat):
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(work, items, chunksize=chunk))
        best = min(best, time.perf_counter() - start)
    return best, results


def time_ast_parse(files: list[Path], jobs: int, repeat: int) -> tuple[float, set[str]]:
    """Best wall time over `repeat` runs and the rejected files."""
    paths = [str(f) for f in files]
    best, ok = _pool_time(_parse_file, paths, jobs, repeat)
    return best, {str(Path(p).resolve()) for p, good in zip(paths, ok) if not good}


def time_index(roots: list[CorpusRoot], jobs: int, repeat: int) -> tuple[float, int]:
    """Best wall time of the index alone over the files `lint` reads, and their number: what no whole-program work
    is in, so that `lint cold` less this is the resolver's and the verdicts' share."""
    from autograph_cg.sources import discover

    sources, _ = discover([str(r.path) for r in roots])
    jobs_of = [(s.real or s.path, s.module, s.is_package) for s in sources]
    return _pool_time(_index_file, jobs_of, jobs, repeat)[0], len(jobs_of)


def run_lint(roots: list[CorpusRoot], jobs: int, cache_dir: Path) -> tuple[float, dict]:
    """One `autograph-cg lint` subprocess: wall time and its JSON report."""
    cmd = [
        sys.executable, "-m", "autograph_cg", "lint", *(str(r.path) for r in roots),
        "--format", "json", "--jobs", str(jobs), "--cache-dir", str(cache_dir), "--exit-zero",
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise BenchError(f"autograph-cg lint could not be run: {tail[0]}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise BenchError(f"autograph-cg lint --format json did not print one JSON object: {exc}") from None
    if report.get("version") != 1 or "summary" not in report:
        raise BenchError("autograph-cg lint printed JSON without version 1 and a summary")
    return elapsed, report


def time_lint(roots: list[CorpusRoot], jobs: int, repeat: int, workdir: Path) -> tuple[float, float, dict, dict]:
    """Best cold time (each run on a fresh cache dir) and best warm time (re-run on the last cold cache)."""
    cold = warm = float("inf")
    cold_report = warm_report = {}
    for i in range(repeat):
        cache = workdir / f"cache-{i}"
        elapsed, cold_report = run_lint(roots, jobs, cache)
        cold = min(cold, elapsed)
    for _ in range(repeat):
        elapsed, warm_report = run_lint(roots, jobs, cache)
        warm = min(warm, elapsed)
    return cold, warm, cold_report, warm_report


def check_files(roots: list[CorpusRoot], count: int, seed: int, jobs: int, workdir: Path) -> list[str]:
    """`count` random files analyzed as a hook does, each against its package's whole run: the mismatches."""
    from autograph_cg.api import Options, analyze
    from autograph_cg.sources import package_root

    files = [str(f) for f in python_files(roots)]
    chosen = random.Random(seed).sample(files, min(count, len(files)))
    options = Options(cache_dir=str(workdir / "files-cache"), jobs=jobs)
    wholes: dict[str, object] = {}
    bad: list[str] = []
    for path in chosen:
        package = package_root(path)
        if package not in wholes:
            wholes[package] = analyze([package], options)
        alone = analyze([path], options)
        shown = next((f for f in alone.files if os.path.samefile(f, path)), None)
        # the whole report about the file: findings, verdicts, sites, skipped sites, errors, summary
        if shown is None or alone.only(frozenset({shown})) != wholes[package].only(frozenset({shown})):
            bad.append(path)
    print(f"files: {len(chosen)} drawn (seed {seed}) from {len(wholes)} packages; answered as the whole package: "
          f"{len(chosen) - len(bad)}, differing: {len(bad)}")
    return bad


#: The edits, by kind: two leave the file's summaries as they were, one changes the forward's summary
_EDITS = {"comment": "# an edit", "print": "print({arg})", "assignment": "extra = {arg} * 2"}


def _cli(args: list[str], cwd: Path, jobs: int, cache: Path | None) -> tuple[float, str, int]:
    cache_args = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    cmd = [sys.executable, "-m", "autograph_cg", *args, "--jobs", str(jobs), *cache_args, "-q", "--no-color"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    if proc.returncode not in (0, 1):
        raise BenchError(f"{' '.join(args[:2])} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return time.perf_counter() - start, proc.stdout, proc.returncode


def time_edits(roots: list[CorpusRoot], count: int, seed: int, jobs: int, workdir: Path) -> bool:
    """Edit `count` random files with a forward, one edit at a time, and time a hook's commands on each."""
    copy = workdir / "corpus"
    tops = []
    for root in roots:
        for top in root.top_level:
            shutil.copytree(root.path / top, copy / root.name / top)
            tops.append(f"{root.name}/{top}")
    cache = workdir / "edits-cache"
    files = sorted(p for p in copy.rglob("*.py") if re.search(_FORWARD, p.read_text(errors="replace")))
    chosen = random.Random(seed).sample(files, min(count, len(files)))
    for path in sorted({str(Path(*p.relative_to(copy).parts[:2])) for p in chosen}):
        _cli(["lint", path], copy, jobs, cache)  # the package solved once, as the hook's last run left it
    _cli(["lint", *tops], copy, jobs, cache)
    times: dict[tuple[str, str], list[float]] = {}
    same = True
    for path in chosen:
        rel = str(path.relative_to(copy))
        original = path.read_text()
        match = random.Random(f"{seed}{rel}").choice(list(re.finditer(_FORWARD, original)))
        for kind, line in _EDITS.items():
            indent = match.group(1) + "    "
            path.write_text(original[: match.end()] + indent + line.format(arg=match.group(2)) + "\n" + original[match.end() :])
            for name, args in (("lint FILE", ["lint", rel]), ("rewrite --check FILE", ["rewrite", "--check", rel])):
                elapsed, out, code = _cli(args, copy, jobs, cache)
                times.setdefault((name, kind), []).append(elapsed)
                _, fresh, fresh_code = _cli(args, copy, jobs, None)
                same = same and (out, code) == (fresh, fresh_code)
            times.setdefault(("lint corpus", kind), []).append(_cli(["lint", *tops], copy, jobs, cache)[0])
        path.write_text(original)
    for (name, kind), values in sorted(times.items()):
        values.sort()
        print(f"one file edited ({kind:10}), {name:22}: median {values[len(values) // 2]:5.2f} s, worst {values[-1]:5.2f} s "
              f"({len(values)} files)")
    print(f"edited runs answer as runs without cache: {'yes' if same else 'NO'}")
    return same


_FORWARD = r"\n( +)def forward\(self, (\w+)[^\n]*:\n"


def _comparable(report: dict) -> tuple:
    """What a warm run must reproduce exactly: the summary and every finding."""
    findings = sorted(json.dumps(f, sort_keys=True) for f in report.get("findings", []))
    return json.dumps(report["summary"], sort_keys=True), findings


def _counts(mapping: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(mapping.items())) or "none"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept (default 3)")
    parser.add_argument("--corpus", type=Path, default=None, help="corpus cache (default: see bench/corpus.py)")
    parser.add_argument("--files", type=int, default=0, help="check N random files against their package's run")
    parser.add_argument("--edits", type=int, default=0, help="time a hook's commands after editing K random files")
    parser.add_argument("--seed", type=int, default=24, help="for the files drawn (default 24)")
    parser.add_argument("--skip-cold", action="store_true", help="leave out the cold and warm runs of the whole corpus")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.repeat < 1:
        print("analyzer_corpus: --jobs and --repeat must be at least 1", file=sys.stderr)
        return 2

    try:
        roots = fetch_all(args.corpus)
    except (RuntimeError, OSError) as exc:
        print(f"analyzer_corpus: corpus: {exc}", file=sys.stderr)
        return 1
    files = python_files(roots)
    lines = sum(r.lines for r in roots)
    print(f"corpus: {len(files)} files, {lines} lines in {len(roots)} distributions ({roots[0].path.parent})")

    ok = True
    with tempfile.TemporaryDirectory(prefix="autograph-cg-bench-") as tmp:
        try:
            if args.files:
                ok = not check_files(roots, args.files, args.seed, args.jobs, Path(tmp)) and ok
            if args.edits:
                ok = time_edits(roots, args.edits, args.seed, args.jobs, Path(tmp)) and ok
        except BenchError as exc:
            print(f"analyzer_corpus: {exc}", file=sys.stderr)
            return 1
    if args.skip_cold:
        return 0 if ok else 1

    parse_s, rejected = time_ast_parse(files, args.jobs, args.repeat)
    print(
        f"ast.parse  {args.jobs} processes, best of {args.repeat}: {parse_s:7.2f} s "
        f"({lines / parse_s / 1000:6.0f}k lines/s); CPython rejects {len(rejected)} files"
    )

    index_s, indexed = time_index(roots, args.jobs, args.repeat)
    print(
        f"index      {args.jobs} processes, best of {args.repeat}: {index_s:7.2f} s "
        f"({indexed} files, each alone); {index_s / parse_s:.2f}x ast.parse"
    )

    with tempfile.TemporaryDirectory(prefix="autograph-cg-bench-") as tmp:
        try:
            cold_s, warm_s, cold, warm = time_lint(roots, args.jobs, args.repeat, Path(tmp))
        except BenchError as exc:
            print(f"analyzer_corpus: {exc}", file=sys.stderr)
            return 1
    summary = cold["summary"]
    print(
        f"lint cold  {args.jobs} processes, best of {args.repeat}: {cold_s:7.2f} s "
        f"({lines / cold_s / 1000:6.0f}k lines/s); {cold_s / parse_s:.2f}x ast.parse, {cold_s - index_s:.2f} s beyond the index"
    )
    same = _comparable(cold) == _comparable(warm)
    print(f"lint warm  unchanged files, best of {args.repeat}: {warm_s:7.2f} s; same report as cold: {'yes' if same else 'NO'}")
    print(f"files: {summary['files']} seen, {summary['analyzed']} analyzed, {summary['failed']} failed")
    print(f"findings: {summary['findings']} ({_counts(summary['by_family'])})")
    print(f"verdicts: {_counts(summary['verdicts'])}")

    errors = cold.get("errors", [])
    crashes = [e for e in errors if str(Path(e["path"]).resolve()) not in rejected]
    print(f"analyzer errors: {len(errors)} ({len(errors) - len(crashes)} on files CPython rejects too); crashes: {len(crashes)}")
    for err in crashes[:20]:
        print(f"  crash: {err['path']}: {err['message']}")
    return 0 if not crashes and same and ok else 1


if __name__ == "__main__":
    sys.exit(main())
