"""Many files: read, look up the cache, index the misses in a process pool, keep the results.

The only place with I/O and processes; `index_source` stays pure. The cache is one file per cache folder,
keyed by tool version and each file's content hash and module name, so an unchanged package costs a read
and a hash per file.
"""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import pickle
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Protocol

from autograph_cg import __version__
from autograph_cg.analysis.facts import ModuleFacts
from autograph_cg.analysis.index import index_source
from autograph_cg.findings import SourceError
from autograph_cg.sources import SourceFile, decode

CACHE_FILE = f"facts-{__version__}.pickle"
_POOL_THRESHOLD = 24  # below this many files, a pool costs more than it saves


class ProgressSink(Protocol):
    def start(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...


def index_one(path: str, module: str, is_package: bool, data: bytes) -> ModuleFacts | SourceError:
    """Facts of one file, or why it cannot be analyzed (one line)."""
    if b"\x00" in data:
        return SourceError(path, "binary file (contains NUL bytes)")
    try:
        text = decode(data)
    except UnicodeDecodeError as exc:
        return SourceError(path, f"cannot decode: {exc.reason} at byte {exc.start}")
    except (SyntaxError, LookupError) as exc:
        return SourceError(path, f"cannot decode: {exc}")
    try:
        return index_source(path, module, is_package, text)
    except SyntaxError as exc:
        return SourceError(path, f"syntax error at line {exc.lineno}: {exc.msg}")
    except RecursionError:
        return SourceError(path, "nesting too deep to analyze")
    except MemoryError:
        return SourceError(path, "file too large to analyze")


def _index_batch(batch: list[tuple[str, str, bool, bytes]]) -> list[ModuleFacts | SourceError]:
    # Syntax trees are large and acyclic-in-practice; cyclic GC passes over them cost more than the walk.
    gc.disable()
    try:
        return [index_one(*item) for item in batch]
    finally:
        gc.enable()


def _read(source: SourceFile, real_path: str) -> bytes | SourceError:
    try:
        with open(real_path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        return SourceError(source.path, "is a directory")
    except PermissionError:
        return SourceError(source.path, "permission denied")
    except OSError as exc:
        return SourceError(source.path, exc.strerror or str(exc))


class FactsCache:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.entries: dict[str, tuple[str, ModuleFacts]] = {}
        self.dirty = False
        if folder is not None:
            try:
                with open(folder / CACHE_FILE, "rb") as handle:
                    loaded = pickle.load(handle)
                if isinstance(loaded, dict):
                    self.entries = loaded
            except (OSError, pickle.PickleError, EOFError, AttributeError, ValueError, ImportError):
                self.entries = {}

    def get(self, key: str, digest: str) -> ModuleFacts | None:
        hit = self.entries.get(key)
        return hit[1] if hit is not None and hit[0] == digest else None

    def put(self, key: str, digest: str, facts: ModuleFacts) -> None:
        self.entries[key] = (digest, facts)
        self.dirty = True

    def save(self, keep: Iterable[str]) -> None:
        if self.folder is None or not self.dirty:
            return
        wanted = set(keep)
        entries = {k: v for k, v in self.entries.items() if k in wanted}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".facts.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(entries, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.folder / CACHE_FILE)
        except OSError as exc:  # a cache that cannot be written only costs speed
            print(f"autograph-cg: warning: cannot write cache in {self.folder}: {exc.strerror or exc}", file=sys.stderr)


def index_files(
    files: list[SourceFile],
    jobs: int | None = None,
    cache_dir: Path | None = None,
    progress: ProgressSink | None = None,
) -> tuple[list[ModuleFacts], list[SourceError]]:
    cache = FactsCache(cache_dir)
    facts: list[ModuleFacts] = []
    errors: list[SourceError] = []
    misses: list[tuple[str, str, bool, bytes]] = []
    miss_keys: list[tuple[str, str]] = []
    keys: list[str] = []
    if progress is not None:
        progress.start(len(files))
    for source in files:
        real = source.real or os.path.realpath(source.path)
        data = _read(source, real)
        if isinstance(data, SourceError):
            errors.append(data)
            if progress is not None:
                progress.advance()
            continue
        key = f"{real}\0{source.module}\0{int(source.is_package)}"
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        keys.append(key)
        hit = cache.get(key, digest)
        if hit is not None and hit.path == source.path:
            facts.append(hit)
            if progress is not None:
                progress.advance()
            continue
        misses.append((source.path, source.module, source.is_package, data))
        miss_keys.append((key, digest))
    results: Iterable[ModuleFacts | SourceError]
    workers = min(jobs or os.cpu_count() or 1, len(misses) // _POOL_THRESHOLD + 1)
    if workers > 1:
        results = _in_pool(misses, workers, progress)
    else:
        results = _in_process(misses, progress)
    for (key, digest), result in zip(miss_keys, results):
        if isinstance(result, SourceError):
            errors.append(result)
        else:
            facts.append(result)
            cache.put(key, digest, result)
    if progress is not None:
        progress.finish()
    cache.save(keys)
    facts.sort(key=lambda m: m.path)
    errors.sort(key=lambda e: e.path)
    return facts, errors


def _in_process(misses: list[tuple[str, str, bool, bytes]], progress: ProgressSink | None) -> list[ModuleFacts | SourceError]:
    results = []
    for item in misses:
        results.extend(_index_batch([item]))
        if progress is not None:
            progress.advance()
    return results


def _in_pool(misses: list[tuple[str, str, bool, bytes]], workers: int, progress: ProgressSink | None) -> list[ModuleFacts | SourceError]:
    # Larger files first, so no worker is left with the one huge file at the end.
    order = sorted(range(len(misses)), key=lambda i: -len(misses[i][3]))
    size = max(1, min(16, len(misses) // (workers * 8)))
    batches = [[misses[i] for i in order[start : start + size]] for start in range(0, len(order), size)]
    method = "fork" if sys.platform.startswith("linux") else None
    context = multiprocessing.get_context(method)
    results: dict[int, ModuleFacts | SourceError] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        position = 0
        for batch, done in zip(batches, pool.map(_index_batch, batches)):
            for result in done:
                results[order[position]] = result
                position += 1
            if progress is not None:
                progress.advance(len(batch))
    return [results[i] for i in range(len(misses))]
