"""A run after an edit answers from the last run's solved state and gives exactly what a run from nothing gives: an
edit that leaves every summary as it was keeps every resolver answer; one that changes summaries (not what a file
imports or defines) drops the answers that read them; one that changes a file's frame, or adds or removes a file,
is solved afresh."""

from __future__ import annotations

import pickle
import re
import shutil
from pathlib import Path

import pytest

from autograph_cg.analysis.eligibility import Package
from autograph_cg.analysis import index
from autograph_cg.analysis.index import index_source
from autograph_cg.analysis.resolver.sites import CallSites
from autograph_cg.api import Analysis, Options, analyze

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("paddle_lm", "torch_lm")
#: Lines put at the top of a forward's body that leave the file's summaries as they were
QUIET = ("# an edit", "pass", "print({arg})")
#: Lines that change the forward's summary: a new local, a call of a sublayer, of a method, through a value
LOUD = ("extra = {arg} * 2", "{arg} = self.{attr}({arg})", "{arg} = self.forward({arg}) if {arg} is None else {arg}", "extra = [{arg}][0]({arg})")


@pytest.fixture(autouse=True)
def _cost_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTOGRAPH_CG_MIN_KERNELS", raising=False)


def _copy(tmp_path: Path, package: str) -> Path:
    return Path(shutil.copytree(ROOT / "fixtures" / package, tmp_path / package))


def _answer(analysis: Analysis) -> tuple:
    assert analysis.plan is not None
    return (
        analysis.findings,
        analysis.verdicts,
        analysis.plan.sites,
        analysis.plan.skipped,
        analysis.plan.unresolved,
        analysis.plan.roots,
        analysis.plan.notes,
        analysis.errors,
    )


class _Spy:
    """Which packages a run judged and whether the resolver indexed the call sites again (a fresh solve)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.packages: list[Package] = []
        self.solves = 0
        package_init, sites_init = Package.__init__, CallSites.__init__

        def made(package: Package, *args: object, **kwargs: object) -> None:
            package_init(package, *args, **kwargs)
            self.packages.append(package)

        def indexed(sites: CallSites, package: object, index: CallSites | None = None) -> None:
            self.solves += index is None  # the main solver indexing the package's calls: a solve from nothing
            sites_init(sites, package, index)

        monkeypatch.setattr(Package, "__init__", made)
        monkeypatch.setattr(CallSites, "__init__", indexed)


def _edits(text: str, lines: tuple[str, ...]) -> list[str]:
    """The file with one of `lines` put at the top of each forward's body, one edit per forward and line."""
    out = []
    attr = (re.findall(r"self\.(\w+) = ", text) or ["missing"])[0]
    for match in re.finditer(r"\n( +)def forward\(self, (\w+)[^\n]*:\n(?: +\"\"\"[^\n]*\"\"\"\n)?", text):
        indent = match.group(1) + "    "
        for line in lines:
            out.append(text[: match.end()] + indent + line.format(arg=match.group(2), attr=attr) + "\n" + text[match.end() :])
    return out


def test_a_finding_added_where_a_forward_reaches_is_reported_and_judged(tmp_path: Path) -> None:
    """ops.py's rotate_half gains a host sync: the attention that calls it is judged again, the rest is kept."""
    root = _copy(tmp_path, "paddle_lm")
    cache = str(tmp_path / "cache")
    first = analyze([str(root)], Options(cache_dir=cache))
    ops = root / "ops.py"
    ops.write_text(ops.read_text().replace("    x1, x2 = paddle.chunk(x, 2, axis=-1)\n", "    print(x)\n    x1, x2 = paddle.chunk(x, 2, axis=-1)\n"))
    warm = analyze([str(root)], Options(cache_dir=cache))
    assert _answer(warm) == _answer(analyze([str(root)], Options(use_cache=False)))
    line = ops.read_text().splitlines().index("    print(x)") + 1
    assert [f.code for f in warm.findings if f.path == str(ops) and f.span.line == line] == ["AG106"]
    changed = {q for q, v in warm.verdicts.items() if v != first.verdicts[q]}
    assert "paddle_lm.attention.MultiHeadAttention" in changed and not [q for q in changed if ".mlp." in q]


def _swaps(text: str) -> list[str]:
    """The file with the class one `self.x = Cls(...)` builds replaced by another class the file names, one edit per
    construction and class: what the layer holds changes, and so may the verdicts of every class that holds it."""
    names = sorted(set(re.findall(r"\b([A-Z]\w+)\(", text)) - {"super"})
    out = []
    for match in re.finditer(r"self\.\w+ = ([A-Z]\w+)\(", text):
        for other in names:
            if other != match.group(1):
                out.append(text[: match.start(1)] + other + text[match.end(1) :])
    return out


#: Each kind of edit: the edited texts of a file, and whether they change its summaries
EDITS = {"quiet": (lambda text: _edits(text, QUIET), False), "summaries": (lambda text: _edits(text, LOUD) + _swaps(text), True)}


@pytest.mark.parametrize("kind", sorted(EDITS))
@pytest.mark.parametrize("package", PACKAGES)
def test_edits_keep_the_resolver_and_answer_as_a_fresh_run(tmp_path: Path, package: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every edit of its kind at every forward (and construction) of a fixture package, one at a time: the warm run
    keeps the resolver (no fresh solve) and some results, and answers as a run from nothing."""
    make, changes_summaries = EDITS[kind]
    root = _copy(tmp_path, package)
    cache = str(tmp_path / "cache")
    analyze([str(root)], Options(cache_dir=cache))
    edited = 0
    for path in sorted(root.glob("*.py")):
        original = path.read_text()
        for text in make(original):
            old, new = (index_source(str(path), f"{package}.{path.stem}", False, t).digests for t in (original, text))
            assert old is not None and new is not None and old[0] == new[0] and (old[1] != new[1]) == changes_summaries, text
            path.write_text(text)
            with monkeypatch.context() as patch:
                spy = _Spy(patch)
                warm = analyze([str(root)], Options(cache_dir=cache))
            assert spy.solves == 0 and spy.packages[0].kept > 0, "the resolver's answers were not kept"
            assert _answer(warm) == _answer(analyze([str(root)], Options(use_cache=False))), (path.name, text)
            edited += 1
        path.write_text(original)
    assert edited >= 12


@pytest.mark.parametrize("edit", ["import", "base", "new function", "new file", "removed file"])
def test_an_edit_of_what_a_file_imports_or_defines_solves_afresh(tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(tmp_path, "torch_lm")
    cache = str(tmp_path / "cache")
    analyze([str(root)], Options(cache_dir=cache))
    ops, norm = root / "ops.py", root / "norm.py"
    if edit == "import":
        ops.write_text("import math\n" + ops.read_text())
    elif edit == "base":
        norm.write_text(re.sub(r"class (\w+)\(nn\.Module\)", r"class \1(nn.Module, object)", norm.read_text(), count=1))
    elif edit == "new function":
        ops.write_text(ops.read_text() + "\n\ndef unused(x):\n    return x\n")
    elif edit == "new file":
        (root / "extra.py").write_text("import torch\n\n\nclass Extra(torch.nn.Module):\n    def forward(self, x):\n        return x.nonzero()\n")
    else:
        (root / "heads.py").unlink()
    with monkeypatch.context() as patch:
        spy = _Spy(patch)
        warm = analyze([str(root)], Options(cache_dir=cache))
    assert spy.solves > 0 and spy.packages[0].kept == 0
    assert _answer(warm) == _answer(analyze([str(root)], Options(use_cache=False)))


def test_a_damaged_solved_state_is_solved_afresh(tmp_path: Path) -> None:
    root = _copy(tmp_path, "paddle_lm")
    cache = tmp_path / "cache"
    analyze([str(root)], Options(cache_dir=str(cache)))
    states = list(cache.glob("solved-*.pickle"))
    assert len(states) == 1
    states[0].write_bytes(states[0].read_bytes()[:1000])
    (root / "norm.py").write_text((root / "norm.py").read_text() + "# edited\n")
    warm = analyze([str(root)], Options(cache_dir=str(cache)))
    assert _answer(warm) == _answer(analyze([str(root)], Options(use_cache=False)))


def test_a_planned_run_after_lint_keeps_the_plans_answers(tmp_path: Path) -> None:
    """`rewrite --check` after `lint`, nothing edited: the state lint kept lacks what the plan asks the resolver, so the
    planned run keeps its own (a later planned run carries the plan's answers), and answers as a run from nothing."""
    root = _copy(tmp_path, "torch_lm")
    cache = tmp_path / "cache"
    analyze([str(root)], Options(cache_dir=str(cache), plan=False))
    (state,) = cache.glob("solved-*.pickle")
    assert not pickle.loads(state.read_bytes()).planned
    warm = analyze([str(root)], Options(cache_dir=str(cache)))
    assert pickle.loads(state.read_bytes()).planned
    assert _answer(warm) == _answer(analyze([str(root)], Options(use_cache=False)))


def test_a_run_over_one_package_keeps_the_facts_of_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook's run over one package of a tree, then an edit and a run over the tree: only the edited file is read."""
    tree = tmp_path / "tree"
    for package in PACKAGES:
        shutil.copytree(ROOT / "fixtures" / package, tree / package)
    cache = str(tmp_path / "cache")
    analyze([str(tree)], Options(cache_dir=cache, jobs=1))
    for package in PACKAGES:  # an edit in each: the run over paddle_lm reads one file and writes the cache
        norm = tree / package / "norm.py"
        norm.write_text(norm.read_text() + "# edited\n")
        if package == "paddle_lm":
            analyze([str(tree / package)], Options(cache_dir=cache, jobs=1))
    indexed: list[str] = []
    monkeypatch.setattr(index, "index_source", lambda *a, **k: indexed.append(a[0]) or index_source(*a, **k))
    again = analyze([str(tree)], Options(cache_dir=cache, jobs=1))
    assert indexed == [str(norm)]
    monkeypatch.undo()
    monkeypatch.delenv("AUTOGRAPH_CG_MIN_KERNELS", raising=False)
    assert _answer(again) == _answer(analyze([str(tree)], Options(use_cache=False)))


def test_each_package_has_its_facts_file_and_a_run_writes_only_those_it_indexed(tmp_path: Path) -> None:
    """Facts are cached per package: a run over one package after an edit rewrites that package's facts alone."""
    tree = tmp_path / "tree"
    for package in PACKAGES:
        shutil.copytree(ROOT / "fixtures" / package, tree / package)
    cache = tmp_path / "cache"
    analyze([str(tree)], Options(cache_dir=str(cache), jobs=1))
    files = {p.name: p.stat().st_mtime_ns for p in cache.glob("facts-*.pickle")}
    assert len(files) == len(PACKAGES)
    norm = tree / "torch_lm" / "norm.py"
    norm.write_text(norm.read_text() + "# edited\n")
    analyze([str(tree / "torch_lm")], Options(cache_dir=str(cache), jobs=1))
    after = {p.name: p.stat().st_mtime_ns for p in cache.glob("facts-*.pickle")}
    assert after.keys() == files.keys() and sum(after[name] != files[name] for name in files) == 1


def test_a_files_summaries_are_unpickled_when_first_read() -> None:
    """The summaries travel pickled apart inside the file's facts and read as the dict they were."""
    facts = index_source("m.py", "m", False, "def f(x):\n    return g(x)\n\n\ndef g(y):\n    return y\n")
    summaries = dict(facts.scopes)
    assert {"f", "g"} <= summaries.keys()
    again = pickle.loads(pickle.dumps(facts))
    assert "scopes" not in vars(again)  # not read yet
    assert pickle.loads(pickle.dumps(again)) == facts  # pickled again unread
    assert type(again.scopes) is dict and again.scopes == summaries and "scopes" in vars(again) and again == facts
    assert pickle.loads(pickle.dumps(again)).scopes == summaries  # read, it pickles again


FLOW = {
    "pkg/__init__.py": "",
    "pkg/layers.py": (
        "import {fw}.nn as nn\n\n\n"
        "class Clean(nn.{base}):\n    def forward(self, x):\n        return x * 2\n\n\n"
        "class Syncs(nn.{base}):\n    def forward(self, x):\n        return x * x.sum().item()\n"
    ),
    "pkg/config.py": "from .layers import Clean, Syncs\n\n\nclass Config:\n    def __init__(self, layer=Clean):\n        self.layer = layer\n",
    "pkg/model.py": (
        "import {fw}.nn as nn\n\nfrom .config import Config\n\n\n"
        "class Block(nn.{base}):\n    def __init__(self, config=None):\n        super().__init__()\n"
        "        config = config or Config()\n        self.inner = config.layer()\n\n"
        "    def forward(self, x):\n        return self.inner(x)\n"
    ),
}


@pytest.mark.parametrize("fw, base", [("paddle", "Layer"), ("torch", "Module")])
def test_a_result_that_asked_for_an_answer_of_an_edited_summary_is_judged_again(tmp_path: Path, fw: str, base: str) -> None:
    """config.py's default layer changes: Block's verdict read nothing of config.py itself, only what the resolver
    answered about `config.layer`; it is judged again."""
    for rel, text in FLOW.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text.format(fw=fw, base=base))
    cache = str(tmp_path / "cache")
    before = analyze([str(tmp_path / "pkg")], Options(cache_dir=cache))
    assert before.verdicts["pkg.model.Block"].status.value == "eligible"
    config = tmp_path / "pkg" / "config.py"
    config.write_text(config.read_text().replace("layer=Clean", "layer=Syncs"))
    warm = analyze([str(tmp_path / "pkg")], Options(cache_dir=cache))
    assert warm.verdicts["pkg.model.Block"].status.value == "ineligible"
    assert _answer(warm) == _answer(analyze([str(tmp_path / "pkg")], Options(use_cache=False)))
