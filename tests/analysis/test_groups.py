"""Files that do not import each other are judged apart, in processes of their own, and answer as one run over all
of them: the groups follow every import (a function's own too), the answers join in the order one run gives them, and
a group whose process fails is judged by the main one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograph_cg import api
from autograph_cg.analysis.groups import separate
from autograph_cg.analysis.index import index_source
from autograph_cg.api import Analysis, Options, analyze

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("paddle_lm", "torch_lm")


@pytest.fixture(autouse=True)
def _cost_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTOGRAPH_CG_MIN_KERNELS", raising=False)


def _tree(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / "fixtures" / package, tmp_path / "tree" / package)
    return tmp_path / "tree"


def _answer(analysis: Analysis) -> tuple:
    assert analysis.plan is not None
    return (analysis.findings, list(analysis.verdicts.items()), analysis.plan, analysis.errors, analysis.files, analysis.summary)


def _module(path: str, module: str, text: str):  # noqa: ANN202  ModuleFacts
    return index_source(path, module, path.endswith("__init__.py"), text)


def test_groups_follow_every_import_wherever_it_stands() -> None:
    modules = [
        _module("a/__init__.py", "a", ""),
        _module("a/m.py", "a.m", "def f():\n    from b.n import g\n    return g()\n"),  # a function's own import
        _module("b/n.py", "b.n", "class C:\n    import c as lib\n"),  # a class body's
        _module("c/o.py", "c.o", "x = 1\n"),
        _module("d/p.py", "d.p", "import os\nfrom . import q\n"),  # outside code, and itself
        _module("e.py", "e", "try:\n    import torch\nexcept ImportError:\n    import d.p\n"),
    ]
    groups = [[m.module for m in group] for group in separate(modules)]
    assert groups == [["a", "a.m", "b.n", "c.o"], ["d.p", "e"]]


@pytest.mark.parametrize("jobs", [1, 2])
def test_packages_judged_apart_answer_as_one_run(tmp_path: Path, jobs: int) -> None:
    """Each package alone, and the two together judged apart (in a forked process with two jobs), cached and not."""
    tree = _tree(tmp_path)
    together = analyze([str(tree)], Options(use_cache=False, jobs=jobs))
    alone = [analyze([str(tree / package)], Options(use_cache=False, jobs=1)) for package in PACKAGES]
    assert together.verdicts == {q: v for a in alone for q, v in a.verdicts.items()}
    assert sorted(together.findings, key=lambda f: f.sort_key()) == together.findings
    assert together.findings == sorted((f for a in alone for f in a.findings), key=lambda f: f.sort_key())
    assert together.plan is not None and together.plan.sites == tuple(s for a in alone for s in a.plan.sites)  # type: ignore[union-attr]
    cache = str(tmp_path / "cache")
    cold = analyze([str(tree)], Options(cache_dir=cache, jobs=jobs))
    assert _answer(cold) == _answer(together)
    assert len(list(Path(cache).glob("solved-*.pickle"))) == len(PACKAGES)  # a state per group
    norm = tree / "torch_lm" / "norm.py"
    norm.write_text(norm.read_text() + "# edited\n")
    warm = analyze([str(tree)], Options(cache_dir=cache, jobs=jobs))
    assert _answer(warm) == _answer(analyze([str(tree)], Options(use_cache=False, jobs=1)))


def test_a_group_whose_process_failed_is_judged_by_the_main_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path)
    expected = analyze([str(tree)], Options(use_cache=False, jobs=1))
    monkeypatch.setattr(api, "forked", lambda work: (work(), lambda: None)[1])  # it takes every group, then fails
    assert _answer(analyze([str(tree)], Options(use_cache=False, jobs=2))) == _answer(expected)


def test_an_edit_judges_again_only_the_group_it_is_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other group takes its last answer, loading no solved state: a planned one serves lint, without its plan."""
    tree = _tree(tmp_path)
    cache = str(tmp_path / "cache")
    analyze([str(tree)], Options(cache_dir=cache, jobs=1))
    analyze([str(tree / "paddle_lm")], Options(cache_dir=cache, jobs=1))  # its own answer, beside the group's
    norm = tree / "torch_lm" / "norm.py"
    norm.write_text(norm.read_text() + "# edited\n")
    judged: list[str] = []
    real = api._judge
    monkeypatch.setattr(api, "_judge", lambda modules, *rest: judged.append(modules[0].module.partition(".")[0]) or real(modules, *rest))
    lint = analyze([str(tree)], Options(cache_dir=cache, jobs=1, plan=False))
    assert judged == ["torch_lm"]
    warm = analyze([str(tree)], Options(cache_dir=cache, jobs=1))
    assert judged == ["torch_lm", "torch_lm"]  # a lint answer does not serve a plan
    assert _answer(warm) == _answer(analyze([str(tree)], Options(use_cache=False, jobs=1)))
    assert (lint.plan, lint.findings, lint.verdicts) == (None, warm.findings, warm.verdicts)
