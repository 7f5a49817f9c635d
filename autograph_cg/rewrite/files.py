"""Files edited by a plan, or undone: read, edit, check nothing changed meanwhile, write; in a process pool when many.

The edits themselves are `rewrite/api.py` (libcst), imported when a file is to be edited: a `rewrite --check` of
files the plan leaves as they are (a hook's usual run) never loads libcst (0.2 s).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING

from autograph_cg.analysis.failures import describe, message
from autograph_cg.analysis.runner import freeze_inherited, paused_gc
from autograph_cg.findings import SourceError
from autograph_cg.rewrite import atomic
from autograph_cg.rewrite.results import FileResult, RewriteReport, Status, Unsafe
from autograph_cg.rewrite.settings import WrapSettings
from autograph_cg.sources import decode

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.connection import Connection

    from autograph_cg.analysis.plan import WrapSite
    from autograph_cg.rewrite.api import SourceEdit


def unified_diff(path: str, edit: SourceEdit) -> str:
    """A unified diff with the file's own line endings kept; `git apply`-able for relative paths."""
    old_lines = io.StringIO(edit.text, newline="").readlines()
    new_lines = io.StringIO(decode(edit.new), newline="").readlines()
    a, b = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    out = []
    for line in difflib.unified_diff(old_lines, new_lines, a, b):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


Edit = Callable[[bytes], "SourceEdit"]


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
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

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
        import multiprocessing

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
def edit_pool(jobs: int | None, most: int | None = None) -> Iterator[EditPool | None]:
    """An `EditPool` for `rewrite_files`: enter it before the analysis. None where one process is asked for, where the
    edits can touch at most `most` files, too few for a pool (a hook's run on the files of a commit), or where there is
    no `fork` (the edits then start their pool when they come)."""
    few = most is not None and most < _POOL_THRESHOLD
    if few or (jobs or os.cpu_count() or 1) < 2 or not sys.platform.startswith("linux"):
        yield None
        return
    pool = EditPool(jobs)
    try:
        yield pool
    finally:
        pool.close()


def _edits() -> ModuleType:
    """The edits' module (libcst), loaded when a file is to be edited; read at the call, so a test may replace them."""
    from autograph_cg.rewrite import api

    return api


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
        (path, partial(_edits().rewrite_source, sites=todo, settings=settings)) for path, todo in by_path.items()
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
    _run(report, [(path, _edits().undo_source) for path in paths], write, diff, jobs)
    report.files = [f for f in report.files if f.status is not Status.UNCHANGED or f.kept]
    return report
