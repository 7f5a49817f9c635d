"""The corpus fetcher keeps only .py files, inside their own directory, from wheels and sdists alike."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def corpus():
    # bench/ is scripts, not a package; dataclasses need the module registered while it loads.
    spec = importlib.util.spec_from_file_location("bench_corpus", BENCH / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_wheel_keeps_only_python_files_inside_the_root(corpus, tmp_path: Path) -> None:
    archive = _wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {
            "pkg/__init__.py": b"x = 1\n",
            "pkg/sub/mod.py": b"a = 1\nb = 2\n",
            "pkg/data.json": b"{}",
            "pkg-1.0.dist-info/METADATA": b"Name: pkg\n",
            "../escape.py": b"boom\n",
        },
    )
    root = tmp_path / "out" / "pkg-1.0"
    corpus._extract(archive, root)
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert found == ["pkg/__init__.py", "pkg/sub/mod.py"]
    assert not (tmp_path / "out" / "escape.py").exists()
    measured = corpus._measure("pkg", "1.0", root, archive.name)
    assert (measured.files, measured.lines, measured.top_level) == (2, 3, ("pkg",))


def test_sdist_drops_its_wrapping_directory(corpus, tmp_path: Path) -> None:
    archive = _sdist(
        tmp_path / "pkg-1.0.tar.gz",
        {"pkg-1.0/setup.py": b"setup()\n", "pkg-1.0/pkg/core.py": b"y = 2\n", "pkg-1.0/README.md": b"hi\n"},
    )
    root = tmp_path / "pkg-1.0"
    corpus._extract(archive, root)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == ["pkg/core.py", "setup.py"]


def test_marker_makes_fetch_idempotent(corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "pkg-1.0"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a = 1\n")
    (root / corpus.MARKER).write_text(json.dumps({"archive": "pkg-1.0-py3-none-any.whl", "files": 1}))
    monkeypatch.setattr(corpus, "_download", lambda *a: pytest.fail("downloaded although the marker is there"))
    result = corpus.fetch_one("pkg", "1.0", tmp_path)
    assert (result.files, result.archive) == (1, "pkg-1.0-py3-none-any.whl")


def test_cache_dir_follows_the_environment(corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOGRAPH_CG_CORPUS", str(tmp_path / "c"))
    assert corpus.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("AUTOGRAPH_CG_CORPUS")
    assert corpus.cache_dir() == Path.home() / ".cache" / "autograph-cg" / "corpus"
