"""The analyzer never fails and the rewriter never corrupts code, on every file of the real-world corpus.

    python bench/corpus_safety.py [--jobs N] [--corpus DIR] [--set base|wide|all] [--only NAME,...] [--wrap-unknown] [--sample N]

Each distribution first goes through ``autograph-cg lint`` and ``autograph-cg plan`` as a user runs them
(JSON output, every rule selected, no cache): any traceback, "internal error" line, exit status other than
0 or 1, or output that is not JSON counts as an internal error. Then each corpus distribution (``bench/corpus.py``) goes through ``bench/rewrite_corpus.py``'s run on a scratch
copy (every rewritten file re-parses, undo restores it byte for byte, a second rewrite changes nothing, a
fresh analysis sees every wrapper as existing). On top of that, each touched file is rewritten again in
memory and its AST is compared with the original's node by node: exactly the planned calls may be wrapped,
in exactly the wrapper's shape, plus one runtime import at the top level; any other difference fails. At
the end every file of the scratch copy must equal its source. Prints counts; exit status 1 on any failure.

``--sample N`` runs on a fixed sample of N corpus files instead (the CI-sized subset the tests use).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from corpus import CorpusRoot  # noqa: E402
from rewrite_corpus import REPO, Tally, _row, bench_root, corpus_parser, fetch_roots, pool_map  # noqa: E402

from autograph_cg.analysis.plan import WrapSite  # noqa: E402
from autograph_cg.api import Options, analyze  # noqa: E402
from autograph_cg.rewrite import Unsafe, WrapSettings, rewrite_source  # noqa: E402
from autograph_cg.rewrite.shape import WRAPPER, ast_is_runtime_import  # noqa: E402
from autograph_cg.sources import ARTIFACT_FOLDERS, decode, discover  # noqa: E402

SAMPLE_MARKERS = (b"LayerList", b"ModuleList", b"Sequential")
SAMPLE_MAX_LINES = 1200
INTERNAL_ERROR = re.compile(r"internal error(?: in |: )", re.IGNORECASE)  # one line per error, not the closing count


class Mismatch(Exception):
    """The first place where the rewritten AST is not the original with the planned calls wrapped."""


@dataclass
class Safety:
    """One tree's results: the rewrite bench's tally plus the AST comparison and the final byte check."""

    tally: Tally
    ast_checked: int = 0
    ast_exact: int = 0
    wrapped: int = 0  # wrappers the AST comparison counted
    left_changed: int = 0  # files of the scratch copy that differ from their source at the end
    ast_s: float = 0.0  # the second analysis, the in-memory rewrite and the comparison
    internal_errors: int = 0  # of `lint` and `plan` (see `cli_failures`), or raised by the library
    lint_s: float = 0.0
    plan_s: float = 0.0
    problems: tuple[str, ...] = ()

    def failures(self) -> int:
        mismatched = (self.ast_checked - self.ast_exact) + self.left_changed + abs(self.wrapped - self.tally.wrapped)
        return self.tally.failures() + mismatched + self.internal_errors

    def add(self, other: Safety) -> None:
        self.tally.add(other.tally)
        self.ast_checked += other.ast_checked
        self.ast_exact += other.ast_exact
        self.wrapped += other.wrapped
        self.left_changed += other.left_changed
        self.ast_s += other.ast_s
        self.internal_errors += other.internal_errors
        self.lint_s += other.lint_s
        self.plan_s += other.plan_s
        self.problems += other.problems

    def row(self, name: str) -> str:
        return (
            f"{_row(name, self.tally)}; ast-exact {self.ast_exact}/{self.ast_checked} ({self.wrapped} wrappers), "
            f"left changed {self.left_changed}; ast check {self.ast_s:.2f}s; "
            f"lint {self.lint_s:.2f}s, plan {self.plan_s:.2f}s, internal errors {self.internal_errors}"
        )


# ----- the commands as a user runs them --------------------------------------------------------------------


def cli_failures(returncode: int, stdout: str, stderr: str) -> list[str]:
    """What says that a `lint`/`plan` run failed inside the tool rather than reported on the code."""
    out = [line.strip() for line in stderr.splitlines() if INTERNAL_ERROR.search(line)]
    if "Traceback (most recent call last)" in stderr:
        out.append(f"traceback: {stderr.strip().splitlines()[-1]}")
    if returncode not in (0, 1) and not out:
        out.append(f"exit status {returncode}: {(stderr.strip().splitlines() or ['no message'])[-1]}")
    try:
        json.loads(stdout)
    except ValueError:
        out.append("the output is not JSON")
    return out


def run_cli(command: str, path: Path, jobs: int | None = None) -> tuple[float, list[str]]:
    """Seconds and internal failures of `autograph-cg <command>` on one tree: JSON, every rule, no cache."""
    argv = [sys.executable, "-m", "autograph_cg", command, str(path), "--format", "json", "--select", "ALL", "--no-cache", "-q"]
    if jobs:
        argv += ["--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - start, [f"{command}: {line}" for line in cli_failures(proc.returncode, proc.stdout, proc.stderr)]


# ----- the AST comparison ----------------------------------------------------------------------------------


def _utf8_lines(text: str) -> list[bytes]:
    """The source's lines as UTF-8 bytes, split where Python's tokenizer splits them (not str.splitlines)."""
    return [line.encode("utf-8") for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def _col(lines: list[bytes], line: int, byte_col: int) -> int:
    return len(lines[line - 1][:byte_col].decode("utf-8")) + 1


def planned_calls(data: bytes, tree: ast.Module, sites: Sequence[WrapSite]) -> dict[int, WrapSite]:
    """The site of each call node a site spans, by the node's `id()`; Mismatch when a site spans no call."""
    lines = _utf8_lines(decode(data))
    by_span: dict[tuple[int, int, int, int], ast.Call] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.end_lineno is not None and node.end_col_offset is not None:
            key = (
                node.lineno,
                _col(lines, node.lineno, node.col_offset),
                node.end_lineno,
                _col(lines, node.end_lineno, node.end_col_offset),
            )
            by_span[key] = node
    out = {}
    for site in sites:
        s = site.span
        node = by_span.get((s.line, s.col, s.end_line, s.end_col))
        if node is None:
            raise Mismatch(f"line {s.line}: the site {s.line}:{s.col}-{s.end_line}:{s.end_col} spans no call")
        out[id(node)] = site
    return out


def _literal(node: ast.expr) -> object:
    """A keyword's value: a constant, or a dict of constants (a guard)."""
    if isinstance(node, ast.Dict):
        return {_literal(k) if k is not None else None: _literal(v) for k, v in zip(node.keys, node.values)}
    return node.value if isinstance(node, ast.Constant) else None


def _wrapper_inner(node: ast.AST, keywords: tuple[tuple[str, object], ...]) -> ast.AST | None:
    """The wrapped call when `node` is `CUDAGraphedLayer(<call>, k=v...)` with exactly `keywords`, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == WRAPPER):
        return None
    got = tuple((k.arg, _literal(k.value)) for k in node.keywords)
    if len(node.args) != 1 or not isinstance(node.args[0], ast.Call) or got != keywords:
        return None
    return node.args[0]


class _Compare:
    def __init__(self, planned: dict[int, WrapSite], keywords: tuple[tuple[str, int], ...]) -> None:
        self.planned = planned
        self.keywords = keywords
        self.wrapped = 0

    def node(self, old: ast.AST, new: ast.AST, line: int) -> None:
        line = getattr(old, "lineno", line)
        site = self.planned.get(id(old))
        if site is not None:
            inner = _wrapper_inner(new, self.keywords + ((("guard", dict(site.guard)),) if site.guard else ()))
            if inner is not None:
                self.wrapped += 1
                new = inner
        if type(old) is not type(new):
            raise Mismatch(f"line {line}: {type(old).__name__} became {type(new).__name__}")
        for name in old._fields:
            self.value(getattr(old, name, None), getattr(new, name, None), line, name)

    def value(self, old: object, new: object, line: int, name: str) -> None:
        if isinstance(old, list) and isinstance(new, list):
            if len(old) != len(new):
                raise Mismatch(f"line {line}: {name} has {len(new)} items instead of {len(old)}")
            for a, b in zip(old, new):
                self.value(a, b, line, name)
        elif isinstance(old, ast.AST) and isinstance(new, ast.AST):
            self.node(old, new, line)
        elif old != new or type(old) is not type(new):
            raise Mismatch(f"line {line}: {name} {old!r} became {new!r}")


def ast_mismatch(original: bytes, new: bytes, sites: Sequence[WrapSite], settings: WrapSettings = WrapSettings()) -> tuple[int, str | None]:
    """Wrappers added, and the first difference beyond wrapping exactly the planned calls (None when there is none).

    Allowed: a planned call becomes `CUDAGraphedLayer(<the same call>, <settings>, guard=<the site's>)` (or stays as it is, when a
    pragma keeps it), and one `from autograph_cg.runtime import CUDAGraphedLayer` joins the module's top level
    when a wrapper was added and the module had none. Everything else must be equal node for node.
    """
    old_tree = ast.parse(original)
    try:
        new_tree = ast.parse(new)
    except (SyntaxError, ValueError) as exc:
        return 0, f"the rewritten source does not parse: {exc}"
    try:
        compare = _Compare(planned_calls(original, old_tree, sites), settings.keywords())
        old_body = [s for s in old_tree.body if not ast_is_runtime_import(s)]
        new_body = [s for s in new_tree.body if not ast_is_runtime_import(s)]
        compare.value(old_body, new_body, 1, "module body")
    except Mismatch as exc:
        return 0, str(exc)
    had = len(old_tree.body) - len(old_body)
    added = len(new_tree.body) - len(new_body) - had
    expected = 1 if compare.wrapped and not had else 0
    if added != expected:
        return compare.wrapped, f"{added:+d} runtime imports at the top level, expected {expected:+d}"
    return compare.wrapped, None


def _check_file(path: str, sites: list[WrapSite]) -> tuple[str, int, str | None] | None:
    """Rewrite one file in memory and compare ASTs; None when the rewriter refuses the file (counted as skipped)."""
    data = Path(path).read_bytes()
    try:
        edit = rewrite_source(data, sites)
    except Unsafe:
        return None
    if edit.new == data:
        return None
    wrapped, problem = ast_mismatch(data, edit.new, sites)
    if problem is None and wrapped != edit.changed:
        problem = f"{wrapped} wrappers in the AST, the rewriter reported {edit.changed}"
    return path, wrapped, problem


def check_tree(root: CorpusRoot, scratch: Path, jobs: int | None = None, wrap_unknown: bool = False) -> Safety:
    """`lint` and `plan` as a user runs them, then `check_root`; a failure inside the library is counted and the run goes on."""
    lint_s, lint_failures = run_cli("lint", root.path, jobs)
    plan_s, plan_failures = run_cli("plan", root.path, jobs)
    failed = (*lint_failures, *plan_failures)
    try:
        result = check_root(root, scratch, jobs, wrap_unknown)
    except Exception as exc:  # noqa: BLE001 - a failure of the analyzer or the rewriter is what this bench counts
        result = Safety(Tally(), internal_errors=1, problems=(f"rewrite: internal error: {type(exc).__name__}: {exc}",))
    result.lint_s, result.plan_s = lint_s, plan_s
    result.internal_errors += len(failed)
    result.problems = failed + result.problems
    return result


def check_root(root: CorpusRoot, scratch: Path, jobs: int | None = None, wrap_unknown: bool = False) -> Safety:
    """The rewrite bench on a scratch copy of `root`, then the AST comparison of every touched file and a byte check of all."""
    tally = bench_root(root, scratch, jobs, wrap_unknown)
    work = scratch / root.path.name
    start = time.perf_counter()
    analysis = analyze([str(work)], Options(jobs=jobs, use_cache=False, wrap_unknown=wrap_unknown))
    by_path: dict[str, list[WrapSite]] = {}
    for site in analysis.plan.sites:
        if not site.existing:
            by_path.setdefault(site.path, []).append(site)
    checked = pool_map(_check_file, by_path.items(), jobs)
    result = Safety(tally, ast_s=time.perf_counter() - start)
    problems = []
    for item in checked:
        if item is None:
            continue
        path, wrapped, problem = item
        result.ast_checked += 1
        result.wrapped += wrapped
        if problem is None:
            result.ast_exact += 1
        else:
            problems.append(f"{os.path.relpath(path, work)}: {problem}")
    for f in sorted(root.path.rglob("*.py")):
        copy = work / f.relative_to(root.path)
        if not copy.is_file() or copy.read_bytes() != f.read_bytes():
            result.left_changed += 1
            problems.append(f"{f.relative_to(root.path)}: differs from its source after the run")
    result.problems = tuple(problems)
    return result


# ----- the CI-sized sample ---------------------------------------------------------------------------------


def sample_files(roots: Sequence[CorpusRoot], count: int) -> list[tuple[CorpusRoot, Path]]:
    """A fixed sample: files that build layer containers, not too long, evenly spaced over each distribution.

    Only files the analyzer reads by default (not under `dist/`, `build/`, ...), so that each sampled file is analyzed.
    """
    per_root = [
        [
            f
            for f in sorted(Path(s.path) for s in discover([str(r.path)])[0])
            if any(m in (data := f.read_bytes()) for m in SAMPLE_MARKERS) and b"def forward" in data and data.count(b"\n") <= SAMPLE_MAX_LINES
        ]
        for r in roots
    ]
    quota = [0] * len(roots)
    left = count
    while left and any(q < len(files) for q, files in zip(quota, per_root)):
        for i, files in enumerate(per_root):
            if left and quota[i] < len(files):
                quota[i] += 1
                left -= 1
    return [(root, files[k * len(files) // q]) for root, files, q in zip(roots, per_root, quota) for k in range(q)]


def sample_root(files: Sequence[tuple[CorpusRoot, Path]], dest: Path) -> CorpusRoot:
    """The sampled files as one tree under `dest` (one folder per distribution, paths kept). A `build/` or `dist/`
    folder above a sampled file keeps its `__init__.py`: only as a package is it source rather than build output."""
    written: dict[Path, Path] = {}
    for root, f in files:
        written[dest / root.path.name / f.relative_to(root.path)] = f
        for folder in f.relative_to(root.path).parents:
            init = root.path / folder / "__init__.py"
            if folder.name in ARTIFACT_FOLDERS and init.is_file():
                written[dest / root.path.name / folder / "__init__.py"] = init
    for target, f in written.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    lines = sum(f.read_bytes().count(b"\n") for f in written.values())
    return CorpusRoot("sample", str(len(written)), dest, "", len(written), lines, ())


def main(argv: list[str] | None = None) -> int:
    parser = corpus_parser(__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="check a fixed sample of N corpus files instead of all")
    args = parser.parse_args(argv)
    roots = fetch_roots("corpus_safety", args.corpus, args.set, args.only)
    if roots is None:
        return 1
    total = Safety(Tally())
    with tempfile.TemporaryDirectory(prefix="autograph-cg-safety-") as tmp:
        scratch = Path(tmp)
        if args.sample:
            roots = [sample_root(sample_files(roots, args.sample), scratch / "sample-src" / "sample")]
        for root in roots:
            result = check_tree(root, scratch / "work", args.jobs, args.wrap_unknown)
            print(result.row(f"{root.name}-{root.version}"), flush=True)
            for line in result.problems:
                print(f"  {line}", flush=True)
            total.add(result)
    print(total.row("total"))
    failures = total.failures()
    print(f"checks: {'all held' if failures == 0 else f'{failures} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
