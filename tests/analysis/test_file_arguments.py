"""A file named alone is analyzed with its package and reported as the run over the package reports it.

pre-commit hands a hook only the files a commit changes: each must get the answers of the whole package (its
findings, the verdicts of its classes, its sites), not those of the file read on its own. `--files-alone` keeps
the old reading for whoever wants it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograph_cg.api import Options, analyze
from autograph_cg.cli import main
from autograph_cg.sources import package_root

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("paddle_lm", "torch_lm")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("AUTOGRAPH_CG_MIN_KERNELS")  # the fixtures as users get them: with the cost model


def _files(package: str) -> list[str]:
    return sorted(f"fixtures/{package}/{p.name}" for p in (ROOT / "fixtures" / package).glob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_each_file_is_reported_as_the_whole_package_reports_it(package: str) -> None:
    whole = analyze([f"fixtures/{package}"], Options(use_cache=False))
    assert whole.findings and whole.plan is not None and whole.plan.sites
    for path in _files(package):
        alone = analyze([path], Options(use_cache=False))
        assert alone.files == [path]
        expected = whole.only(frozenset({path}))
        assert alone == expected
        verdicts = expected.verdicts
        assert alone.plan is not None and alone.plan.verdicts == verdicts
        assert {r.qualname for r in alone.plan.roots} <= set(verdicts)
        assert alone.summary.findings == len(expected.findings) and sum(alone.summary.verdicts.values()) == len(verdicts)
        assert alone.summary.analyzed == 1 and alone.summary.lines == whole.lines[path]


@pytest.mark.parametrize("package", PACKAGES)
def test_files_alone_is_the_old_reading(package: str) -> None:
    """Alone, ops.py's `.item()` (reached from another file's forward) is not seen and model.py plans nothing."""
    ops, model = f"fixtures/{package}/ops.py", f"fixtures/{package}/model.py"
    lone = Options(use_cache=False, files_alone=True)
    assert [f.code for f in analyze([ops], Options(use_cache=False)).findings] == ["AG101"]
    assert analyze([ops], lone).findings == []
    lone_plan = analyze([model], lone).plan
    assert lone_plan is not None and not [s for s in lone_plan.sites if not s.existing]


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--no-cache", "-q", "--no-color"])
    return result.exit_code, result.output


def test_the_commands_answer_for_a_file_with_its_package() -> None:
    model = "fixtures/paddle_lm/model.py"
    assert _cli("rewrite", "--check", model)[0] == 1  # the hook's case: an eligible layer left unwrapped
    assert _cli("rewrite", "--check", model, "--files-alone")[0] == 0
    code, out = _cli("rewrite", "--diff", model)
    assert code == 0 and out.startswith(f"--- a/{model}\n") and out.count("--- a/") == 1
    code, out = _cli("lint", "fixtures/paddle_lm/ops.py", "--format", "json")
    assert code == 1 and [(f["path"], f["code"]) for f in json.loads(out)["findings"]] == [("fixtures/paddle_lm/ops.py", "AG101")]
    code, out = _cli("plan", model, "--format", "json")
    plan = json.loads(out)
    assert code == 0 and {v["path"] for v in plan["verdicts"]} == {model} and {s["path"] for s in plan["sites"]} == {model}


def test_rewrite_of_a_file_edits_that_file_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write mode decides with the package and touches only the file named."""
    shutil.copytree(ROOT / "fixtures" / "paddle_lm", tmp_path / "paddle_lm")
    monkeypatch.chdir(tmp_path)
    before = {p.name: p.read_bytes() for p in (tmp_path / "paddle_lm").glob("*.py")}
    assert _cli("rewrite", "paddle_lm/model.py")[0] == 0
    after = {p.name: p.read_bytes() for p in (tmp_path / "paddle_lm").glob("*.py")}
    assert [name for name in before if before[name] != after[name]] == ["model.py"]
    assert b"CUDAGraphedLayer(DecoderBlock(" in after["model.py"]
    assert _cli("rewrite", "--check", ".")[0] == 0  # what the package run would have written, nothing more


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_package_root_by_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _tree(tmp_path, {
        "proj/pyproject.toml": "",
        "proj/pkg/__init__.py": "", "proj/pkg/sub/__init__.py": "", "proj/pkg/sub/m.py": "",
        "proj/scripts/train.py": "",
        "srcproj/setup.cfg": "", "srcproj/src/lib/__init__.py": "", "srcproj/src/lib/m.py": "",
        "wheel/top/__init__.py": "", "wheel/top/inner/__init__.py": "", "wheel/top/inner/m.py": "",
        "boxed/.git/HEAD": "", "boxed/__init__.py": "", "boxed/pkg/__init__.py": "", "boxed/pkg/m.py": "",
        "loose/a.py": "",
    })
    assert package_root("proj/pkg/sub/m.py") == "proj"  # a package at the project root: the project
    assert package_root("proj/scripts/train.py") == os.path.join("proj", "scripts")  # a script: its folder
    assert package_root("srcproj/src/lib/m.py") == os.path.join("srcproj", "src")  # the src/ layout
    assert package_root("wheel/top/inner/m.py") == os.path.join("wheel", "top")  # no project: the top package
    assert package_root("boxed/pkg/m.py") == "boxed"  # the project folder is a package itself: no higher
    assert package_root("loose/a.py") == "loose"
    assert package_root(str(tmp_path / "loose" / "a.py")) == "loose"  # below the working directory: relative
    monkeypatch.chdir(tmp_path / "loose")
    assert package_root("../wheel/top/m.py") == str(tmp_path / "wheel" / "top")  # above it: absolute
