"""Apply a plan to files, or undo it: pure edits on bytes (`rewrite_source`, `undo_source`) and the file loop.

Every edit is checked before anything is written: the AST must equal the original's apart from the intended
wrappers and import, and for a rewrite, undoing it must give back exactly what undoing the original gives
(the original itself when it held no wrappers). A file that fails any check is reported and left alone.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection

from autograph_cg.analysis.failures import describe, message
from autograph_cg.analysis.plan import WrapSite
from autograph_cg.analysis.runner import freeze_inherited, paused_gc
from autograph_cg.findings import SourceError
from autograph_cg.rewrite import atomic
from autograph_cg.rewrite.imports import ImportConflict, add_import, has_runtime_import, remove_import
from autograph_cg.rewrite.results import FileResult, RewriteReport, Status
from autograph_cg.rewrite.safety import check_equivalent
from autograph_cg.rewrite.shape import WRAPPER, WrapSettings
from autograph_cg.rewrite.source import Source, Unsafe, load
from autograph_cg.rewrite.transform import Counts, unwrap_all, wrap_sites
from autograph_cg.sources import decode

_WRAPPER_BYTES = WRAPPER.encode()


@dataclass(frozen=True, slots=True)
class SourceEdit:
    new: bytes
    changed: int  # wrappers added (or their guards updated) or removed
    kept: int  # sites a pragma (or a comment inside a wrapper) kept as they were
    text: str  # the decoded original, for diffs


def rewrite_source(data: bytes, sites: Sequence[WrapSite], settings: WrapSettings = WrapSettings()) -> SourceEdit:
    """Wrap `sites` in one file's bytes; raises Unsafe when the file must be left alone."""
    source = load(data)
    texts, counts = wrap_sites(source, sites, settings)
    if counts.missing:
        s = counts.missing[0]
        raise Unsafe(
            "stale-plan",
            f"no call at {s.span.line}:{s.span.col} for {s.wrapped_class} (file changed since it was analyzed?)",
        )
    if not counts.changed and not counts.updated:
        return SourceEdit(data, 0, counts.kept, source.text)
    try:
        present = not counts.changed or has_runtime_import(source)  # updates only: as it was
    except ImportConflict as exc:
        raise Unsafe("conflict", str(exc)) from None
    if not present:  # wrapping only adds wrappers: a statement whose text changed uses the wrapper now
        texts = add_import(source, texts, {i for i, t in enumerate(texts) if t != source.statements[i].text})
    new = source.code(texts)
    # Undo from the new bytes, read as a later run would read them, must give back what undo of the original
    # gives: the original itself when it held no wrappers. Equal bytes need no AST check.
    baseline = _unwrapped(source)[0] if _WRAPPER_BYTES in data else data
    result = _reread(new)
    check_equivalent(source, result, counts.changed, 0 if present else 1)
    if _unwrapped(result)[0] != baseline:
        raise Unsafe("unsafe", "undo would not restore this file exactly")
    return SourceEdit(new, counts.changed + counts.updated, counts.kept, source.text)


def _reread(new: bytes) -> Source:
    """The edited bytes read afresh, as a later run reads them."""
    try:
        return load(new)
    except Unsafe as exc:
        raise Unsafe("unsafe", f"the rewritten source does not read back: {exc}") from None


def _unwrapped(source: Source) -> tuple[bytes, Counts, bool]:
    """The source without rewrite's wrappers and import, the counts, and whether the import went."""
    texts, counts = unwrap_all(source)
    texts, removed = remove_import(source, texts)
    return source.code(texts), counts, removed


def undo_source(data: bytes) -> SourceEdit:
    """Take off rewrite's wrappers and its import; raises Unsafe when the file must be left alone."""
    if _WRAPPER_BYTES not in data:
        return SourceEdit(data, 0, 0, "")
    source = load(data)
    new, counts, removed = _unwrapped(source)
    if new != data:
        check_equivalent(source, _reread(new), -counts.changed, -int(removed))
    return SourceEdit(new, counts.changed, counts.kept, source.text)


def unified_diff(path: str, edit: SourceEdit) -> str:
    """A unified diff with the file's own line endings kept; `git apply`-able for relative paths."""
    old_lines = io.StringIO(edit.text, newline="").readlines()
    new_lines = io.StringIO(decode(edit.new), newline="").readlines()
    a, b = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    out = []
    for line in difflib.unified_diff(old_lines, new_lines, a, b):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


Edit = Callable[[bytes], SourceEdit]


def _apply(path: str, edit: Edit, write: bool, diff: bool) -> FileResult:
    try:
        snap = atomic.read_snapshot(path)
    except OSError as exc:
        return FileResult(path, Status.SKIPPED, kind="unreadable", reason=exc.strerror or str(exc))
    try:
        with paused_gc():  # syntax trees and libcst nodes: many objects, no cycles; the collector's passes cost a third
            result = edit(snap.data)
    except Unsafe as exc:
        return FileResult(path, Status.SKIPPED, kind=exc.kind, reason=str(exc))
    except RecursionError:
        return FileResult(path, Status.SKIPPED, kind="too-deep", reason="nesting too deep to rewrite")
    except Exception as exc:  # a bug of the rewriter on this file: left untouched, the others are still edited
        return FileResult(path, Status.SKIPPED, kind="internal-error", reason=message("", describe(exc)))
    if result.new == snap.data:
        return FileResult(path, Status.UNCHANGED, kept=result.kept)
    if not snap.writable:
        return FileResult(path, Status.SKIPPED, result.changed, result.kept, "read-only", "the file is read-only")
    text = unified_diff(path, result) if diff else ""
    if not write:
        return FileResult(path, Status.WOULD_CHANGE, result.changed, result.kept, diff=text)
    try:
        atomic.replace(snap, result.new)
    except atomic.FileChanged:
        return FileResult(path, Status.SKIPPED, result.changed, result.kept, "changed", "changed since it was read; not overwritten")
    except OSError as exc:
        return FileResult(path, Status.SKIPPED, result.changed, result.kept, "unwritable", exc.strerror or str(exc))
    return FileResult(path, Status.CHANGED, result.changed, result.kept, diff=text)


_POOL_THRESHOLD = 4  # below this many files, starting processes costs more than it saves


def _new_pool(workers: int) -> ProcessPoolExecutor:
    """Worker processes for the edits, each freezing the heap it inherits (`freeze_inherited`)."""
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=freeze_inherited)


def _run(report: RewriteReport, tasks: list[tuple[str, Edit]], write: bool, diff: bool, jobs: int | None, pool: EditPool | None = None) -> None:
    """Edit each file, in a process pool when there are several (larger files first; through `pool` when given);
    results in task order."""
    workers = min(jobs or os.cpu_count() or 1, len(tasks))
    if workers < 2 or len(tasks) < _POOL_THRESHOLD:
        report.files.extend(_apply(path, edit, write, diff) for path, edit in tasks)
        return
    if pool is not None:
        report.files.extend(pool.run(tasks, write, diff))
        return
    order = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i][0]))
    with _new_pool(workers) as running:
        futures = {i: running.submit(_apply, tasks[i][0], tasks[i][1], write, diff) for i in order}
        report.files.extend(futures[i].result() for i in range(len(tasks)))


class EditPool:
    """Where `rewrite_files` runs the edits when given one: a helper process forked when the pool is made, which forks
    the workers when the edits come. Made before the analysis, the workers are copies of a small process; forked from
    one that holds the analysis's heap, they spent 10-20 % more CPU on transformers' edits (what they allocate lands
    among the analysis's freed objects, on pages they must copy first). A helper, not the workers themselves: a process
    pool started now would have its thread running while the analysis forks its own pool."""

    def __init__(self, jobs: int | None) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, theirs = context.Pipe()
        self._helper = context.Process(target=_serve, args=(theirs, jobs), name="autograph-cg edits")
        self._helper.start()
        theirs.close()

    def run(self, tasks: list[tuple[str, Edit]], write: bool, diff: bool) -> list[FileResult]:
        """The edits' results, in task order; RuntimeError when the helper or its workers failed."""
        self._conn.send((tasks, write, diff))
        try:
            answer = self._conn.recv()
        except EOFError:
            raise RuntimeError("the rewrite's worker processes stopped") from None
        if isinstance(answer, str):
            raise RuntimeError(answer)
        return answer  # type: ignore[no-any-return]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.send(None)
        self._conn.close()  # a helper still answering meets a closed pipe instead of waiting for a reader
        self._helper.join()


def _serve(conn: Connection, jobs: int | None) -> None:
    """The helper: each batch of edits in a pool forked from this process, until told to stop or left alone."""
    with contextlib.suppress(EOFError, OSError, KeyboardInterrupt):
        while (job := conn.recv()) is not None:
            tasks, write, diff = job
            report = RewriteReport("rewrite", write)
            try:
                _run(report, tasks, write, diff, jobs)
            except Exception as exc:
                conn.send(f"the rewrite's worker processes failed: {type(exc).__name__}: {exc}")
                continue
            conn.send(report.files)


@contextlib.contextmanager
def edit_pool(jobs: int | None) -> Iterator[EditPool | None]:
    """An `EditPool` for `rewrite_files`: enter it before the analysis. None where one process is asked for or there
    is no `fork` (the edits then start their pool when they come)."""
    if (jobs or os.cpu_count() or 1) < 2 or not sys.platform.startswith("linux"):
        yield None
        return
    pool = EditPool(jobs)
    try:
        yield pool
    finally:
        pool.close()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def rewrite_files(
    sites: Iterable[WrapSite],
    files_scanned: int,
    *,
    write: bool = True,
    diff: bool = False,
    settings: WrapSettings = WrapSettings(),
    errors: Iterable[SourceError] = (),
    jobs: int | None = None,
    pool: EditPool | None = None,
) -> RewriteReport:
    """Apply the plan's new sites (those not `existing`); files the plan does not touch are not opened. `pool`: an
    `edit_pool` started before the analysis."""
    report = RewriteReport("rewrite", write, files_scanned)
    errors = list(errors)
    report.files.extend(
        FileResult(e.path, Status.SKIPPED, kind="internal-error" if e.internal else "analysis", reason=e.message)
        for e in _first_per_path(errors)
    )
    untouched = {e.path for e in errors if e.internal}  # an analyzer bug there: its plan is not trusted
    by_path: dict[str, list[WrapSite]] = {}
    for site in sites:
        if not site.existing and site.path not in untouched:
            by_path.setdefault(site.path, []).append(site)
    tasks: list[tuple[str, Edit]] = [
        (path, partial(rewrite_source, sites=todo, settings=settings)) for path, todo in by_path.items()
    ]
    _run(report, tasks, write, diff, jobs, pool)
    return report


def _first_per_path(errors: list[SourceError]) -> list[SourceError]:
    seen: dict[str, SourceError] = {}
    for error in errors:
        seen.setdefault(error.path, error)
    return list(seen.values())


def undo_files(
    paths: Iterable[str],
    *,
    write: bool = True,
    diff: bool = False,
    errors: Iterable[SourceError] = (),
    jobs: int | None = None,
) -> RewriteReport:
    """Undo rewrite in `paths` (files); files without the wrapper name are counted but not parsed."""
    report = RewriteReport("undo", write)
    report.files.extend(FileResult(e.path, Status.SKIPPED, kind="discovery", reason=e.message) for e in errors)
    paths = list(paths)
    report.files_scanned = len(paths)
    _run(report, [(path, undo_source) for path in paths], write, diff, jobs)
    report.files = [f for f in report.files if f.status is not Status.UNCHANGED or f.kept]
    return report
