"""The hooks in `.pre-commit-hooks.yaml`, run by the real pre-commit in a throw-away git repository.

pre-commit builds a virtualenv and pip-installs this repository into it (click and libcst come from PyPI),
so this test needs the network and takes a while. The hook repository is a committed snapshot of this
working tree, so uncommitted work is tested too and every pre-commit call reuses one environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .test_cli import LAYERS

REPO = Path(__file__).resolve().parents[2]

# An eligible MLP inside a Net whose call counter makes it ineligible: rewrite wraps `self.mlp`.
UNWRAPPED = LAYERS
MLP_ALONE = LAYERS.split("\n\n\nclass Net")[0] + "\n"
# The same MLP syncing the host in its forward: lint reports AG101 on line 10.
HAZARD = MLP_ALONE.replace("return self.fc(x)", "return self.fc(x) * x.sum().item()")
# The Net alone, building the MLP of another file.
PARENT = "import paddle.nn as nn\n\nfrom scale import MLP\n\n\nclass Net" + LAYERS.split("\n\n\nclass Net")[1]
#: What installing the hooks needs of this working tree: pip builds the package from these.
HOOK_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "autograph_cg")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _init(path: Path) -> None:
    path.mkdir()
    for args in (("init", "-q"), ("config", "user.email", "t@example.com"), ("config", "user.name", "t"), ("config", "commit.gpgsign", "false")):
        assert git(path, *args).returncode == 0


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The files of this working tree that the hooks install from (tracked and untracked, minus ignored files),
    committed in a fresh repository. Nothing else is copied: a virtualenv inside the checkout stays out."""
    dest = tmp_path_factory.mktemp("hooks") / "autograph-cg"
    _init(dest)
    listed = git(REPO, "ls-files", "-co", "--exclude-standard", "-z", "--", *HOOK_FILES).stdout.split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    assert git(dest, "add", "-A").returncode == 0
    assert git(dest, "commit", "-q", "-m", "snapshot").returncode == 0
    return dest, git(dest, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.getbasetemp() / "pre-commit-home"
    return {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never", "NO_COLOR": "1"}


def commit(repo: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, env=env, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_hooks_block_and_pass_commits(tmp_path: Path, hook_repo: tuple[Path, str], env: dict[str, str]) -> None:
    if shutil.which("pre-commit") is None:
        pytest.fail("pre-commit is not installed (it is a dev dependency)")
    hooks, rev = hook_repo
    user = tmp_path / "user"
    _init(user)
    (user / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
        # net.py's top layer keeps a call counter (a known, accepted hazard), so lint leaves that file out.
        "      - id: autograph-cg-lint\n        exclude: ^net\\.py$\n      - id: autograph-cg-rewrite-check\n"
    )
    (user / ".gitignore").write_text(".autograph-cg-cache/\n")
    install = subprocess.run(["pre-commit", "install"], cwd=user, env=env, capture_output=True, text=True)
    assert install.returncode == 0, install.stderr

    # A hazardous layer: the lint hook blocks the commit and prints the finding.
    (user / "scale.py").write_text(HAZARD)
    git(user, "add", "-A")
    blocked = commit(user, env, "add a layer that syncs")
    assert blocked.returncode != 0
    assert "AG101" in blocked.stdout + blocked.stderr and "scale.py:10" in blocked.stdout + blocked.stderr
    assert git(user, "rev-parse", "HEAD").returncode != 0  # nothing was committed

    # Clean code: passes.
    (user / "scale.py").write_text(MLP_ALONE)  # eligible, clean
    git(user, "add", "-A")
    done = commit(user, env, "clean layer")
    assert done.returncode == 0, done.stdout + done.stderr

    # A commit of the parent file alone, building the MLP of scale.py unwrapped: the hook is given net.py only,
    # and judges it with the package (alone, the MLP would be unknown and nothing would be planned).
    (user / "net.py").write_text(PARENT)
    git(user, "add", "net.py")
    blocked = commit(user, env, "parent of another file's layer")
    assert blocked.returncode != 0 and "would rewrite net.py" in blocked.stdout + blocked.stderr
    assert git(user, "rev-parse", "HEAD~1").returncode != 0  # still the one commit

    # An eligible sublayer left unwrapped: rewrite --check blocks the commit and names the file.
    (user / "net.py").write_text(UNWRAPPED)
    git(user, "add", "net.py")
    blocked = commit(user, env, "unwrapped sublayer")
    assert blocked.returncode != 0 and "would rewrite net.py" in blocked.stdout + blocked.stderr

    # The opt-in hook, tried straight from the hook repository, wraps it; re-staged, the commit passes.
    tried = subprocess.run(
        ["pre-commit", "try-repo", str(hooks), "autograph-cg-rewrite", "--files", "net.py"],
        cwd=user, env=env, capture_output=True, text=True,
    )
    assert tried.returncode != 0  # pre-commit fails a hook that modified files, so the user re-stages
    assert "self.mlp = CUDAGraphedLayer(MLP())" in (user / "net.py").read_text()
    git(user, "add", "net.py")
    done = commit(user, env, "wrapped sublayer")
    assert done.returncode == 0, done.stdout + done.stderr
