"""Each report format on the fixture packages, end to end through the CLI, against the files in golden/.

After an intended change to the analyzer or an emitter, regenerate them and review the diff:
    AUTOGRAPH_CG_UPDATE_GOLDEN=1 python -m pytest tests/report/test_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograph_cg.cli import main
from autograph_cg.report import html

from .conftest import REPO
from .test_sarif import assert_valid

GOLDEN = Path(__file__).parent / "golden"
PACKAGES = ("paddle_lm", "torch_lm")
ROOT_URI = "file:///REPO/"  # stands for the checkout's own location in the golden SARIF


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(REPO)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--no-cache", "-q", "--no-color"])
    return result.exit_code, result.stdout, result.stderr


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("AUTOGRAPH_CG_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from the golden file"


@pytest.mark.parametrize("package", PACKAGES)
def test_sarif_golden_and_schema_valid(package, tmp_path):
    out = tmp_path / "report.sarif"
    code, stdout, _ = run("lint", f"fixtures/{package}", "--format", "sarif", "--output", str(out))
    assert (code, stdout) == (1, "")
    text = out.read_text(encoding="utf-8")
    document = json.loads(text)
    assert_valid(document)
    assert document["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == REPO.as_uri() + "/"
    check(f"{package}.sarif", text.replace(REPO.as_uri() + "/", ROOT_URI))


@pytest.mark.parametrize("package", PACKAGES)
def test_github_golden(package):
    code, stdout, _ = run("lint", f"fixtures/{package}", "--format", "github")
    assert code == 1
    check(f"{package}.github.txt", stdout)


@pytest.mark.parametrize("package", PACKAGES)
def test_junit_golden(package, tmp_path):
    out = tmp_path / "junit.xml"
    code, _, _ = run("lint", f"fixtures/{package}", "--format", "junit", "-o", str(out))
    assert code == 1
    check(f"{package}.junit.xml", out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("package", PACKAGES)
def test_html_golden(package, tmp_path):
    out = tmp_path / "report.html"
    code, stdout, _ = run("report", f"fixtures/{package}", "--html", str(out))
    assert (code, stdout) == (0, "")
    text = out.read_text(encoding="utf-8")
    for asset in ("html.css", "html.js"):  # the page's content is the golden part; the assets have their own tests
        content = html._asset(asset)
        assert text.count(content) == 1
        text = text.replace(content, f"/* {asset} */\n")
    check(f"{package}.html", text)


def test_formats_agree_on_the_findings():
    """The same findings in every format: positions in SARIF, GitHub and JUnit match the text output."""
    _, text, _ = run("lint", "fixtures/paddle_lm")
    expected = sorted(line.split(" ", 2)[0] + line.split(" ", 2)[1] for line in text.splitlines())
    _, github_out, _ = run("lint", "fixtures/paddle_lm", "--format", "github")
    from_github = []
    for line in github_out.splitlines():
        props = dict(p.split("=", 1) for p in line.split(" ", 1)[1].split("::")[0].split(","))
        from_github.append(f"{props['file']}:{props['line']}:{props['col']}:{props['title'].split()[0]}")
    assert sorted(from_github) == expected
