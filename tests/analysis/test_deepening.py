"""Files that forward code reaches only through another file are indexed deeply in a later round: what the earlier
round judged from facts that stay is kept, and the answer is the one a package indexed deeply from the start gives."""

from __future__ import annotations

import textwrap

import pytest

from autograph_cg.analysis.eligibility import Package
from autograph_cg.analysis.index import index_source

MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn
    from pkg.helpers import finish, loop_a


    class Reads(nn.Module):
        def forward(self, x):
            return finish(x)


    class Cycles(nn.Module):
        def forward(self, x):
            return loop_a(x, 3)


    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).relu()


    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = Plain()
            self.reads = Reads()

        def forward(self, x):
            return self.reads(self.plain(x))
    """
)
HELPERS = textwrap.dedent(
    """
    def finish(x):
        return x.sum().item()


    def loop_a(x, n):
        return loop_b(x, n)


    def loop_b(x, n):
        if n:
            return loop_a(x.nonzero(), n - 1)
        return x
    """
)


def _modules(deep: bool | None) -> list:
    return [
        index_source("pkg/model.py", "pkg.model", False, MODEL, deep=deep),
        index_source("pkg/helpers.py", "pkg.helpers", False, HELPERS, deep=deep),
    ]


def _answer(package: Package) -> tuple:
    verdicts = {q: (v.status, v.reasons, v.kernels) for q, v in package.compute_all().items()}
    return verdicts, package.reachable_findings(), sorted(package.unresolved_names.items())


def test_a_later_round_keeps_what_stays_and_gives_the_deep_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    first = Package(_modules(None), keep=lambda code: True)
    first.compute_all()
    assert first.shallow_reached == {"pkg/helpers.py"}  # no `forward` there: its bodies were not walked
    judged: list[str] = []
    judge = Package._judge
    monkeypatch.setattr(Package, "_judge", lambda self, qual: judged.append(qual) or judge(self, qual))
    deeper = [m if m.path != "pkg/helpers.py" else index_source(m.path, m.module, False, HELPERS, deep=True) for m in _modules(None)]
    second = Package(deeper, keep=lambda code: True, solved=first)
    answer = _answer(second)
    assert sorted(judged) == ["pkg.model.Cycles", "pkg.model.Outer", "pkg.model.Reads"]  # Plain is kept
    monkeypatch.undo()
    assert answer == _answer(Package(_modules(True), keep=lambda code: True))
    verdicts = answer[0]
    assert verdicts["pkg.model.Reads"][0].value == "ineligible" and verdicts["pkg.model.Plain"][0].value == "eligible"
    assert {f.code for f in answer[1]} >= {"AG101", "AG201"}  # found in the bodies the later round walked


def test_each_file_found_shallow_is_announced_once_as_soon_as_found() -> None:
    announced: list[str] = []
    package = Package(_modules(None), keep=lambda code: True, ahead=announced.append)
    package.compute_all()
    assert announced == ["pkg/helpers.py"]


def test_a_file_asked_for_ahead_is_indexed_deeply_on_the_pool_and_taken_by_the_next_round(tmp_path) -> None:
    from autograph_cg.analysis import runner
    from autograph_cg.analysis.runner import FactsCache, Indexer, stamp_files
    from autograph_cg.sources import discover

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(MODEL)
    (pkg / "helpers.py").write_text(HELPERS)
    for i in range(30):  # enough files for a pool of two
        (pkg / f"filler{i}.py").write_text(f"def f{i}(x):\n    return x\n" + (f"\nclass C{i}:\n    def g(self):\n        pass\n" if i < 10 else ""))
    sources, _ = discover([str(pkg)], (), False)
    stamped, _ = stamp_files(sources)
    helpers = next(s for s in stamped if s[0].path.endswith("helpers.py"))
    fillers = [s for s in stamped if any(s[0].path.endswith(f"filler{i}.py") for i in range(runner._AHEAD_BATCH))]
    cache = FactsCache(None)
    with Indexer(cache, jobs=2) as indexer:
        shallow, errors = indexer.index(stamped)
        assert not errors and not any(m.complete for m in shallow if m.path in {s[0].path for s in [helpers, *fillers]})
        indexer.ahead(helpers[0].path)
        assert indexer._pool is not None and not indexer._ahead  # waits for a batch
        for filler in fillers[:-1]:
            indexer.ahead(filler[0].path)
        assert all(s[0].path in indexer._ahead for s in [helpers, *fillers[:-1]])  # a batch started on the pool
        indexer.ahead(fillers[-1][0].path)  # the next batch's first, not full when the round comes
        model = next(s for s in stamped if s[0].path.endswith("model.py"))  # a round may also need one not asked ahead
        deep, _ = indexer.index([model, helpers, *fillers], deep=True)
        assert not indexer._ahead and not indexer._pending  # taken, not indexed again; the pending one indexed then
        assert all(m.complete for m in deep)
    by_path = {m.path: m for m in deep}
    assert by_path[helpers[0].path].complete and by_path[helpers[0].path].functions["finish"].walked
    expected = index_source(helpers[0].path, "pkg.helpers", False, HELPERS, deep=True)
    assert by_path[helpers[0].path].functions == expected.functions
    for source, key, stamp in (model, helpers):  # each file's facts cached under its own key
        assert cache.get(key, stamp).path == source.path
