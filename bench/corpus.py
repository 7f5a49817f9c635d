"""Real-world model code for measuring the analyzer: fetched with pip into a cache outside the repo.

The corpus is third-party code, so it is never committed: each distribution is downloaded with
``pip download --no-deps`` (wheel preferred, sdist as fallback) and only its ``.py`` files are kept,
one directory per distribution. A marker file written last makes the fetch idempotent and lets an
interrupted extraction be redone.

    python bench/corpus.py            # fetch what is missing, print roots with file and line counts
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DISTRIBUTIONS: tuple[tuple[str, str], ...] = (
    ("paddlenlp", "2.8.1"),
    ("paddledet", "2.6.0"),
    ("paddleclas", "2.6.0"),
    ("paddleseg", "2.8.0"),
    ("paddlex", "3.7.2"),
    ("paddleocr", "3.7.0"),
    ("timm", "1.0.31"),
)
EXPECTED_FILES = 2645
EXPECTED_LINES = 756_000
MARKER = ".autograph-cg-corpus.json"


@dataclass(frozen=True)
class CorpusRoot:
    """One extracted distribution: where its files are and how much code it holds."""

    name: str
    version: str
    path: Path
    archive: str
    files: int
    lines: int
    top_level: tuple[str, ...]


def cache_dir() -> Path:
    """The corpus lives outside the repo so it can never be committed by accident."""
    env = os.environ.get("AUTOGRAPH_CG_CORPUS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "autograph-cg" / "corpus"


def _download(name: str, version: str, dest: Path) -> Path:
    """One archive for name==version: a wheel when one exists, else the sdist."""
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(dest)]
    attempts = (["--only-binary", ":all:"], ["--no-binary", ":all:", "--no-build-isolation"])
    errors = []
    for extra in attempts:
        proc = subprocess.run(
            [*base, *extra, f"{name}=={version}"], capture_output=True, text=True, check=False
        )
        archives = sorted(p for p in dest.iterdir() if p.is_file())
        if proc.returncode == 0 and archives:
            return archives[0]
        errors.append(proc.stderr.strip().splitlines()[-1:] or ["no archive"])
    raise RuntimeError(f"pip download {name}=={version} failed: {errors}")


def _members(archive: Path) -> list[tuple[PurePosixPath, bytes]]:
    """The .py files of a wheel or sdist, with paths relative to the package root."""
    out: list[tuple[PurePosixPath, bytes]] = []
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir() and info.filename.endswith(".py"):
                    out.append((PurePosixPath(info.filename), zf.read(info)))
    else:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                if member.isfile() and member.name.endswith(".py"):
                    data = tf.extractfile(member)
                    if data is not None:
                        # An sdist wraps everything in "<name>-<version>/"; drop that level.
                        out.append((PurePosixPath(*PurePosixPath(member.name).parts[1:]), data.read()))
    return out


def _safe_target(root: Path, rel: PurePosixPath) -> Path | None:
    """Refuse absolute paths and '..' so an archive cannot write outside its directory."""
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return None
    return root.joinpath(*rel.parts)


def _extract(archive: Path, root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for rel, data in _members(archive):
        target = _safe_target(root, rel)
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def _measure(name: str, version: str, path: Path, archive: str) -> CorpusRoot:
    files = sorted(path.rglob("*.py"))
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    top = Counter(f.relative_to(path).parts[0] for f in files)
    return CorpusRoot(name, version, path, archive, len(files), lines, tuple(sorted(top)))


def fetch_one(name: str, version: str, base: Path | None = None) -> CorpusRoot:
    """Download and extract one distribution unless its marker says it is already complete."""
    base = base or cache_dir()
    root = base / f"{name}-{version}"
    marker = root / MARKER
    if marker.is_file():
        meta = json.loads(marker.read_text())
        return _measure(name, version, root, meta["archive"])
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix=".download-") as tmp:
        archive = _download(name, version, Path(tmp))
        _extract(archive, root)
    result = _measure(name, version, root, archive.name)
    marker.write_text(json.dumps({"archive": archive.name, "files": result.files}))
    return result


def fetch_all(base: Path | None = None) -> list[CorpusRoot]:
    """Every corpus distribution, fetched where missing."""
    return [fetch_one(name, version, base) for name, version in DISTRIBUTIONS]


def python_files(roots: list[CorpusRoot]) -> list[Path]:
    """All corpus files, in a stable order, for the benchmarks."""
    return [f for r in roots for f in sorted(r.path.rglob("*.py"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="corpus cache (default: $AUTOGRAPH_CG_CORPUS or ~/.cache/autograph-cg/corpus)")
    args = parser.parse_args(argv)
    try:
        roots = fetch_all(args.dir)
    except (RuntimeError, OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
        print(f"corpus: {exc}", file=sys.stderr)
        return 1
    for r in roots:
        print(f"{r.files:6d} files {r.lines:9d} lines  {r.path}  ({r.archive}; top level: {', '.join(r.top_level)})")
    files = sum(r.files for r in roots)
    lines = sum(r.lines for r in roots)
    print(f"{files:6d} files {lines:9d} lines  total")
    print(
        f"expected about {EXPECTED_FILES} files and {EXPECTED_LINES} lines: "
        f"{files - EXPECTED_FILES:+d} files, {lines - EXPECTED_LINES:+d} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
