"""The rewriter on the real-world corpus: what the plan touches, and whether every edit is safe and reversible.

    python bench/rewrite_corpus.py [--jobs N] [--corpus DIR] [--set base|wide|all] [--only NAME,...] [--wrap-unknown]

Each distribution fetched by ``bench/corpus.py`` is copied into a scratch directory and analyzed as one
package; the plan is then applied in place (the copy, never the cache). Prints, per distribution and in
total: files, planned sites, files the plan touched, files changed and skipped (by reason); for every
changed file whether it re-parses, whether undo gives back the original bytes, and whether a second
rewrite changes it again (per file, and through a fresh analysis of the rewritten tree); and the times of
the analysis, the rewrite, and the undo. Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from corpus import SETS, CorpusRoot, fetch_all

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograph_cg.api import Options, analyze  # noqa: E402
from autograph_cg.rewrite import Status, rewrite_files, rewrite_source, undo_files, undo_source  # noqa: E402
from autograph_cg.analysis.plan import WrapSite  # noqa: E402

T = TypeVar("T")

@dataclass
class Tally:
    files: int = 0
    sites: int = 0
    touched: int = 0
    changed: int = 0
    wrapped: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    reparsed: int = 0
    undo_exact: int = 0
    stable: int = 0
    seen_existing: int = 0  # wrappers the re-analysis recognised as already there
    lines: int = 0  # lines of the changed files
    replan_changes: int = 0  # files a fresh analysis + rewrite of the rewritten tree would change again
    internal_errors: int = 0  # bugs the analyses and the rewrite met and contained
    analyze_s: float = 0.0
    rewrite_s: float = 0.0
    undo_s: float = 0.0

    def add(self, other: Tally) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)

    def failures(self) -> int:
        lost = self.changed - self.reparsed + self.changed - self.undo_exact + self.changed - self.stable
        return lost + self.replan_changes + abs(self.wrapped - self.seen_existing) + self.internal_errors


def pool_map(fn: Callable[..., T], args: Iterable[tuple[Any, ...]], jobs: int | None) -> list[T]:
    """`fn(*a)` for each tuple of `args`, in a process pool when more than one process is asked for (libcst is slow)."""
    items = list(args)
    workers = jobs or os.cpu_count() or 1
    if workers == 1 or len(items) < 2:
        return [fn(*a) for a in items]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, *zip(*items), chunksize=max(1, len(items) // (workers * 8))))


def _copy_py(src: Path, dest: Path) -> None:
    for f in sorted(src.rglob("*.py")):
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)


def _parses(data: bytes) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(data)
        except (SyntaxError, ValueError):
            return False
    return True


def _recheck(path: str, original: bytes, sites: list[WrapSite]) -> tuple[bool, bool, bool]:
    """Whether a rewritten file re-parses, undo gives back `original`, and rewriting it again changes nothing."""
    new = Path(path).read_bytes()
    return _parses(new), undo_source(new).new == original, rewrite_source(new, sites).new == new


def bench_root(root: CorpusRoot, scratch: Path, jobs: int | None, wrap_unknown: bool) -> Tally:
    work = scratch / root.path.name
    _copy_py(root.path, work)
    options = Options(jobs=jobs, use_cache=False, wrap_unknown=wrap_unknown)
    t = Tally()

    start = time.perf_counter()
    analysis = analyze([str(work)], options)
    t.analyze_s = time.perf_counter() - start
    t.files = len(analysis.files)
    new_sites = [s for s in analysis.plan.sites if not s.existing]
    t.sites = len(new_sites)
    by_path: dict[str, list[WrapSite]] = {}
    for s in new_sites:
        by_path.setdefault(s.path, []).append(s)
    t.touched = len(by_path)
    originals = {p: Path(p).read_bytes() for p in by_path}

    start = time.perf_counter()
    report = rewrite_files(new_sites, t.files, errors=analysis.errors, jobs=jobs)
    t.rewrite_s = time.perf_counter() - start

    for result in report.files:
        if result.status is Status.SKIPPED and result.path in by_path:
            t.skipped[result.kind] += 1
    changed = [r for r in report.files if r.status is Status.CHANGED]
    t.changed = len(changed)
    t.wrapped = sum(r.sites for r in changed)
    t.lines = sum(originals[r.path].count(b"\n") for r in changed)

    # A fresh analysis of the rewritten tree must see every wrapper as existing and plan nothing new.
    replan = analyze([str(work)], options)
    again: dict[str, list[WrapSite]] = {}
    for s in replan.plan.sites:
        again.setdefault(s.path, []).append(s)
    t.replan_changes = len(rewrite_files(replan.plan.sites, len(replan.files), write=False, errors=replan.errors, jobs=jobs).changed)
    t.internal_errors = analysis.summary.internal_errors + replan.summary.internal_errors + t.skipped["internal-error"]
    checks = pool_map(_recheck, [(r.path, originals[r.path], again.get(r.path, [])) for r in changed], jobs)
    for r, (reparsed, undo_exact, stable) in zip(changed, checks):
        t.reparsed += reparsed
        t.undo_exact += undo_exact
        t.seen_existing += sum(s.existing for s in again.get(r.path, ()))
        t.stable += stable

    start = time.perf_counter()
    undo = undo_files(list(by_path))
    t.undo_s = time.perf_counter() - start
    restored = sum(Path(p).read_bytes() == data for p, data in originals.items())
    if restored != len(originals) or undo.skipped:
        print(f"  undo on disk restored {restored} of {len(originals)} files", file=sys.stderr)
        t.replan_changes += len(originals) - restored
    return t


def _row(name: str, t: Tally) -> str:
    skipped = ", ".join(f"{n} {k}" for k, n in sorted(t.skipped.items())) or "0"
    return (
        f"{name:<22} {t.files:5d} files {t.sites:5d} sites {t.touched:4d} touched {t.changed:4d} changed "
        f"(skipped: {skipped}); {t.wrapped} wrapped, {t.seen_existing} seen again as existing; "
        f"reparse {t.reparsed}/{t.changed} undo-exact {t.undo_exact}/{t.changed} stable {t.stable}/{t.changed} "
        f"re-plan changes {t.replan_changes}, internal errors {t.internal_errors}; analyze {t.analyze_s:.2f}s, rewrite {t.rewrite_s:.2f}s "
        f"({t.lines} lines), undo {t.undo_s:.2f}s"
    )


def corpus_parser(description: str) -> argparse.ArgumentParser:
    """The options of every benchmark that rewrites the corpus."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=None, help="processes (default: one per core)")
    parser.add_argument("--corpus", type=Path, default=None, help="corpus cache (default: see bench/corpus.py)")
    parser.add_argument("--set", choices=sorted(SETS), default="base", help="which distributions (default: base; see bench/corpus.py)")
    parser.add_argument("--only", default="", help="comma-separated distribution names of the set to run (default: all of them)")
    parser.add_argument("--wrap-unknown", action="store_true", help="let the plan wrap classes whose verdict is unknown")
    return parser


def fetch_roots(tool: str, corpus: Path | None, name: str = "base", only: str = "") -> list | None:
    """The distributions of set `name` (those named in `only`, when given), or None after saying on stderr why not."""
    wanted = {n.strip() for n in only.split(",") if n.strip()}
    distributions = tuple(d for d in SETS[name] if not wanted or d[0] in wanted)
    unknown = wanted - {d[0] for d in distributions}
    if unknown:
        print(f"{tool}: not in the {name} set: {', '.join(sorted(unknown))}", file=sys.stderr)
        return None
    try:
        return fetch_all(corpus, distributions)
    except (RuntimeError, OSError) as exc:
        print(f"{tool}: cannot fetch the corpus: {exc}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    args = corpus_parser(__doc__.splitlines()[0]).parse_args(argv)
    roots = fetch_roots("rewrite_corpus", args.corpus, args.set, args.only)
    if roots is None:
        return 1
    total = Tally()
    with tempfile.TemporaryDirectory(prefix="autograph-cg-rewrite-bench-") as scratch:
        for root in roots:
            t = bench_root(root, Path(scratch), args.jobs, args.wrap_unknown)
            print(_row(f"{root.name}-{root.version}", t), flush=True)
            total.add(t)
    print(_row("total", total))
    failures = total.failures()
    print(f"checks: {'all held' if failures == 0 else f'{failures} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
