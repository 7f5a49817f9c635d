"""Real-world model code for measuring the analyzer: fetched with pip into a cache outside the repo.

The corpus is third-party code, so it is never committed: each distribution is downloaded with
``pip download --no-deps`` (wheel preferred, sdist as fallback) and only its ``.py`` files are kept,
one directory per distribution. A marker file written last makes the fetch idempotent and lets an
interrupted extraction be redone.

    python bench/corpus.py [--set base|wide|all]   # fetch what is missing, print roots with file and line counts

Two sets: ``base`` (the analyzer's speed figures are measured on it) and ``wide`` (more packages of both
frameworks, for the crash and rewrite-safety runs of ``bench/corpus_safety.py``).
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
WIDE_DISTRIBUTIONS: tuple[tuple[str, str], ...] = (
    ("transformers", "5.23.0"),
    ("diffusers", "0.42.1"),
    ("mmdet", "3.3.0"),
    ("monai", "1.6.1"),
    ("kornia", "0.9.0"),
    ("torch-geometric", "2.8.1"),
    ("speechbrain", "1.1.2"),
    ("ultralytics", "8.4.190"),
    ("torchmetrics", "1.9.0"),
    ("peft", "0.21.2"),
    ("torchvision", "0.29.1"),
    ("pytorch-lightning", "2.6.6"),
    ("sentence-transformers", "6.2.0"),
    ("torchaudio", "2.11.0"),
    ("open-clip-torch", "3.3.0"),
    ("ppdiffusers", "0.29.0"),
    ("paddlespeech", "1.5.0"),
    ("paddlesci", "1.4.0"),
    ("paddlets", "1.1.0"),
    ("paddle3d", "1.0.0"),
    ("paddle-quantum", "2.4.0"),
    ("ppgan", "2.1.0"),
    ("paddleslim", "2.6.0"),
    ("paddlehub", "2.4.0"),
)
SETS: dict[str, tuple[tuple[str, str], ...]] = {
    "base": DISTRIBUTIONS,
    "wide": WIDE_DISTRIBUTIONS,
    "all": DISTRIBUTIONS + WIDE_DISTRIBUTIONS,
}
# About how many files and lines each set holds, to notice a fetch that went wrong.
EXPECTED: dict[str, tuple[int, int]] = {"base": (2645, 756_000), "wide": (11893, 3_678_000)}
EXPECTED["all"] = (EXPECTED["base"][0] + EXPECTED["wide"][0], EXPECTED["base"][1] + EXPECTED["wide"][1])
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


def fetch_all(base: Path | None = None, distributions: tuple[tuple[str, str], ...] = DISTRIBUTIONS) -> list[CorpusRoot]:
    """Every distribution of a set, fetched where missing."""
    return [fetch_one(name, version, base) for name, version in distributions]


def python_files(roots: list[CorpusRoot]) -> list[Path]:
    """All corpus files, in a stable order, for the benchmarks."""
    return [f for r in roots for f in sorted(r.path.rglob("*.py"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="corpus cache (default: $AUTOGRAPH_CG_CORPUS or ~/.cache/autograph-cg/corpus)")
    parser.add_argument("--set", choices=sorted(SETS), default="base", help="which distributions (default: base)")
    args = parser.parse_args(argv)
    try:
        roots = fetch_all(args.dir, SETS[args.set])
    except (RuntimeError, OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
        print(f"corpus: {exc}", file=sys.stderr)
        return 1
    for r in roots:
        print(f"{r.files:6d} files {r.lines:9d} lines  {r.path}  ({r.archive}; top level: {', '.join(r.top_level)})")
    files = sum(r.files for r in roots)
    lines = sum(r.lines for r in roots)
    print(f"{files:6d} files {lines:9d} lines  total")
    expected_files, expected_lines = EXPECTED[args.set]
    print(
        f"expected about {expected_files} files and {expected_lines} lines: "
        f"{files - expected_files:+d} files, {lines - expected_lines:+d} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
