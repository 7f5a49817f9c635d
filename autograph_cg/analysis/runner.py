"""Many files: read, look up the cache, index the misses in a process pool, keep the results.

The only place with I/O and processes; `index_source` stays pure. The facts cache is one file per package and
build of the tool, keyed by each file's path, module name and stamp, so an unchanged package costs a `stat` per
file.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import stat
import sys
import threading
from collections import deque
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Protocol, cast

from autograph_cg import __version__
from autograph_cg.atomic import atomic_file
from autograph_cg.analysis.facts import ModuleFacts
from autograph_cg.analysis.failures import describe, message
from autograph_cg.analysis.solved import Solved, Stamp
from autograph_cg.findings import SourceError
from autograph_cg.sources import SourceFile, decode

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor


def _build() -> str:
    """What this build of the tool is: its version, its own source and the data it reads (the rules' tables). A cache
    written by another build is never read (an upgrade in place, or a checkout on another commit, keeps the version
    number but not the answers)."""
    digest = hashlib.blake2b(__version__.encode(), digest_size=8)
    root = Path(__file__).resolve().parents[1]
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.json")]):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()


BUILD = _build()
#: What this tool writes in a cache folder (facts, one file per package; answers and solved states, one file per key);
#: files of another build are removed when this one writes
_OUR_FILES = ("facts-*.pickle", "results-*.pickle", "solved-*.pickle")
_POOL_THRESHOLD = 24  # below this many files, a pool costs more than it saves
_AHEAD_BATCH = 8  # files asked for ahead, handed to the pool together


class ProgressSink(Protocol):
    def start(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...


def index_one(path: str, module: str, is_package: bool, data: bytes, deep: bool | None = None) -> ModuleFacts | SourceError:
    """Facts of one file, or why it cannot be analyzed (one line)."""
    from autograph_cg.analysis.index import index_source  # the indexer: a run answered from the cache never loads it

    if b"\x00" in data:
        return SourceError(path, "binary file (contains NUL bytes)")
    try:
        text = decode(data)
    except UnicodeDecodeError as exc:
        return SourceError(path, f"cannot decode: {exc.reason} at byte {exc.start}")
    except (SyntaxError, LookupError) as exc:
        return SourceError(path, f"cannot decode: {exc}")
    try:
        return index_source(path, module, is_package, text, deep=deep)
    except SyntaxError as exc:
        return SourceError(path, f"syntax error at line {exc.lineno}: {exc.msg}")
    except RecursionError:
        return SourceError(path, "nesting too deep to analyze")
    except MemoryError:
        return SourceError(path, "file too large to analyze")
    except Exception as exc:  # an analyzer bug outside any one function or class: this file only
        return SourceError(path, message("", describe(exc)), internal=True)


_frozen = False  # this process froze the heap it inherited (`freeze_inherited`)


def freeze_inherited() -> None:
    """A forked pool worker's initializer: the heap it inherits is frozen, so its collector never walks the parent's
    objects (nor copies their pages by touching them). Recorded for `paused_gc`, which must not unfreeze it: asking
    Python how many objects are frozen counts them one by one (4 ms in a worker of `rewrite`, asked for each file it
    edited: 3 s of CPU on transformers)."""
    global _frozen
    gc.freeze()
    _frozen = True


@contextmanager
def paused_gc() -> Iterator[None]:
    """The analysis builds millions of long-lived objects (facts, values, memos) and little cyclic garbage: the
    collector's full passes over them cost a tenth of a run and free almost nothing. Restored after, with what was
    made meanwhile moved to the oldest generation unexamined: re-enabled as it was, the collector's next pass would
    walk every one of them at once (2 s after a warm run of a large package, for nothing). A pool worker that froze the
    heap it inherited (`freeze_inherited`) keeps it frozen: unfreezing would hand it to the collector."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not _frozen:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


Job = tuple[str, str, str, bool, "bool | None"]  # shown path, real path, module, is_package, deep


def _index_batch(batch: list[Job]) -> list[bytes | SourceError]:
    """Read and index a batch of files in a worker. Facts come back pickled, as the cache stores them: the workers
    pay for pickling in parallel, and saving the cache only writes the bytes."""
    # Syntax trees are large and acyclic-in-practice; cyclic GC passes over them cost more than the walk.
    with paused_gc():
        results: list[bytes | SourceError] = []
        for path, real, module, is_package, deep in batch:
            data = _read(path, real)
            found = data if isinstance(data, SourceError) else index_one(path, module, is_package, data, deep)
            results.append(found if isinstance(found, SourceError) else pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
        return results


def _read(path: str, real_path: str) -> bytes | SourceError:
    try:
        with open(real_path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        return SourceError(path, "is a directory")
    except PermissionError:
        return SourceError(path, "permission denied")
    except OSError as exc:
        return SourceError(path, exc.strerror or str(exc))


Stamped = tuple[SourceFile, str, Stamp]  # a file, its cache key, its stamp


def stamp_files(files: list[SourceFile]) -> tuple[list[Stamped], list[SourceError]]:
    """Cache key and stamp of each file, without reading it."""
    stamped: list[Stamped] = []
    errors: list[SourceError] = []
    for source in files:
        real = source.real or os.path.realpath(source.path)
        try:
            info = os.stat(real)
        except OSError as exc:
            errors.append(SourceError(source.path, exc.strerror or str(exc)))
            continue
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device named *.py: reading it could block or never end
            errors.append(SourceError(source.path, "not a regular file"))
            continue
        stamped.append((source, f"{real}\0{source.module}\0{int(source.is_package)}\0{source.path}", (info.st_mtime_ns, info.st_size)))
    return stamped, errors


def run_key(stamped: list[Stamped], settings: str) -> str:
    """One hash of every file's stamp and the settings: an unchanged run can reuse the last answer."""
    digest = hashlib.blake2b(settings.encode(), digest_size=16)
    for _, key, (mtime, size) in stamped:
        digest.update(f"{key}\0{mtime}\0{size}\n".encode())
    return digest.hexdigest()


def _load_pickle(folder: Path | None, name: str, kind: type = dict) -> object | None:
    """The object cached in `name` if it is a `kind`; None when absent, damaged or of another version."""
    if folder is None:
        return None
    try:
        with open(folder / name, "rb") as handle:
            loaded = pickle.load(handle)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ValueError, ImportError, IndexError, TypeError, KeyError):
        return None  # absent or from another version: a cache miss, never an error
    return loaded if isinstance(loaded, kind) else None


def _save_pickle(folder: Path, name: str, value: object) -> None:
    """Atomically: a run killed while saving leaves the previous cache file intact (not synced: a cache damaged by
    a power cut is read as a miss)."""
    try:
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ".gitignore").write_text("# Created by autograph-cg: its cache, never to commit.\n*\n")
        with atomic_file(folder / name, durable=False) as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        for pattern in _OUR_FILES:
            for stale in folder.glob(pattern):
                if BUILD not in stale.name:
                    stale.unlink(missing_ok=True)
    except OSError as exc:  # a cache that cannot be written only costs speed
        print(f"autograph-cg: warning: cannot write cache in {folder}: {exc.strerror or exc}", file=sys.stderr)


Entry = tuple[Stamp, bytes, bool]  # a file's stamp, its facts pickled, whether they are complete


def _package_of_key(key: str) -> str:
    """The package a file of cache key `key` (`stamp_files`) belongs to, as the folder holding its top package and the
    top package's name; the folder alone for a module outside any package (a folder's scripts share it)."""
    real, module, is_package, _ = key.split("\0", 3)
    holder = os.path.dirname(real)
    for _ in range(module.count(".") + (is_package == "1")):
        holder = os.path.dirname(holder)
    top = module.partition(".")[0] if "." in module or is_package == "1" else ""
    return f"{holder}\0{top}"


class FactsCache:
    """Facts per file, keyed by path and module, valid while the file's stamp is unchanged. One pickle per package
    (`_package_of_key`): a run reads the files of the packages it analyzes and writes back those it indexed files of,
    not the facts of every package the folder caches (a hook's run over one package of the corpus read and wrote the
    whole corpus's 32 MB). Each entry is kept pickled, with whether its facts are complete (every body walked): loading
    a package's file reads bytes, and only the files asked for are unpickled."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._packages: dict[str, dict[str, Entry]] = {}  # file name -> the entries it holds, once read
        self._names: dict[str, str] = {}  # cache key -> the file name of its package
        self._dirty: set[str] = set()
        self.added: dict[str, Entry] = {}  # the entries this run put, by cache key

    def _entries(self, key: str) -> dict[str, Entry]:
        """The entries of the package `key` belongs to, read when first asked for."""
        name = self._names.get(key)
        if name is None:
            digest = hashlib.blake2b(_package_of_key(key).encode(), digest_size=8).hexdigest()
            name = self._names[key] = f"facts-{BUILD}-{digest}.pickle"
        entries = self._packages.get(name)
        if entries is None:
            entries = self._packages[name] = cast("dict[str, Entry]", _load_pickle(self.folder, name) or {})
        return entries

    def get(self, key: str, stamp: Stamp, deep: bool | None = None) -> ModuleFacts | None:
        """The facts cached for `key` at `stamp`; with `deep=True`, only complete ones (others are not unpickled)."""
        hit = self._entries(key).get(key)
        if hit is None or hit[0] != stamp or not isinstance(hit[1], bytes) or (deep and not hit[2]):
            return None
        try:
            facts = pickle.loads(hit[1])
        except (pickle.PickleError, EOFError, AttributeError, ValueError, ImportError, IndexError, TypeError):
            return None  # a damaged entry is a miss
        return facts if isinstance(facts, ModuleFacts) else None

    def complete(self, key: str, stamp: Stamp) -> bool:
        """Whether complete facts are cached for `key` at `stamp`, without unpickling them."""
        hit = self._entries(key).get(key)
        return hit is not None and hit[0] == stamp and hit[2]

    def put(self, key: str, stamp: Stamp, facts: bytes, complete: bool) -> None:
        """`facts`: a `ModuleFacts` pickled, as the index workers return it; `complete`: its `complete`."""
        self._entries(key)[key] = self.added[key] = (stamp, facts, complete)
        self._dirty.add(self._names[key])

    def save(self, keep: Iterable[str]) -> None:
        """Write back the packages that gained entries: their entries of this run's files (`keep`) and of other files
        that still exist (a run over part of a package must not cost the next run over all of it its facts); files
        gone since are dropped."""
        if self.folder is None:
            return
        wanted = set(keep)
        for name in sorted(self._dirty):
            entries = self._packages[name]
            kept = {k: v for k, v in entries.items() if k in wanted or os.path.exists(k.split("\0", 1)[0])}
            _save_pickle(self.folder, name, kept)
        self._dirty.clear()


class _Keyed:
    """Objects of one kind by key, one file each (writing one never rewrites the others), the newest `keep` kept."""

    def __init__(self, folder: Path | None, prefix: str, kind: type, keep: int) -> None:
        self.folder, self.prefix, self.kind, self.keep = folder, prefix, kind, keep

    def _name(self, key: str) -> str:
        return f"{self.prefix}-{BUILD}-{key}.pickle"

    def get(self, key: str) -> object | None:
        return _load_pickle(self.folder, self._name(key), self.kind)

    def put(self, key: str, value: object) -> None:
        if self.folder is None:
            return
        _save_pickle(self.folder, self._name(key), value)
        mine = sorted(self.folder.glob(self._name("*")), key=_mtime, reverse=True)
        for stale in mine[self.keep :]:
            stale.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


class ResultCache(_Keyed):
    """Whole answers of recent runs by `run_key`, and of the groups of files judged apart in them: an unchanged package
    is answered without any analysis."""

    def __init__(self, folder: Path | None) -> None:
        super().__init__(folder, "results", object, keep=32)


class SolvedStore(_Keyed):
    """The solved states of recent runs (`solved.Solved`) by the shape of the run (its files and settings). As many
    as the answers: a hook analyzes the package of each file a commit changes, so a tree of several packages, linted
    whole too, needs a state for each (with four, the fifth shape evicted the first, solved afresh at its next edit)."""

    def __init__(self, folder: Path | None) -> None:
        super().__init__(folder, "solved", Solved, keep=8)

    def get(self, key: str) -> Solved | None:
        return cast("Solved | None", super().get(key))  # `_load_pickle` returns a `Solved` or None


class Indexer:
    """One run's indexing: facts from the cache, the misses in a process pool that stays up for the run. Files a
    later round needs deeply can be asked for `ahead` while the main process judges; the other cores index them,
    up to `_AHEAD_BATCH` at a time: each hand-over to the pool cost the main thread a millisecond or more (its
    management thread takes the interpreter lock), 1-4 s for transformers' 979 files asked for one by one, so what is
    asked while the pool is busy waits for a full batch or for the pool to be free (a file asked for alone waited for
    seven more that never came, and was indexed in the main process when needed). At most one batch
    fewer than the pool's processes is indexed at a time, the next handed over as one ends (from the pool's own
    thread): the main process keeps a core of its own to judge on (on two cores, two workers beside it slowed its
    verdicts by a third while they ran); what is still waiting when the round ends is indexed then, with the other
    misses, on every core.

    Use as a context manager (the pool is shut down on leaving). The caller saves the cache once its run is over."""

    def __init__(self, cache: FactsCache, jobs: int | None = None, progress: ProgressSink | None = None) -> None:
        self.cache = cache
        self.jobs = jobs or os.cpu_count() or 1
        self.progress = progress
        self._pool: ProcessPoolExecutor | None = None
        self._files: dict[str, Stamped] = {}
        self._ahead: dict[str, tuple[Future, int]] = {}  # path -> the deep index of its batch, asked for ahead; its place
        self._pending: list[Job] = []  # asked for ahead, to be handed over with the next batch
        self._waiting: deque[list[Job]] = deque()  # full batches asked for ahead, not handed over yet
        self._running = 0  # batches handed over and not done
        self._asked: set[str] = set()  # paths in `_pending` and `_waiting`
        self._lock = threading.RLock()  # the state above: batches end in the pool's thread, which hands the next over

    def __enter__(self) -> "Indexer":
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._waiting.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def index(self, stamped: list[Stamped], deep: bool | None = None, round_end: bool = True) -> tuple[list[ModuleFacts], list[SourceError]]:
        """Facts of every file: from the cache when its stamp is unchanged, else indexed (in a pool when many).
        `deep=True` asks for every function body walked (a cached partial entry is then a miss); at a round's end
        (`round_end`) the files asked for ahead and not handed over yet are given up (indexed with these if asked)."""
        progress = self.progress if deep is None else None
        facts: list[ModuleFacts] = []
        errors: list[SourceError] = []
        misses: list[Job] = []
        miss_keys: list[tuple[str, Stamp]] = []
        if progress is not None:
            progress.start(len(stamped))
        taken: list[tuple[str, Stamp, tuple[Future, int]]] = []  # indexed ahead
        if deep and round_end:  # not handed over yet: indexed with the other misses
            with self._lock:
                self._pending.clear()
                self._waiting.clear()
                self._asked.clear()
        for source, key, stamp in stamped:
            self._files[source.path] = (source, key, stamp)
            hit = self.cache.get(key, stamp, deep)
            if hit is not None:
                facts.append(hit)
                continue
            ahead = self._ahead.pop(source.path, None) if deep else None
            if ahead is not None:
                taken.append((key, stamp, ahead))
                continue
            misses.append(_job(source, deep))
            miss_keys.append((key, stamp))
        if progress is not None:
            progress.advance(len(facts))
        pool = self._pool_for(len(misses))
        found = _in_pool(pool, misses, self.jobs, progress) if pool is not None else _in_process(misses, progress)
        ahead = ((len(misses) + i, batch.result()[place]) for i, (_, _, (batch, place)) in enumerate(taken))
        miss_keys.extend((key, stamp) for key, stamp, _ in taken)
        with paused_gc():  # unpickling makes many objects and no garbage
            for place, result in chain(found, ahead):
                if isinstance(result, SourceError):
                    errors.append(result)
                else:
                    key, stamp = miss_keys[place]
                    facts.append(pickle.loads(result))
                    self.cache.put(key, stamp, result, facts[-1].complete)
        if progress is not None:
            progress.finish()
        facts.sort(key=lambda m: m.path)
        errors.sort(key=lambda e: e.path)
        return facts, errors

    def deepen(self, item: Stamped) -> ModuleFacts | None:
        """One file's facts with every body walked, now (the verdicts read them): from its batch when it was handed
        over ahead, else indexed here (taken out of the batches waiting); None when it cannot be indexed."""
        path = item[0].path
        with self._lock:
            if path in self._asked:
                self._asked.discard(path)
                self._pending = [job for job in self._pending if job[0] != path]
                for batch in self._waiting:
                    batch[:] = [job for job in batch if job[0] != path]
        found, _ = self.index([item], deep=True, round_end=False)
        return found[0] if found else None

    def ahead(self, path: str) -> None:
        """Index `path` deeply on another core, if a pool is up, with the next batch (a later `index(deep=True)`
        takes it, or indexes it with its other misses while its batch is not full)."""
        if self._pool is None or path in self._ahead or path not in self._files:
            return
        source, key, stamp = self._files[path]
        with self._lock:
            if path in self._asked or self.cache.complete(key, stamp):
                return
            self._asked.add(path)
            self._pending.append(_job(source, True))
            if len(self._pending) == _AHEAD_BATCH or not self._running:  # a full batch, or the pool idle meanwhile
                self._waiting.append(self._pending)
                self._pending = []
                self._hand_over()

    def _hand_over(self) -> None:
        """Give the pool the batches waiting, while fewer than `jobs - 1` of them are being indexed (the lock held)."""
        while self._waiting and self._pool is not None and self._running < max(1, self.jobs - 1):
            jobs = self._waiting.popleft()
            try:
                batch = self._pool.submit(_index_batch, jobs)
            except RuntimeError:  # shut down meanwhile: nothing more is asked
                return
            self._running += 1
            for place, job in enumerate(jobs):
                self._asked.discard(job[0])
                self._ahead[job[0]] = (batch, place)
            batch.add_done_callback(self._batch_done)

    def _batch_done(self, _: Future) -> None:
        with self._lock:
            self._running -= 1
            if not self._waiting and self._pending:  # what was asked for while the pool was busy, without waiting for more
                self._waiting.append(self._pending)
                self._pending = []
            self._hand_over()

    def _pool_for(self, misses: int) -> ProcessPoolExecutor | None:
        """The run's pool, started when a pass has enough files to pay for it."""
        if self._pool is None:
            workers = min(self.jobs, misses // _POOL_THRESHOLD + 1)
            if workers <= 1:
                return None
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            import autograph_cg.analysis.index  # noqa: F401  imported once here, not again in each forked worker

            method = "fork" if sys.platform.startswith("linux") else None
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))
        return self._pool if misses else None


def forked(work: Callable[[], object]) -> Callable[[], object | None]:
    """`work` run in a forked copy of this process, which has every object made so far without their being sent: the
    returned function waits for it and gives what `work` returned, or None when it failed (the caller does the work
    itself then). Nothing buffered is written twice: the streams are flushed before, and the copy ends with
    `os._exit`, running no exit handler of this process."""
    sys.stdout.flush()
    sys.stderr.flush()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        status = 1
        try:
            with os.fdopen(writer, "wb") as pipe:
                pipe.write(pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL))
            status = 0
        finally:
            sys.stderr.flush()
            os._exit(status)
    os.close(writer)

    def result() -> object | None:
        with os.fdopen(reader, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return None
        try:
            return pickle.loads(data)
        except (pickle.PickleError, EOFError, AttributeError, ValueError, ImportError, IndexError, TypeError):
            return None

    return result


def _job(source: SourceFile, deep: bool | None) -> Job:
    return (source.path, source.real or os.path.realpath(source.path), source.module, source.is_package, deep)


def _in_process(misses: list[Job], progress: ProgressSink | None) -> Iterator[tuple[int, bytes | SourceError]]:
    for place, item in enumerate(misses):
        yield place, _index_batch([item])[0]
        if progress is not None:
            progress.advance()


def _in_pool(pool: ProcessPoolExecutor, misses: list[Job], workers: int, progress: ProgressSink | None) -> Iterator[tuple[int, bytes | SourceError]]:
    """Each file's place in `misses` and its result, as the batches end: the caller unpickles them while the pool
    indexes the others (after the last batch, the main process unpickled every file's facts at once, 0.5 s of the
    corpus's index with the cores idle)."""
    from concurrent.futures import as_completed

    # Larger files first, so no worker is left with the one huge file at the end.
    order = sorted(range(len(misses)), key=lambda i: -_size(misses[i][1]))
    size = max(1, min(16, len(misses) // (workers * 8)))
    batches = {pool.submit(_index_batch, [misses[i] for i in order[start : start + size]]): start for start in range(0, len(order), size)}
    for done in as_completed(batches):
        start = batches[done]
        results = done.result()
        for offset, result in enumerate(results):
            yield order[start + offset], result
        if progress is not None:
            progress.advance(len(results))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
