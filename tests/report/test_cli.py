"""Bad input for the report paths of the CLI: one clear line on stderr, exit 2, no file left behind."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from autograph_cg.cli import main
from autograph_cg.report import FORMATS

from .conftest import REPO


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(REPO)


def run(*args: str):
    return CliRunner().invoke(main, [*args, "--no-cache", "--no-color"])


def files_under(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


def test_report_writes_the_page_and_one_summary_line(tmp_path):
    out = tmp_path / "report.html"
    result = run("report", "fixtures/paddle_lm", "--html", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"autograph-cg: wrote {out}: 12 layer classes (6 ineligible, 0 unknown, 0 conditional, 6 eligible, 0 skipped)")
    assert "of 15 layer instantiations graphed, 11 findings; " in line and line.endswith(" s")
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_report_quiet_prints_nothing(tmp_path):
    result = run("report", "fixtures/paddle_lm", "--html", str(tmp_path / "r.html"), "-q")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("where", ["missing/dir/r.html", "file/r.html"])
def test_report_unwritable_html(tmp_path, where):
    (tmp_path / "file").write_text("")
    result = run("report", "fixtures/paddle_lm", "--html", str(tmp_path / where), "-q")
    assert result.exit_code == 2
    assert result.stderr == f"autograph-cg: error: cannot write {tmp_path / where}: " + (
        "No such file or directory\n" if where.startswith("missing") else "Not a directory\n"
    )
    assert files_under(tmp_path) == ["file"]


def test_report_with_nothing_to_analyze_writes_nothing(tmp_path):
    out = tmp_path / "r.html"
    result = run("report", str(tmp_path / "nope"), "--html", str(out), "-q")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == "autograph-cg: error: nothing could be analyzed"
    assert not out.exists()


def test_report_needs_html(tmp_path):
    result = run("report", "fixtures/paddle_lm")
    assert result.exit_code == 2 and "--html" in result.stderr


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_lint_output_unwritable_for_every_format(tmp_path, fmt):
    target = tmp_path / "no" / "report.out"
    result = run("lint", "fixtures/paddle_lm", "--format", fmt, "--output", str(target), "-q")
    assert result.exit_code == 2
    assert result.stderr == f"autograph-cg: error: cannot write {target}: No such file or directory\n"
    assert files_under(tmp_path) == []


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the paddle fixture package in a fresh project folder, the working directory."""
    shutil.copytree(REPO / "fixtures" / "paddle_lm", tmp_path / "paddle_lm")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_lint_baseline_hides_old_findings_across_line_moves_and_reports_new_ones(project):
    written = run("lint", "paddle_lm", "--write-baseline", "baseline.json", "-q")
    assert written.exit_code == 0
    entries = json.loads((project / "baseline.json").read_text())["findings"]
    assert sum(e["count"] for e in entries) == 11 and all(e["path"].startswith("paddle_lm/") for e in entries)

    heads = project / "paddle_lm" / "heads.py"
    lines = heads.read_text().splitlines(keepends=True)
    # code moves: ten lines added at the top, and a new `.item()` in TopPSampler.forward
    new_hazard = "        top = probs.max().item()\n"
    forward = next(i for i, line in enumerate(lines) if "def forward" in line)
    lines.insert(forward + 1, new_hazard)
    heads.write_text("# moved\n" * 10 + "".join(lines))

    result = run("lint", "paddle_lm", "--baseline", "baseline.json", "-q")
    assert result.exit_code == 1
    [line] = result.stdout.splitlines()
    assert line.startswith(f"paddle_lm/heads.py:{forward + 12}:") and " AG101 " in line

    heads.write_text("# moved\n" * 10 + "".join(lines).replace(new_hazard, ""))
    assert run("lint", "paddle_lm", "--baseline", "baseline.json", "-q").exit_code == 0


@pytest.mark.parametrize("content", ["{not json", '{"findings": []}'])
def test_lint_corrupt_baseline_is_exit_2(project, content):
    (project / "baseline.json").write_text(content)
    result = run("lint", "paddle_lm", "--baseline", "baseline.json", "-q", "--format", "sarif", "-o", "out.sarif")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("autograph-cg: error: ") and "baseline.json" in line
    assert not (project / "out.sarif").exists()
