"""Which files to analyze and how to read them: walking, excludes, encodings, and every way that can fail.

A bad path never stops the run: it becomes a one-line `SourceError` and the other files are analyzed.
"""

from __future__ import annotations

import ast
import codecs
import fnmatch
import functools
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from autograph_cg.findings import SourceError

DEFAULT_EXCLUDES = (".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules", ".eggs", "*.egg-info", ".autograph-cg-cache")
#: Build output folders, skipped unless they are a package of the source (`models/build/__init__.py`).
ARTIFACT_FOLDERS = ("build", "dist")
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
#: What marks the root of a project (a checkout, a source tree): the climb to a file's package stops there.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@dataclass(frozen=True)
class SourceFile:
    path: str  # as shown to the user
    module: str  # dotted module name, from the package folders above it
    is_package: bool  # an __init__.py
    real: str = ""  # the resolved path, the cache key


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all patterns: a pattern matches a name, a relative path, or a folder above it."""
    parts = [fnmatch.translate(p) for p in patterns] + [fnmatch.translate(p.rstrip("/") + "/*") for p in patterns]
    return re.compile("|".join(f"(?:{part})" for part in parts))


def _excluded(name: str, rel: str, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return False
    matcher = _matcher(patterns)
    return matcher.match(name) is not None or matcher.match(rel) is not None


@functools.lru_cache(maxsize=4096)
def _package_of(folder: str) -> tuple[str, ...]:
    """The dotted package a folder is, from the `__init__.py` files above it (empty if it is none)."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return ()
    parent = os.path.dirname(folder)
    return (*(_package_of(parent) if parent != folder else ()), os.path.basename(folder))


def module_of(path: Path) -> tuple[str, bool]:
    """`pkg/sub/mod.py` -> "pkg.sub.mod" while the folders above hold `__init__.py`."""
    absolute = os.path.abspath(path)
    is_package = os.path.basename(absolute) == "__init__.py"
    folder = os.path.dirname(absolute)
    parts = _package_of(folder)
    if not is_package:
        parts = (*parts, Path(absolute).stem)
    if not parts:
        parts = (os.path.basename(folder),)
    return ".".join(parts), is_package


def display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


def discover(paths: list[str], exclude: tuple[str, ...] = (), force_exclude: bool = False) -> tuple[list[SourceFile], list[SourceError]]:
    """Python files under `paths`, sorted, each once; directories are walked without following symlinks."""
    patterns = DEFAULT_EXCLUDES + tuple(exclude)
    files: dict[str, SourceFile] = {}
    errors: list[SourceError] = []
    for raw in paths:
        path = Path(raw)
        try:
            resolved = path.resolve(strict=True)
        except FileNotFoundError:
            errors.append(SourceError(raw, "no such file or directory"))
            continue
        except (RuntimeError, OSError) as exc:
            errors.append(SourceError(raw, "symlink loop" if isinstance(exc, RuntimeError) or getattr(exc, "errno", 0) == 40 else exc.strerror or str(exc)))
            continue
        if resolved.is_file():
            if force_exclude and _excluded(path.name, display(path), tuple(exclude)):
                continue
            files.setdefault(str(resolved), SourceFile(display(path), *module_of(path), str(resolved)))
            continue
        if not resolved.is_dir():
            errors.append(SourceError(raw, "not a regular file or directory"))
            continue
        found_any = False
        for folder, dirnames, filenames in os.walk(path, onerror=lambda e: errors.append(SourceError(display(Path(e.filename or raw)), e.strerror or str(e)))):
            rel_folder = os.path.relpath(folder, path)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not _excluded(d, os.path.normpath(os.path.join(rel_folder, d)), patterns)
                and not (d in ARTIFACT_FOLDERS and not os.path.isfile(os.path.join(folder, d, "__init__.py")))
            )
            for name in sorted(filenames):
                if not name.endswith((".py", ".pyi")):
                    continue
                rel = os.path.normpath(os.path.join(rel_folder, name))
                if _excluded(name, rel, patterns):
                    continue
                full = Path(folder) / name
                if full.is_symlink():
                    try:
                        full.resolve(strict=True)
                    except (RuntimeError, OSError):
                        errors.append(SourceError(display(full), "symlink loop or dangling symlink"))
                        continue
                found_any = True
                key = str(full.resolve()) if full.is_symlink() else os.path.abspath(full)
                files.setdefault(key, SourceFile(display(full), *module_of(full), key))
        if not found_any:
            errors.append(SourceError(raw, "no Python files found"))
    return sorted(files.values(), key=lambda f: f.path), errors


def package_root(path: str) -> str:
    """The folder whose analysis answers for the file `path`: what its imports and its callers can reach.

    A file in a package (`__init__.py` folders) belongs to its top package, climbing no higher than the project
    root (the nearest folder with a `pyproject.toml`, `setup.py`, `setup.cfg` or `.git`). When the top package sits
    at the project root or in its `src/` folder, the root is that folder, which also holds the project's other
    packages and scripts (as `autograph-cg lint .` there sees them); elsewhere (a wheel, site-packages, a package
    nested in some folder) it is the top package alone. A file outside any package belongs to its own folder.
    Spelled relative to the working directory when it lies below it, as the files found under it are shown."""
    folder = os.path.dirname(os.path.abspath(path))
    project = next((f for f in _ancestors(folder) if any(os.path.exists(os.path.join(f, m)) for m in PROJECT_MARKERS)), None)
    root = folder
    if _package_of(folder):
        while root != project and _package_of(os.path.dirname(root)) and os.path.dirname(root) != root:
            root = os.path.dirname(root)
        source = os.path.dirname(root)
        if project is not None and source in (project, os.path.join(project, "src")):
            root = source
    relative = os.path.relpath(root)
    return relative if not relative.startswith("..") else root


def _ancestors(folder: str) -> list[str]:
    found = [folder]
    while os.path.dirname(found[-1]) != found[-1]:
        found.append(os.path.dirname(found[-1]))
    return found


@dataclass(frozen=True)
class Request:
    """What a run analyzes and what it reports on."""

    sources: list[SourceFile]  # every file to analyze
    shown: frozenset[str] | None  # the files to report on (shown paths); None: all of `sources`
    errors: list[SourceError]  # paths named that cannot be analyzed


def gather(paths: list[str], exclude: tuple[str, ...] = (), force_exclude: bool = False, packages: bool = True) -> Request:
    """The files under `paths`; with `packages`, a file named alone brings its package (`package_root`): the
    answers for it are the whole package's, reported for the files named. Without, the named files are all there
    is (what the analysis of those files alone would say)."""
    named, errors = discover(paths, exclude, force_exclude)
    files = [p for p in paths if os.path.isfile(p)]
    if not packages or not files:
        return Request(named, None, errors)
    wider, _ = discover(sorted({package_root(p) for p in files}), exclude)  # folders nobody named: their errors are not reported
    known = {s.real for s in named}  # resolved; a walk's paths are resolved only where a link is walked through
    names = {os.path.basename(r) for r in known}
    more = [s for s in wider if s.real not in known and not (os.path.basename(s.real) in names and os.path.realpath(s.real) in known)]
    sources = sorted(named + more, key=lambda f: f.path)
    return Request(sources, frozenset(s.path for s in named), errors)


def encoding_of(data: bytes) -> str:
    """The encoding Python reads source bytes in: UTF-8 after a byte-order mark, else a PEP 263 declaration on the
    first two lines, else UTF-8. SyntaxError for a declared encoding Python does not know."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8"
    for line in data.split(b"\n", 2)[:2]:
        match = _CODING.match(line)
        if match:
            encoding = match.group(1).decode("ascii")
            try:
                codecs.lookup(encoding)
            except LookupError:
                raise SyntaxError(f"unknown encoding: {encoding}") from None
            return encoding
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return "utf-8"


def decode(data: bytes) -> str:
    """Source bytes to text as Python reads them (BOM, PEP 263 declaration); UnicodeDecodeError/SyntaxError if bad."""
    encoding = encoding_of(data)
    return (data[3:] if data.startswith(codecs.BOM_UTF8) else data).decode(encoding)


LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the tokenizer's line breaks, unlike str.splitlines()
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # what str.splitlines() breaks at beside these


def lines_of(text: str, keepends: bool = False) -> list[str]:
    """`text`'s lines as Python counts them (only \\n, \\r\\n and \\r end one), split in C where the text holds no
    other break `str.splitlines` knows. Without `keepends`, as `LINE_BREAK.split` gives them: the text after the last
    break is a line, even when empty."""
    if _OTHER_BREAKS.search(text):
        if not keepends:
            return LINE_BREAK.split(text)
        starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]
        if starts[-1] != len(text):
            starts.append(len(text))  # the last line has no line break
        return [text[starts[i] : starts[i + 1]] for i in range(len(starts) - 1)]
    lines = text.splitlines(keepends)
    if not keepends and (not text or text[-1] in "\r\n"):
        lines.append("")
    return lines


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` without the parser's warnings about the analyzed code (invalid escapes, `is` with a literal):
    they are the code's business, and printed they would bury the tool's own output. Raises like `ast.parse`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source, filename=filename)
