"""Files that forward code reaches only through another file are indexed deeply as the verdicts read them (or, where
that cannot be done, in a later round that keeps what the earlier judged from facts that stay): the answer is the one
a package indexed deeply from the start gives."""

from __future__ import annotations

import textwrap
import time

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
    fillers = [s for s in stamped if any(s[0].path.endswith(f"filler{i}.py") for i in range(runner._AHEAD_BATCH // 2))]
    cache = FactsCache(None)
    with Indexer(cache, jobs=2) as indexer:
        shallow, errors = indexer.index(stamped)
        assert not errors and not any(m.complete for m in shallow if m.path in {s[0].path for s in [helpers, *fillers]})
        indexer.ahead(helpers[0].path)
        assert indexer._pool is not None and helpers[0].path in indexer._ahead  # the pool idle: handed over alone, at once
        for filler in fillers[:-1]:  # asked while it runs: handed over when it ends, though no batch is full
            indexer.ahead(filler[0].path)
        deadline = time.monotonic() + 60
        while (indexer._pending or indexer._waiting) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(s[0].path in indexer._ahead for s in [helpers, *fillers[:-1]])
        with indexer._lock:  # the pool kept busy: the last one asked waits for the running batch
            indexer._running += 1
            indexer.ahead(fillers[-1][0].path)
            indexer._running -= 1
        assert fillers[-1][0].path in indexer._asked
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


def _deepen(texts: dict[str, str], asked: list[str], fails: bool = False):
    """A `deepen` for `Package`: each file indexed deeply from its text, noted in `asked`."""

    def deepen(path: str):
        asked.append(path)
        module = path[: -len(".py")].replace("/", ".")
        return None if fails else index_source(path, module, False, texts[path], deep=True)

    return deepen


def test_a_file_read_shallow_is_indexed_deeply_at_once_and_judged_in_one_round() -> None:
    asked: list[str] = []
    package = Package(_modules(None), keep=lambda code: True, deepen=_deepen({"pkg/helpers.py": HELPERS}, asked))
    answer = _answer(package)
    assert asked == ["pkg/helpers.py"] and not package.shallow_reached  # no later round
    assert set(package.deepened) == {"pkg/helpers.py"} and package.deepened["pkg/helpers.py"].complete
    assert answer == _answer(Package(_modules(True), keep=lambda code: True))


def test_a_file_that_cannot_be_indexed_at_once_is_left_to_a_later_round() -> None:
    asked: list[str] = []
    package = Package(_modules(None), keep=lambda code: True, deepen=_deepen({}, asked, fails=True))
    package.compute_all()
    assert asked == ["pkg/helpers.py"] and package.shallow_reached == {"pkg/helpers.py"} and not package.deepened


CHUNKS = textwrap.dedent(
    """
    def apply_chunks(fn, x):
        return fn(x)
    """
)
CALLERS = textwrap.dedent(
    """
    from torch import nn
    from pkg.chunks import apply_chunks


    class Clean(nn.Module):
        def forward(self, x):
            return apply_chunks(self.step, x)

        def step(self, x):
            return x.relu()


    class Syncs(nn.Module):
        def forward(self, x):
            return apply_chunks(self.step, x)

        def step(self, x):
            return x.sum().item()
    """
)


def test_a_function_indexed_deeply_at_once_runs_what_each_call_passes_it() -> None:
    """Whether a call is judged for its own arguments depends on what the callee calls: read from its deep facts, not
    from the body not walked yet (which would judge `apply_chunks` for every caller's `fn` at once)."""

    def modules(deep: bool | None) -> list:
        return [
            index_source("pkg/callers.py", "pkg.callers", False, CALLERS, deep=deep),
            index_source("pkg/chunks.py", "pkg.chunks", False, CHUNKS, deep=deep),
        ]

    asked: list[str] = []
    package = Package(modules(None), keep=lambda code: True, deepen=_deepen({"pkg/chunks.py": CHUNKS}, asked))
    answer = _answer(package)
    assert asked == ["pkg/chunks.py"]
    assert answer == _answer(Package(modules(True), keep=lambda code: True))
    assert answer[0]["pkg.callers.Clean"][0].value == "eligible" and answer[0]["pkg.callers.Syncs"][0].value == "ineligible"


ATTENTION = textwrap.dedent(
    """
    from torch import nn


    def eager_attention(q, k):
        return (q @ k).softmax(-1)


    def unused(x):
        return x.item()


    class Attention(nn.Module):
        def forward(self, q, k):
            attend = eager_attention
            return self.chunked(self.part, attend(q, k))

        def chunked(self, fn, x):
            return fn(x)

        def part(self, x):
            return x.relu()

        def reset(self):
            self.cache = None
    """
)


def test_functions_forward_code_names_as_values_are_walked_with_it() -> None:
    """`attend = eager_attention; attend(q, k)` and a method passed on as `self.part` run where forward runs: walked in
    the first index, so forward code reaching them needs no deep index of their file."""
    facts = index_source("pkg/attention.py", "pkg.attention", False, ATTENTION)
    methods = facts.classes["Attention"].methods
    assert facts.functions["eager_attention"].walked and methods["part"].walked and methods["chunked"].walked
    assert not facts.functions["unused"].walked and not methods["reset"].walked and not facts.complete


CONFIG = textwrap.dedent(
    """
    class Config:
        def __init__(self, hidden=4, **kwargs):
            self.hidden = hidden
    """
)
USES_CONFIG = textwrap.dedent(
    """
    from torch import nn
    from pkg.config import Config


    class Block(nn.Module):
        def __init__(self, config: Config):
            super().__init__()
            self.config = config
            self.fc = nn.Linear(config.hidden, config.hidden)

        def forward(self, x):
            if self.config.use_relu:
                x = x.relu()
            if self.config.check:
                assert x.sum().item() > 0
            return self.fc(x)
    """
)


def test_what_a_config_holds_is_read_from_summaries_without_a_deep_index() -> None:
    """Every body is summarized in every file, so the values forward reads of a config defined in a file without
    forward code (an attribute no method assigns, here) need no deep index of that file."""
    modules = [
        index_source("pkg/block.py", "pkg.block", False, USES_CONFIG),
        index_source("pkg/config.py", "pkg.config", False, CONFIG),
    ]
    assert not modules[1].deep
    asked: list[str] = []
    package = Package(modules, keep=lambda code: True, deepen=_deepen({"pkg/config.py": CONFIG}, asked))
    answer = _answer(package)
    assert asked == [] and not package.shallow_reached
    deep = [index_source("pkg/block.py", "pkg.block", False, USES_CONFIG, deep=True), index_source("pkg/config.py", "pkg.config", False, CONFIG, deep=True)]
    assert answer == _answer(Package(deep, keep=lambda code: True))


def test_a_file_asked_for_ahead_and_needed_now_is_indexed_once_at_once(tmp_path) -> None:
    from autograph_cg.analysis.runner import FactsCache, Indexer, stamp_files
    from autograph_cg.sources import discover

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    for i in range(30):  # enough files for a pool of two
        (pkg / f"filler{i}.py").write_text(f"def f{i}(x):\n    return x\n")
    sources, _ = discover([str(pkg)], (), False)
    stamped, _ = stamp_files(sources)
    helpers = next(s for s in stamped if s[0].path.endswith("helpers.py"))
    with Indexer(FactsCache(None), jobs=2) as indexer:
        indexer.index(stamped)
        with indexer._lock:  # the pool busy: it waits for the running batch to end
            indexer._running += 1
            indexer.ahead(helpers[0].path)
            indexer._running -= 1
        assert indexer._pending and not indexer._ahead
        deep = indexer.deepen(helpers)
        assert not indexer._pending and not indexer._asked and not indexer._ahead  # taken out, not indexed again later
    assert deep is not None and deep.complete and deep.functions["finish"].walked


MLP = textwrap.dedent(
    """
    from torch import nn


    class MLP(nn.Sequential):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
    """
)
BARE = "from pkg.mlp import MLP\n\n\nclass Same(MLP):\n    pass\n"


def test_a_file_without_forward_is_complete_only_when_a_deep_index_would_find_nothing_more() -> None:
    """A layer that inherits its forward keeps its own `__init__` in a file that never says `forward`: its sublayer
    sites are found by a deep index only, so the shallow facts are not complete; a file of bare subclasses is."""
    builds = index_source("pkg/mlp.py", "pkg.mlp", False, MLP)
    bare = index_source("pkg/bare.py", "pkg.bare", False, BARE)
    assert not builds.deep and not builds.complete and not builds.classes["MLP"].sites
    assert index_source("pkg/mlp.py", "pkg.mlp", False, MLP, deep=True).classes["MLP"].sites
    assert not bare.deep and bare.complete
    asked: list[str] = []
    package = Package([builds, bare], keep=lambda code: True, deepen=_deepen({"pkg/mlp.py": MLP}, asked))
    package.compute_all()
    assert asked == ["pkg/mlp.py"] and not package.shallow_reached  # the bare subclasses' file is not indexed again
