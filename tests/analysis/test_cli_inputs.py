"""The CLI on bad and odd input: one clear line per problem, the rest still analyzed, the documented exit codes."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from autograph_cg.cli import main

LAYER = """import paddle
import paddle.nn as nn


class Head(nn.Layer):
    def forward(self, x):
        return x.sum().item()
"""
CLEAN = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 1:
            x = x * 2
        return x
"""


def invoke(*args: str):
    return CliRunner().invoke(main, [*args, "--no-cache"])


def test_exit_codes_clean_findings_and_exit_zero(tmp_path):
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "head.py").write_text(LAYER)
    assert invoke("lint", str(tmp_path / "clean.py")).exit_code == 0
    result = invoke("lint", str(tmp_path / "bad"))
    assert result.exit_code == 1
    assert "head.py:7:16: AG101" in result.output
    assert invoke("lint", str(tmp_path / "bad"), "--exit-zero").exit_code == 0


def test_missing_path_is_reported_and_others_still_analyzed(tmp_path):
    (tmp_path / "head.py").write_text(LAYER)
    result = invoke("lint", str(tmp_path / "nope"), str(tmp_path / "head.py"))
    assert result.exit_code == 1
    assert "nope: no such file or directory" in result.stderr
    assert "AG101" in result.stdout


def test_nothing_analyzable_exits_2(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("lint", str(tmp_path / "empty"))
    assert result.exit_code == 2
    assert "no Python files found" in result.stderr
    assert invoke("lint", str(tmp_path / "missing")).exit_code == 2


def test_syntax_error_binary_and_undecodable_files(tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "head.py").write_text(LAYER)
    result = invoke("lint", str(tmp_path))
    assert result.exit_code == 1
    err = result.stderr
    assert "broken.py: syntax error at line 1" in err
    assert "binary.py: binary file" in err
    assert "latin.py: cannot decode" in err
    assert "AG101" in result.stdout
    assert len([line for line in err.splitlines() if line.startswith("autograph-cg: error:")]) == 3


def test_declared_encoding_and_bom_are_read(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + LAYER.replace("x.sum()", "x.sum() ").encode() + b"s = '\xe9'\n")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + LAYER.replace("Head", "Head2").encode())
    result = invoke("lint", str(tmp_path), "--format", "json")
    paths = {Path(f["path"]).name for f in json.loads(result.stdout)["findings"]}
    assert paths == {"latin.py", "bom.py"}
    assert json.loads(result.stdout)["errors"] == []


def test_non_ascii_columns_are_characters(tmp_path):
    (tmp_path / "m.py").write_text(LAYER.replace("return x.sum().item()", "return x.sum().item()  # ü").replace("def forward(self, x):", "def forward(self, x):\n        s = 'éé'; y = x.sum().item()"))
    result = invoke("lint", str(tmp_path), "--format", "json")
    cols = sorted((f["line"], f["col"]) for f in json.loads(result.stdout)["findings"])
    assert cols == [(7, 23), (8, 16)]  # bytes would give 25 on line 7


def test_symlink_loop_is_reported(tmp_path):
    (tmp_path / "head.py").write_text(LAYER)
    os.symlink(tmp_path / "loop_a.py", tmp_path / "loop_b.py")
    os.symlink(tmp_path / "loop_b.py", tmp_path / "loop_a.py")
    result = invoke("lint", str(tmp_path))
    assert result.exit_code == 1
    assert "symlink loop" in result.stderr
    result = invoke("lint", str(tmp_path / "loop_a.py"))
    assert result.exit_code == 2 and "symlink loop" in result.stderr


def test_unreadable_file_is_reported(tmp_path, monkeypatch):
    (tmp_path / "head.py").write_text(LAYER)
    (tmp_path / "secret.py").write_text(CLEAN)
    real_open = builtins.open

    def guarded(path, *args, **kwargs):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    result = invoke("lint", str(tmp_path))
    assert "secret.py: permission denied" in result.stderr
    assert result.exit_code == 1


def test_bad_selector_is_a_usage_error(tmp_path):
    (tmp_path / "head.py").write_text(LAYER)
    result = invoke("lint", str(tmp_path), "--select", "XX9")
    assert result.exit_code == 2
    assert "unknown rule selector" in result.output


def test_select_ignore_by_code_prefix_and_name(tmp_path):
    (tmp_path / "head.py").write_text(LAYER.replace("return x.sum().item()", "y = x.nonzero()\n        return y.sum().item()"))
    def codes(*args):
        return {f["code"] for f in json.loads(invoke("lint", str(tmp_path), "--format", "json", *args).stdout)["findings"]}
    assert codes() == {"AG101", "AG201"}
    assert codes("--select", "AG2") == {"AG201"}
    assert codes("--ignore", "host-sync-item") == {"AG201"}


def test_explain_and_rules():
    result = CliRunner().invoke(main, ["explain", "AG101"])
    assert result.exit_code == 0 and "## Why it breaks a CUDA graph" in result.output
    assert CliRunner().invoke(main, ["explain", "host-sync-item"]).output == result.output
    assert CliRunner().invoke(main, ["explain", "AG999"]).exit_code == 2
    listing = CliRunner().invoke(main, ["rules"]).output
    assert "AG101  host-sync-item" in listing and "AG901" in listing


def test_lint_needs_neither_framework_nor_imports_the_code(tmp_path):
    """Frameworks blocked from import; the analyzed package would write a file if it were ever imported."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    marker = tmp_path / "imported"
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (pkg / "head.py").write_text(LAYER)
    script = (
        "import sys\n"
        "sys.modules['paddle'] = None\nsys.modules['torch'] = None\n"
        "from autograph_cg.cli import main\n"
        f"sys.argv = ['autograph-cg', 'lint', {str(pkg)!r}, '--no-cache']\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "AG101" in result.stdout
    assert not marker.exists()


def test_build_and_dist_folders_are_skipped_unless_they_are_packages(tmp_path):
    from autograph_cg.sources import discover

    pkg = tmp_path / "pkg"
    for folder in ("build", "dist", "models/build", "models/dist", "venv", "models"):
        (pkg / folder).mkdir(parents=True, exist_ok=True)
        (pkg / folder / "m.py").write_text("x = 1\n")
    for package in ("", "models", "models/build"):
        (pkg / package / "__init__.py").write_text("")
    found, errors = discover([str(pkg)])
    names = sorted(f.module for f in found if not f.is_package)
    # build output next to the source is skipped; `models/build` is a package of the source; `models/dist` is not
    assert names == ["pkg.models.build.m", "pkg.models.m"], names
    assert not errors
