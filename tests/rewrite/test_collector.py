"""What a rewrite leaves to Python's cyclic collector: nothing. A file's syntax tree kept alive by a reference cycle
until the collector found it, and the collector's passes over the trees of the file being edited, were a third of
a rewrite; forked after the analysis, pool workers walked the heap they inherited from it too."""

from __future__ import annotations

import gc
from pathlib import Path

from autograph_cg.rewrite import files, rewrite_source, undo_source
from autograph_cg.rewrite.api import SourceEdit
from autograph_cg.rewrite.results import RewriteReport

from .sites import sites_for

SRC = (
    "import paddle\n\n\n"
    "class Net(paddle.nn.Layer):\n"
    "    def __init__(self, n):\n"
    "        super().__init__()\n"
    "        self.mlp = MLP(n)\n"
    "        if n:\n"
    "            self.blocks = paddle.nn.LayerList([Block(i) for i in range(n)])\n"
    "        else:\n"
    "            self.blocks = None\n"
)


def test_a_rewrite_and_its_checks_leave_no_reference_cycles() -> None:
    sites = sites_for(SRC, {"MLP", "Block"})
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        edit = rewrite_source(SRC.encode(), sites)
        undone = undo_source(edit.new)
        garbage = gc.collect()
    finally:
        if enabled:
            gc.enable()
    assert edit.changed == 2 and undone.new == SRC.encode()
    assert garbage == 0


def _probe(data: bytes) -> SourceEdit:
    """An edit reporting, as its `kept` count, whether the collector was paused (1) and the inherited heap frozen (2)."""
    return SourceEdit(data, 0, int(not gc.isenabled()) + 2 * int(gc.get_freeze_count() > 0), "")


def _files(directory: Path, n: int) -> list[str]:
    paths = [directory / f"m{i}.py" for i in range(n)]
    for path in paths:
        path.write_bytes(b"x = 1\n")
    return [str(p) for p in paths]


def test_a_file_is_edited_with_the_collector_paused_and_it_runs_again_after(tmp_path: Path) -> None:
    report = RewriteReport("rewrite", False)
    files._run(report, [(p, _probe) for p in _files(tmp_path, 1)], write=False, diff=False, jobs=1)
    assert [f.kept & 1 for f in report.files] == [1]
    assert gc.isenabled()


def test_pool_workers_leave_the_heap_they_inherit_to_its_owner(tmp_path: Path) -> None:
    report = RewriteReport("rewrite", False)
    files._run(report, [(p, _probe) for p in _files(tmp_path, 6)], write=False, diff=False, jobs=2)
    assert [f.kept for f in report.files] == [3] * 6
    assert gc.get_freeze_count() == 0  # the parent's objects stay the parent's collector's
