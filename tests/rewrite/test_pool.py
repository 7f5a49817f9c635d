"""Where the edits run: `edit_pool`, entered before the analysis, forks the process that forks the workers then, so
the workers are copies of the process as it was before the analysis grew it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograph_cg.rewrite import edit_pool, files, rewrite_files
from autograph_cg.rewrite.api import SourceEdit
from autograph_cg.rewrite.results import RewriteReport

from .sites import sites_for

_LATER: list[str] = []  # what the parent builds after the pool is made, as the analysis does


def _later(data: bytes) -> SourceEdit:
    """An edit reporting, as its `kept` count, what of `_LATER` its process holds."""
    return SourceEdit(data, 0, len(_LATER), "")


def _dies(data: bytes) -> SourceEdit:
    os._exit(3)


def _files(directory: Path, n: int, text: str = "x = 1\n") -> list[str]:
    paths = [directory / f"m{i}.py" for i in range(n)]
    for path in paths:
        path.write_text(text)
    return [str(p) for p in paths]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the edit pool forks")
def test_workers_are_copies_of_the_process_as_it_was_when_the_pool_was_made(tmp_path: Path) -> None:
    paths = _files(tmp_path, 6)
    ours, theirs = RewriteReport("rewrite", False), RewriteReport("rewrite", False)
    try:
        with edit_pool(2) as pool:
            assert pool is not None
            _LATER.append("the analysis")
            files._run(ours, [(p, _later) for p in paths], write=False, diff=False, jobs=2, pool=pool)
        files._run(theirs, [(p, _later) for p in paths], write=False, diff=False, jobs=2)  # forked now
    finally:
        _LATER.clear()
    assert [f.kept for f in ours.files] == [0] * 6
    assert [f.kept for f in theirs.files] == [1] * 6


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the edit pool forks")
def test_workers_that_die_are_an_error_and_the_pool_still_serves(tmp_path: Path) -> None:
    paths = _files(tmp_path, 4)
    with edit_pool(2) as pool:
        assert pool is not None
        with pytest.raises(RuntimeError, match="worker processes failed"):
            files._run(RewriteReport("rewrite", False), [(p, _dies) for p in paths], False, False, 2, pool)
        report = RewriteReport("rewrite", False)
        files._run(report, [(p, _later) for p in paths], False, False, 2, pool)
    assert [f.kept for f in report.files] == [0] * 4


def test_rewrite_through_the_pool_is_the_rewrite_without_it(tmp_path: Path) -> None:
    src = "import paddle\n\n\nclass Net:\n    def __init__(self):\n        self.m = MLP(1)\n"
    sites = [s for path in _files(tmp_path, 5, src) for s in sites_for(src, {"MLP"}, path)]
    with edit_pool(2) as pool:
        pooled = rewrite_files(sites, 5, write=False, diff=True, jobs=2, pool=pool)
    plain = rewrite_files(sites, 5, write=False, diff=True, jobs=1)
    assert pooled.files == plain.files and len(pooled.changed) == 5
