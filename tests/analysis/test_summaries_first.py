"""A single package judged cold reads only summaries first; its layers' files are walked beside the verdicts (asked for
ahead, in the order judged) or at the latest when a verdict reads them: the answers are those of a first index that
walked forward code."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograph_cg import api
from autograph_cg.analysis import runner
from autograph_cg.analysis.eligibility import Package
from autograph_cg.analysis.index import index_source
from tests.analysis.test_deepening import HELPERS, MODEL, _answer, _modules

LAYERS = """
from torch import nn
from pkg.model import Plain


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Plain()

    def forward(self, x):
        return self.inner(x).sum().item()
"""


TEXTS = {"pkg/model.py": MODEL, "pkg/helpers.py": HELPERS, "pkg/layers.py": LAYERS}


def _facts(path: str, deep: bool | None):
    return index_source(path, path[: -len(".py")].replace("/", "."), False, TEXTS[path], deep=deep)


def _as_indexer(asked: list[tuple[str, bool | None]]):
    """A `deepen` as `Indexer.deepen` gives: a file indexed `walk_later` first with its walks of forward code."""
    walked: set[str] = set()

    def deepen(path: str):
        deep = True if path in walked or not _facts(path, False).walk_later else None
        walked.add(path)
        asked.append((path, deep))
        return _facts(path, deep)

    return deepen


def test_summaries_only_are_read_first_and_walked_as_the_verdicts_need() -> None:
    announced: list[str] = []
    asked: list[tuple[str, bool | None]] = []
    modules = [_facts(path, False) for path in TEXTS]
    assert [m.walk_later for m in modules] == [True, False, True]  # helpers.py has no forward code to walk
    package = Package(modules, keep=lambda code: True, ahead=announced.append, deepen=_as_indexer(asked))
    answer = _answer(package)
    assert announced[:2] == ["pkg/model.py", "pkg/layers.py"]  # the layers' files, before anything is judged
    assert ("pkg/model.py", None) in asked and ("pkg/layers.py", None) in asked and ("pkg/helpers.py", True) in asked
    assert not package.walk_later() and not package.shallow_reached
    walked_first = Package([_facts(path, None) for path in TEXTS], keep=lambda code: True, deepen=_as_indexer([]))
    assert answer == _answer(walked_first)  # as a first index that walked forward code answers
    assert answer[0]["pkg.layers.Wide"][0].value == "ineligible" and answer[0]["pkg.model.Plain"][0].value == "eligible"


USES = """
from torch import nn
from pkg.model import scale


class Uses(nn.Module):
    def forward(self, x):
        return scale(x)
"""


def test_a_function_its_first_walks_left_out_is_read_from_every_body_walked() -> None:
    asked: list[tuple[str, bool | None]] = []
    TEXTS.update({"pkg/model.py": MODEL + "\n\ndef scale(x):\n    return x.nonzero()\n", "pkg/uses.py": USES})
    try:
        assert not _facts("pkg/model.py", None).functions["scale"].walked  # no forward of its own file calls it
        shallow = [_facts(path, False) for path in TEXTS]
        alone: list[tuple[str, bool | None]] = []
        reading = Package(shallow, keep=lambda code: True, deepen=_as_indexer(alone))
        _, scale = reading._walked("pkg.model", shallow[0].functions["scale"])
        assert scale.walked and alone == [("pkg/model.py", None), ("pkg/model.py", True)]  # both steps, at one read
        package = Package(shallow, keep=lambda code: True, deepen=_as_indexer(asked))
        answer = _answer(package)
        whole = _answer(Package([_facts(path, True) for path in TEXTS], keep=lambda code: True))
    finally:
        TEXTS.update({"pkg/model.py": MODEL})
        del TEXTS["pkg/uses.py"]
    assert asked.count(("pkg/model.py", None)) == 1 and asked.count(("pkg/model.py", True)) == 1  # walked, then whole
    assert answer == whole and answer[0]["pkg.uses.Uses"][0].value == "ineligible"


def test_a_layer_file_indexed_deeply_already_is_not_asked_for_again() -> None:
    announced: list[str] = []
    Package(_modules(None), keep=lambda code: True, ahead=announced.append).compute_all()
    assert "pkg/model.py" not in announced  # its forward code was walked by the first index


def _package(root: Path, tops: tuple[str, ...]) -> list[str]:
    for top in tops:
        pkg = root / top
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "model.py").write_text(MODEL.replace("pkg.", f"{top}."))
        (pkg / "helpers.py").write_text(HELPERS)
        (pkg / "layers.py").write_text(LAYERS.replace("pkg.", f"{top}."))
        for i in range(runner._POOL_THRESHOLD):  # enough files for a pool of two
            (pkg / f"filler{i}.py").write_text(f"from torch import nn\n\n\nclass C{i}(nn.Module):\n    def forward(self, x):\n        return x\n")
    return [str(root / top) for top in tops]


def _first_depth(monkeypatch: pytest.MonkeyPatch) -> list[bool | None]:
    depths: list[bool | None] = []
    index = runner.Indexer.index

    def spy(self, stamped, deep=None, round_end=True):
        depths.append(deep)
        return index(self, stamped, deep, round_end)

    monkeypatch.setattr(runner.Indexer, "index", spy)
    return depths


@pytest.mark.parametrize("tops", [("pkg",), ("pkg", "other")])
def test_a_cold_run_answers_as_a_first_index_of_forward_code_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tops: tuple[str, ...]) -> None:
    paths = _package(tmp_path, tops)
    options = api.Options(jobs=2, use_cache=False)
    depths = _first_depth(monkeypatch)
    first = api.analyze(paths, options)
    assert depths[0] is (False if tops == ("pkg",) else None)  # one top-level package: summaries only
    monkeypatch.setattr(api, "_summaries_first", lambda *args: False)
    walked = api.analyze(paths, options)
    assert (first.findings, first.verdicts, first.plan) == (walked.findings, walked.verdicts, walked.plan)
    assert first.verdicts["pkg.layers.Wide"].status.value == "ineligible" and first.verdicts["pkg.model.Plain"].status.value == "eligible"
    assert {f.code for f in first.findings} >= {"AG101", "AG201"}


def test_a_run_with_a_state_or_one_process_walks_forward_code_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _package(tmp_path, ("pkg",))
    depths = _first_depth(monkeypatch)
    api.analyze(paths, api.Options(jobs=1, use_cache=False))
    assert depths[0] is None  # no pool to walk beside the verdicts
    cache = api.Options(jobs=2, cache_dir=str(tmp_path / "cache"))
    api.analyze(paths, cache)
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS + "\n# edited\n")
    depths.clear()
    api.analyze(paths, cache)  # the last run's state says which files it read deeply
    assert depths[0] is None


def test_the_index_gives_a_file_read_as_summaries_its_walks_of_forward_code_first(tmp_path: Path) -> None:
    from autograph_cg.sources import discover

    sources, _ = discover(_package(tmp_path, ("pkg",)), (), False)
    stamped, _ = runner.stamp_files(sources)
    model, layers = (next(s for s in stamped if s[0].path.endswith(name)) for name in ("model.py", "layers.py"))
    with runner.Indexer(runner.FactsCache(None), jobs=2) as indexer:
        first, _ = indexer.index(stamped, deep=False)
        assert {m.path for m in first if m.walk_later} >= {model[0].path, layers[0].path}
        indexer.ahead(layers[0].path)  # the pool idle: handed over at once, to be walked as a first index walks it
        assert indexer._ahead[layers[0].path][2] is None
        walked, whole, ahead = indexer.deepen(model), indexer.deepen(model), indexer.deepen(layers)
    text = (tmp_path / "pkg" / "model.py").read_text()
    expected = index_source(model[0].path, "pkg.model", False, text, deep=None)
    assert walked is not None and not walked.walk_later and not walked.complete
    assert (walked.functions, walked.classes) == (expected.functions, expected.classes)
    assert whole is not None and whole.complete  # asked again: every body
    layers_text = (tmp_path / "pkg" / "layers.py").read_text()
    assert ahead is not None and ahead.classes == index_source(layers[0].path, "pkg.layers", False, layers_text, deep=None).classes
