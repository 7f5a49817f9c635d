"""`autograph-cg rewrite` end to end on small packages: modes, settings, formats, exit codes and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from autograph_cg.cli.rewrite import rewrite

LAYERS = """import paddle.nn as nn


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()
        self.count = 0

    def forward(self, x):
        self.count += 1
        return self.mlp(x)
"""
WRAPPED = "self.mlp = CUDAGraphedLayer(MLP())"


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "layers.py").write_text(LAYERS)
    return root


def run(*args: str) -> Result:
    return CliRunner().invoke(rewrite, [*args, "--no-cache"], catch_exceptions=False)


def test_diff_prints_and_writes_nothing(pkg: Path) -> None:
    result = run("pkg", "--diff")
    assert result.exit_code == 0
    assert result.stdout.startswith("--- a/pkg/layers.py\n+++ b/pkg/layers.py\n")
    assert f"+        {WRAPPED}\n" in result.stdout
    assert (pkg / "layers.py").read_text() == LAYERS
    assert run("pkg", "--diff", "--check").exit_code == 1


def test_write_then_undo(pkg: Path) -> None:
    result = run("pkg", "--warmup-steps", "4")
    assert result.exit_code == 0
    assert "rewrote pkg/layers.py (1 site)" in result.stderr
    assert "self.mlp = CUDAGraphedLayer(MLP(), num_warmup_steps=4)" in (pkg / "layers.py").read_text()
    result = run("pkg", "--undo", "--check")
    assert result.exit_code == 1 and "would undo pkg/layers.py (1 site)" in result.stderr
    assert run("pkg", "--undo").exit_code == 0
    assert (pkg / "layers.py").read_text() == LAYERS


def test_warmup_steps_from_pyproject(pkg: Path) -> None:
    (pkg.parent / "pyproject.toml").write_text("[tool.autograph-cg]\nwarmup-steps = 2\n")
    assert run("pkg").exit_code == 0
    assert "CUDAGraphedLayer(MLP(), num_warmup_steps=2)" in (pkg / "layers.py").read_text()


def test_compile_flag_and_config(pkg: Path) -> None:
    """--compile asks every new wrapper to compile its layer; the config key takes true or class patterns;
    a compiled wrapper is rewrite's own shape: a second run changes nothing and undo takes it off."""
    assert run("pkg", "--compile").exit_code == 0
    assert "self.mlp = CUDAGraphedLayer(MLP(), compile=True)" in (pkg / "layers.py").read_text()
    assert run("pkg", "--check").exit_code == 0
    assert run("pkg", "--undo").exit_code == 0 and (pkg / "layers.py").read_text() == LAYERS
    config = pkg.parent / "pyproject.toml"
    config.write_text('[tool.autograph-cg]\ncompile = ["pkg.other.*"]\n')
    assert run("pkg").exit_code == 0 and WRAPPED + "\n" in (pkg / "layers.py").read_text()
    assert run("pkg", "--undo").exit_code == 0
    config.write_text('[tool.autograph-cg]\ncompile = ["pkg.layers.MLP"]\nwarmup-steps = 1\n')
    assert run("pkg").exit_code == 0
    assert "CUDAGraphedLayer(MLP(), num_warmup_steps=1, compile=True)" in (pkg / "layers.py").read_text()
    config.write_text("[tool.autograph-cg]\ncompile = 3\n")
    result = run("pkg", "--undo")
    assert result.exit_code == 2 and "compile must be true, false, or a list" in result.stderr


def test_json_format(pkg: Path) -> None:
    result = run("pkg", "--check", "--format", "json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["files_scanned"] == 2 and payload["sites"] == 1 and payload["files_changed"] == 1
    assert payload["files"] == [{"path": "pkg/layers.py", "status": "would-change", "sites": 1, "kept": 0}]


def test_bad_input_is_reported_and_left_untouched(pkg: Path) -> None:
    (pkg / "broken.py").write_bytes(b"def f(:\n")
    result = run("pkg", "--check")
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if "skipped" in line and "broken.py" in line]
    result = run("pkg")
    assert result.exit_code == 2
    assert WRAPPED in (pkg / "layers.py").read_text()  # the good file is still rewritten
    assert (pkg / "broken.py").read_bytes() == b"def f(:\n"


def test_read_only_file_is_skipped(pkg: Path) -> None:
    (pkg / "layers.py").chmod(0o444)
    result = run("pkg")
    assert result.exit_code == 2
    assert "pkg/layers.py: skipped (read-only)" in result.stderr
    assert (pkg / "layers.py").read_text() == LAYERS


@pytest.mark.parametrize(
    "args",
    [
        ["pkg", "--undo", "--warmup-steps", "2"],
        ["pkg", "--undo", "--compile"],
        ["pkg", "--warmup-steps", "-1"],
        ["missing_dir", "--check"],
    ],
)
def test_usage_errors_exit_2(pkg: Path, args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert (pkg / "layers.py").read_text() == LAYERS


def test_bad_warmup_steps_in_pyproject_is_a_usage_error(pkg: Path) -> None:
    (pkg.parent / "pyproject.toml").write_text('[tool.autograph-cg]\nwarmup-steps = "many"\n')
    result = run("pkg")
    assert result.exit_code == 2 and "warmup-steps" in result.stderr
    assert (pkg / "layers.py").read_text() == LAYERS


GUARDED = """import paddle.nn as nn


class Attention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, past_key_values=None):
        y = self.fc(x)
        if past_key_values is not None:
            y = past_key_values.update(y)
        return y


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.count = 0

    def forward(self, x):
        self.count += 1
        return self.attn(x, self.count)
"""


def test_a_guarded_site_is_wrapped_with_its_guard_then_existing_and_a_stale_guard_is_updated(pkg: Path) -> None:
    from autograph_cg.cli.plan import plan

    layers = pkg / "layers.py"
    layers.write_text(GUARDED)
    wrapped = 'self.attn = CUDAGraphedLayer(Attention(), guard={"past_key_values": "is None"})'
    assert run("pkg", "--min-kernels", "1").exit_code == 0
    assert wrapped in layers.read_text()
    assert run("pkg", "--min-kernels", "1", "--check").exit_code == 0  # wrapped with the right guard: existing
    site = json.loads(CliRunner().invoke(plan, ["pkg", "--no-cache", "--min-kernels", "1", "--format", "json"]).stdout)["sites"][0]
    assert (site["existing"], site["guard"]) == (True, {"past_key_values": "is None"})
    layers.write_text(layers.read_text().replace('"is None"', '"falsy"'))
    assert run("pkg", "--min-kernels", "1", "--check").exit_code == 1  # a stale guard is a pending change
    assert run("pkg", "--min-kernels", "1").exit_code == 0
    assert wrapped in layers.read_text()
    assert run("pkg", "--undo").exit_code == 0
    assert layers.read_text() == GUARDED
