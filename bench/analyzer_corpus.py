"""Analyzer speed and results on the real-world corpus, against CPython's own parser as the bound.

    python bench/analyzer_corpus.py [--jobs N] [--repeat R] [--corpus DIR]

Prints: the best time of reading and ``ast.parse``-ing every corpus file in a pool of N processes; the
cold ``autograph-cg lint`` time (fresh cache dir) with N processes and its ratio to ``ast.parse``; the
warm time (same cache, nothing changed) and whether it reports the same; findings per rule family;
verdict counts; and the files that made the analyzer fail although CPython parses them (must be 0).
Exit status 1 when the analyzer cannot be run or crashed on a parseable file.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from corpus import CorpusRoot, fetch_all, python_files

REPO = Path(__file__).resolve().parents[1]


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


def time_ast_parse(files: list[Path], jobs: int, repeat: int) -> tuple[float, set[str]]:
    """Best wall time over `repeat` runs (pool start-up included, as the CLI pays it) and the rejected files."""
    paths = [str(f) for f in files]
    chunk = max(1, len(paths) // (jobs * 8))
    best = float("inf")
    rejected: set[str] = set()
    for _ in range(repeat):
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            ok = list(pool.map(_parse_file, paths, chunksize=chunk))
        best = min(best, time.perf_counter() - start)
        rejected = {str(Path(p).resolve()) for p, good in zip(paths, ok) if not good}
    return best, rejected


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

    parse_s, rejected = time_ast_parse(files, args.jobs, args.repeat)
    print(
        f"ast.parse  {args.jobs} processes, best of {args.repeat}: {parse_s:7.2f} s "
        f"({lines / parse_s / 1000:6.0f}k lines/s); CPython rejects {len(rejected)} files"
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
        f"({lines / cold_s / 1000:6.0f}k lines/s); {cold_s / parse_s:.2f}x ast.parse"
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
    return 0 if not crashes and same else 1


if __name__ == "__main__":
    sys.exit(main())
