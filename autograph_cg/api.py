"""The Python API: `analyze(paths)` gives findings, verdicts and the plan; the CLI only adds flags and printing."""

from __future__ import annotations

import os
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from autograph_cg.analysis.runner import Entry, FactsCache, Indexer, ProgressSink, ResultCache, SolvedStore, Stamped, forked, paused_gc, run_key, stamp_files
from autograph_cg.analysis.solved import Solved
from autograph_cg.analysis.verdicts import Status, Verdict
from autograph_cg.config import DEFAULT_MIN_KERNELS, Config
from autograph_cg.findings import Finding, SourceError
from autograph_cg.rules.registry import family_of
from autograph_cg.sources import SourceFile, gather

if TYPE_CHECKING:
    from autograph_cg.analysis.eligibility import Package
    from autograph_cg.analysis.facts import ModuleFacts
    from autograph_cg.analysis.plan import Plan

DEFAULT_CACHE = ".autograph-cg-cache"


@dataclass(frozen=True)
class Options:
    config: Config = field(default_factory=Config)
    jobs: int | None = None  # processes; None: one per core
    use_cache: bool = True
    cache_dir: str | None = None  # default: .autograph-cg-cache in the working directory
    force_exclude: bool = False  # apply excludes to files named on the command line too (pre-commit)
    files_alone: bool = False  # files named are all there is; by default their package is analyzed with them
    wrap_unknown: bool = False  # let the plan wrap classes whose verdict is unknown
    plan: bool = True  # False (lint): findings and verdicts only; solving every construction for the plan is skipped
    progress: ProgressSink | None = None


@dataclass(frozen=True)
class Summary:
    files: int
    analyzed: int
    failed: int
    findings: int
    by_family: dict[str, int]
    by_code: dict[str, int]
    verdicts: dict[str, int]
    sites: int | None  # None when the run made no plan (lint)
    lines: int
    internal_errors: int = 0  # analyzer bugs met and contained: the run exits 2

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "analyzed": self.analyzed,
            "failed": self.failed,
            "findings": self.findings,
            "by_family": self.by_family,
            "by_code": self.by_code,
            "verdicts": self.verdicts,
            "sites": self.sites,
            "lines": self.lines,
            "internal_errors": self.internal_errors,
        }


@dataclass(frozen=True)
class Analysis:
    findings: list[Finding]
    errors: list[SourceError]
    plan: Plan | None  # None when `Options.plan` is False
    files: list[str]
    summary: Summary
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # every layer class's (the plan's too)
    lines: dict[str, int] = field(default_factory=dict)  # per file analyzed

    def only(self, shown: frozenset[str]) -> "Analysis":
        """What the analysis says about the files `shown` (their findings, classes, sites and errors), decided with
        every file it read: a file named alone is reported as the run over its whole package reports it."""
        files = [f for f in self.files if f in shown]
        errors = [e for e in self.errors if e.path in shown]
        verdicts = {q: v for q, v in self.verdicts.items() if v.path in shown}
        plan = self.plan.only(shown) if self.plan is not None else None
        findings = [f for f in self.findings if f.path in shown]
        lines = {f: n for f, n in self.lines.items() if f in shown}
        summary = _summary(len(shown), files, lines, errors, findings, verdicts, plan)
        return Analysis(findings, errors, plan, files, summary, verdicts, lines)


def default_min_kernels() -> int:
    """`min-kernels` when neither a flag nor [tool.autograph-cg] sets it: $AUTOGRAPH_CG_MIN_KERNELS, else the
    measured break-even (`DEFAULT_MIN_KERNELS`)."""
    value = os.environ.get("AUTOGRAPH_CG_MIN_KERNELS", "")
    return int(value) if value.isdigit() else DEFAULT_MIN_KERNELS


@contextmanager
def _stack_room(frames: int = 8000) -> Iterator[None]:
    """The verdicts recurse through sublayers and the resolver through values (about eight Python frames per
    value, up to its depth limit of 300): room for both on top of each other, Python's default limit restored after.
    A class nested deeper still ends `unknown` (`Package.verdict`)."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, frames))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


@contextmanager
def _index_room(limit: int) -> Iterator[None]:
    """A file indexed in the middle of the verdicts (`Package`'s `deepen`) gets the room a file indexed first gets,
    `limit` frames above where it starts, not the verdicts' own: the parser's checks of nesting assume Python's limit."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def analyze(paths: list[str], options: Options | None = None) -> Analysis:
    """Analyze the Python files under `paths` as one package: nothing is imported or executed."""
    with paused_gc():
        return _analyze(paths, options)


def _analyze(paths: list[str], options: Options | None) -> Analysis:
    options = options or Options()
    request = gather(paths, options.config.exclude, options.force_exclude, not options.files_alone)
    whole = _whole(request.sources, options)
    shown = whole.only(request.shown) if request.shown is not None else whole
    return replace(shown, errors=sorted(request.errors + shown.errors, key=lambda e: e.path))


def _whole(sources: list[SourceFile], options: Options) -> Analysis:
    """The analysis of `sources` as one package, from the cache of answers when none of them changed. Groups of files
    that do not import each other are judged apart (`groups.py`), side by side in processes of their own."""
    config = options.config
    cache_dir = None
    if options.use_cache:
        cache_dir = Path(options.cache_dir or config.cache_dir or os.environ.get("AUTOGRAPH_CG_CACHE_DIR") or DEFAULT_CACHE)
    stamped, stat_errors = stamp_files(sources)
    settings = (config.select, config.ignore, config.unknown, options.wrap_unknown, config.min_kernels, default_min_kernels(), config.capturable, config.not_capturable)
    keys = _answer_keys(stamped, settings, options.plan)
    results = ResultCache(cache_dir)
    for known in keys:
        cached = results.get(known)
        if isinstance(cached, Analysis):
            return cached
    from autograph_cg.analysis.groups import largest_first, separate  # the resolver and the verdicts: a cached answer needs neither

    facts_cache = FactsCache(cache_dir)
    store = SolvedStore(cache_dir)
    state = store.get(_shape(stamped, settings))  # a state of the whole run: its files were one group last time
    with Indexer(facts_cache, options.jobs, options.progress) as indexer:
        modules, read_errors = _index(indexer, stamped, state.deep if state is not None else frozenset())
        groups = separate(modules)
        if len(groups) <= 1:  # one package (or none could be read): the run it always was
            judged = [_judge(modules, stamped, indexer, store, settings, options, state)]
        else:
            judged = _judge_apart(largest_first(groups), stamped, indexer, facts_cache, store, results, settings, options)
    verdicts, findings, internal, plan = judged[0].answers() if len(judged) == 1 else _joined(judged, modules)
    read_errors = sorted(stat_errors + read_errors + internal, key=lambda e: e.path)
    files = [m.path for m in modules]
    lines = {m.path: m.lines for m in modules}
    summary = _summary(len(sources), files, lines, read_errors, findings, verdicts, plan)
    analysis = Analysis(findings, read_errors, plan, files, summary, verdicts, lines)
    facts_cache.save(file_key for _, file_key, _ in stamped)
    results.put(keys[0], analysis)
    return analysis


_FORKS = sys.platform.startswith("linux")  # groups judged in forked processes, as the index pool's workers are made


def _answer_keys(stamped: list[Stamped], settings: tuple, plan: bool, group: bool = False) -> tuple[str, ...]:
    """The keys an answer for these files may be cached under, its own first: a planned answer serves lint too. A
    group's answer has keys of its own (the run over that group's files alone caches its whole answer)."""
    kind = ("group",) if group else ()
    key = run_key(stamped, repr((*settings, plan, *kind)))
    return (key,) if plan else (key, run_key(stamped, repr((*settings, True, *kind))))


def _shape(stamped: list[Stamped], settings: tuple) -> str:
    """The key of a run's solved state: its files (not their stamps) and settings."""
    return run_key([(source, file_key, (0, 0)) for source, file_key, _ in stamped], repr(settings))


@dataclass
class _Judged:
    """What one group of files answers."""

    verdicts: dict[str, Verdict]
    findings: list[Finding]
    internal: list[SourceError]
    plan: Plan | None
    unresolved: Counter[str]  # what the plan's `unresolved` counts, whole: joined with other groups' counts

    def answers(self) -> tuple[dict[str, Verdict], list[Finding], list[SourceError], Plan | None]:
        return self.verdicts, self.findings, self.internal, self.plan


def _judge_apart(
    groups: list[list[ModuleFacts]],
    stamped: list[Stamped],
    indexer: Indexer,
    facts_cache: FactsCache,
    store: SolvedStore,
    results: ResultCache,
    settings: tuple,
    options: Options,
) -> list[_Judged]:
    """Each group judged apart, in as many processes as `jobs` (this one, with the index pool, and forked ones, which
    index what their verdicts need deeply themselves and write their solved states), each taking the next group left
    when it is done with one; a group whose process failed is judged here after. A group none of whose files changed
    since it was last judged takes that answer (an edit elsewhere loads no state of it)."""
    by_path = {source.path: (source, file_key, stamp) for source, file_key, stamp in stamped}
    forks = min(indexer.jobs, len(groups)) - 1 if _FORKS else 0
    taken = _Turns(forks)

    def answer(group: list[ModuleFacts], indexer: Indexer) -> _Judged:
        stamped = [by_path[m.path] for m in group]
        keys = _answer_keys(stamped, settings, options.plan, group=True)
        for known in keys:
            cached = results.get(known)
            if isinstance(cached, _Judged):
                return cached if options.plan else replace(cached, plan=None, unresolved=Counter())
        found = solved(group, stamped, indexer)
        results.put(keys[0], found)
        return found

    def solved(group: list[ModuleFacts], stamped: list[Stamped], indexer: Indexer) -> _Judged:
        state = store.get(_shape(stamped, settings))
        deep = state.deep if state is not None else frozenset()
        again = {m.path for m in group if m.path in deep and not m.complete}  # edited since: indexed deeply at once
        if again:
            deepened, _ = indexer.index([s for s in stamped if s[0].path in again], deep=True)
            by_module = {m.path: m for m in deepened}
            group = [by_module.get(m.path, m) for m in group]
        return _judge(group, stamped, indexer, store, settings, options, state)

    def judge(indexer: Indexer) -> dict[int, _Judged]:
        parts = {}
        while (place := taken.next()) < len(groups):
            parts[place] = answer(groups[place], indexer)
        return parts

    def apart() -> tuple[dict[int, _Judged], dict[str, Entry]]:
        facts_cache.added.clear()  # what this process indexes goes back to the main one, for its cache
        with Indexer(facts_cache, 1) as alone:
            return judge(alone), facts_cache.added

    waiting = [forked(apart) for _ in range(forks)]
    try:
        parts = judge(indexer)
    finally:  # the forked processes are waited for even when this one failed
        done = [result() for result in waiting]
    for got in done:
        if isinstance(got, tuple):
            parts.update(got[0])
            for file_key, entry in got[1].items():
                facts_cache.put(file_key, *entry)
    for place, group in enumerate(groups):  # taken by a process that failed
        if place not in parts:
            parts[place] = answer(group, indexer)
    return list(parts.values())


class _Turns:
    """The next group to judge, shared by forked processes (one number in shared memory, under a lock)."""

    def __init__(self, forks: int) -> None:
        self._shared = None
        self._next = 0
        if forks:
            import multiprocessing

            self._shared = multiprocessing.get_context("fork").Value("i", 0)

    def next(self) -> int:
        if self._shared is None:
            self._next += 1
            return self._next - 1
        with self._shared.get_lock():
            self._shared.value += 1
            return self._shared.value - 1


def _judge(
    modules: list[ModuleFacts], stamped: list[Stamped], indexer: Indexer, store: SolvedStore, settings: tuple, options: Options, state: Solved | None
) -> _Judged:
    """One group's verdicts, findings and plan, from its last solved state where there is one (`state`), and that state
    kept for the next run when it pays."""
    from autograph_cg.analysis.eligibility import Package

    config = options.config
    by_path = {item[0].path: item for item in stamped}
    limit = sys.getrecursionlimit()

    def deepen(path: str) -> ModuleFacts | None:
        with _index_room(limit):
            return indexer.deepen(by_path[path])

    def judged(modules: list[ModuleFacts], solved: Package | None = None, changed: frozenset[str] | None = None, summaries: frozenset[tuple[str, str]] = frozenset()) -> tuple[Package, list[ModuleFacts]]:
        """The package judged, and its files' facts as it read them last (some indexed deeply meanwhile)."""
        with _stack_room():  # the files are indexed with Python's own limit, which the parser's checks assume
            package = Package(modules, config.keeps, config.unknown, config.capturable, config.not_capturable, solved=solved, ahead=indexer.ahead, changed=changed, summaries=summaries, deepen=deepen)
            package.compute_all()
        return package, [package.deepened.get(m.path, m) for m in modules]

    stamps = {source.path: stamp for source, _, stamp in stamped}
    changed = state.changed({m.path: stamps[m.path] for m in modules}) if state is not None else None
    summaries = state.summaries_changed(modules, changed) if state is not None and changed is not None else None
    if summaries is not None:  # a last run of this shape, and no frame edited since
        (package, modules), carried = judged(modules, state.package, changed, frozenset(summaries)), True
    else:
        (package, modules), carried = judged(modules), False
    walked: set[str] = set()
    while package.shallow_reached - walked:  # files it could not index deeply as it judged (`deepen`): once more
        wanted = package.shallow_reached - walked
        walked |= wanted
        deepened, _ = indexer.index([s for s in stamped if s[0].path in wanted], deep=True)
        deep = {m.path: m for m in deepened}
        package, modules = judged([deep.get(m.path, m) for m in modules], package)
    with _stack_room():
        plan = None
        if options.plan:
            from autograph_cg.analysis.plan import make_plan  # `lint` never plans

            min_kernels = config.min_kernels if config.min_kernels is not None else default_min_kernels()
            plan = make_plan(package, options.wrap_unknown, min_kernels)
        verdicts = package.compute_all()
        findings = package.reachable_findings()
        internal = package.internal_errors()
    # Kept when few were judged again that the next run could keep (not the provisional ones, which every run judges
    # again: 584 of timm's 2,074 results, which made each edit of timm write its state), unless this run planned and
    # the state it kept did not: the plan's answers, which each `rewrite --check` after runs of `lint` would solve
    # afresh, are kept for the next
    had_plan = carried and state is not None and state.planned
    if not carried or (options.plan and not had_plan) or package.judged_anew() * 8 > package.results():
        files = {m.path: (stamps[m.path], m.digests) for m in modules}
        store.put(_shape(stamped, settings), Solved(files, frozenset(m.path for m in modules if m.complete), package, options.plan or had_plan))
    return _Judged(verdicts, findings, internal, plan, package.unresolved_names if options.plan else Counter())


def _joined(parts: list[_Judged], modules: list[ModuleFacts]) -> tuple[dict[str, Verdict], list[Finding], list[SourceError], Plan | None]:
    """The answers of groups judged apart, as one run over all of them orders them: verdicts in the order of the
    classes in the files, findings and errors by place, the plan's lists as `make_plan` sorts them."""
    order: dict[str, int] = {}
    for module in modules:
        for cls in module.classes.values():
            order.setdefault(cls.qualname, len(order))
    verdicts = dict(sorted(((q, v) for part in parts for q, v in part.verdicts.items()), key=lambda item: order[item[0]]))
    findings = sorted((f for part in parts for f in part.findings), key=Finding.sort_key)
    internal = sorted((e for part in parts for e in part.internal), key=lambda e: e.path)
    plans = [part.plan for part in parts if part.plan is not None]
    if not plans:
        return verdicts, findings, internal, None
    from autograph_cg.analysis.plan import joined

    counts = [part.unresolved for part in parts]
    unresolved = Counter({name: sum(c[name] for c in counts) for name in sorted(set().union(*counts))})
    return verdicts, findings, internal, joined(plans, verdicts, unresolved)


def _index(indexer: Indexer, stamped: list[Stamped], deep: frozenset[str]) -> tuple[list[ModuleFacts], list[SourceError]]:
    """Facts of every file; those the last run ended up indexing deeply (`deep`) are indexed so again at once."""
    modules, errors = indexer.index([s for s in stamped if s[0].path not in deep])
    if deep:
        more, more_errors = indexer.index([s for s in stamped if s[0].path in deep], deep=True)
        modules, errors = sorted(modules + more, key=lambda m: m.path), errors + more_errors
    return modules, errors


def _summary(
    seen: int, files: list[str], lines: dict[str, int], errors: list[SourceError], findings: list[Finding], verdicts: dict[str, Verdict], plan: Plan | None
) -> Summary:
    """The counts of one answer: `seen` files, `files` of them analyzed; `errors` of reading and of the analyzer."""
    families = Counter(family_of(f.code).name for f in findings)
    codes = Counter(f.code for f in findings)
    statuses = Counter(v.status.value for v in verdicts.values())
    return Summary(
        files=seen,
        analyzed=len(files),
        failed=sum(1 for e in errors if not e.internal),
        findings=len(findings),
        by_family=dict(sorted(families.items())),
        by_code=dict(sorted(codes.items())),
        verdicts={s.value: statuses.get(s.value, 0) for s in Status},
        sites=sum(1 for s in plan.sites if not s.existing) if plan is not None else None,
        lines=sum(lines.values()),
        internal_errors=sum(1 for e in errors if e.internal),
    )
