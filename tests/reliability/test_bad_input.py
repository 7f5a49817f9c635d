"""Bad and odd input through every command: one line per problem, the documented exit code, no file touched that should not be.

Every case runs `lint`, `plan`, `rewrite`, `rewrite --check` and `report` on a small package (`pkg/layers.py`:
one finding, one site to wrap) next to the bad input. Cases that could crash or exhaust a process (deep
nesting, a 5 MB file, files that are not regular files) run in a real subprocess; the rest run through
click's CliRunner.
"""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograph_cg.cli import main
from autograph_cg.cli import rewrite as rewrite_cli
from autograph_cg.rewrite import api as rewrite_api
from tests.rewrite.test_cli import LAYERS, WRAPPED

COMMANDS = {
    "lint": ["lint"],
    "plan": ["plan"],
    "rewrite": ["rewrite"],
    "check": ["rewrite", "--check"],
    "report": ["report", "--html", "out.html"],
}
# Exit codes (README): a bad file next to good code is reported and the rest is analyzed; rewrite exits 2
# when it had to skip a file; nothing analyzable is a usage error everywhere.
ALONGSIDE = {"lint": 1, "plan": 0, "rewrite": 2, "check": 2, "report": 0}
NOTHING = {name: 2 for name in COMMANDS}
CLEAN_RUN = {"lint": 1, "plan": 0, "rewrite": 0, "check": 1, "report": 0}

Snapshot = dict[str, tuple[object, ...]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under `root` without following links: bytes and mode of files, targets of links."""
    out: Snapshot = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
            else:
                out[rel] = ("other", stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode))
    return out


def changed(before: Snapshot, after: Snapshot) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def expected_changes(command: str, code: int, good: bool = True) -> set[str]:
    """What a command may write: rewrite the good file (when it was given), report its page (when it succeeds)."""
    if command == "rewrite" and good:
        return {"pkg/layers.py"}
    if command == "report" and code == 0:
        return {"out.html"}
    return set()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text(LAYERS)
    return tmp_path


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--no-cache"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def run_process(*args: str, cwd: Path, memory: int | None = None) -> tuple[int, str, str]:
    """The CLI in its own process (a stack overflow or a runaway read cannot take the test run down)."""
    limit = (lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory))) if memory else None
    proc = subprocess.run(
        [sys.executable, "-m", "autograph_cg", *args, "--no-cache"],
        cwd=cwd, capture_output=True, text=True, preexec_fn=limit, check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def lines_naming(stderr: str, name: str) -> list[str]:
    return [line for line in stderr.splitlines() if name in line]


def assert_run(
    root: Path, runner: Callable[..., tuple[int, str, str]], command: str, args: list[str], code: int, bad: dict[str, str], good: bool = True
) -> str:
    """One command: its exit code, one stderr line per bad input holding its message, only the expected writes."""
    before = snapshot(root)
    got, out, err = runner(*COMMANDS[command], *args)
    after = snapshot(root)
    assert got == code, (command, got, out, err)
    assert "Traceback" not in out + err
    for name, message in bad.items():
        named = lines_naming(err, name)
        assert len(named) == 1 and message in named[0], (command, name, err)
    assert changed(before, after) == expected_changes(command, got, good), (command, changed(before, after))
    if "pkg/layers.py" in changed(before, after):
        assert WRAPPED in (root / "pkg" / "layers.py").read_text()
    return err


# ----- bad files next to good code, and paths that hold nothing to analyze --------------------------------


def _binary(folder: Path) -> str:
    (folder / "blob.py").write_bytes(b"\x00\x01\xff\xfe" * 64)
    return "blob.py"


def _latin1_undeclared(folder: Path) -> str:
    (folder / "legacy.py").write_bytes(b"name = 'caf\xe9'\n")
    return "legacy.py"


def _unknown_encoding(folder: Path) -> str:
    (folder / "klingon.py").write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    return "klingon.py"


def _syntax_error(folder: Path) -> str:
    (folder / "broken.py").write_text("def f(:\n")
    return "broken.py"


def _symlink_loop(folder: Path) -> str:
    os.symlink("loop_b.py", folder / "loop_a.py")
    os.symlink("loop_a.py", folder / "loop_b.py")
    return "loop_a.py"


def _dangling_symlink(folder: Path) -> str:
    os.symlink("gone.py", folder / "dangling.py")
    return "dangling.py"


def _fifo(folder: Path) -> str:
    os.mkfifo(folder / "pipe.py")
    return "pipe.py"


def _missing(folder: Path) -> str:
    return "nowhere"


def _dir_without_python(folder: Path) -> str:
    (folder / "docs" / "sub").mkdir(parents=True)
    (folder / "docs" / "notes.txt").write_text("not python\n")
    return "docs"


# name: (make it in a folder and say what to pass, the message, where it goes next to good code: found while
# walking `pkg/`, or given as a second argument; None: only alone, see the FIFO xfail below)
BAD = {
    "binary": (_binary, "binary file", "walked"),
    "latin1-undeclared": (_latin1_undeclared, "cannot decode", "walked"),
    "unknown-encoding": (_unknown_encoding, "unknown encoding: klingon", "walked"),
    "syntax-error": (_syntax_error, "syntax error at line 1", "walked"),
    "symlink-loop": (_symlink_loop, "symlink loop", "walked"),
    "dangling-symlink": (_dangling_symlink, "dangling symlink", "walked"),
    "fifo": (_fifo, "not a regular file", None),
    "missing-path": (_missing, "no such file or directory", "argument"),
    "dir-without-python": (_dir_without_python, "no Python files found", "argument"),
}
ALONE_MESSAGE = {"dangling-symlink": "no such file or directory"}  # as an argument, the link's target is what is missing


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", [name for name, (_, _, where) in BAD.items() if where])
def test_bad_input_next_to_good_code(root: Path, case: str, command: str) -> None:
    make, message, where = BAD[case]
    if where == "walked":
        name, args = make(root / "pkg"), ["pkg"]
    else:
        name = make(root)
        args = ["pkg", name]
    err = assert_run(root, run_cli, command, args, ALONGSIDE[command], {name: message})
    if command == "rewrite":
        assert "skipped (analysis)" in lines_naming(err, name)[0]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", BAD)
def test_nothing_to_analyze_exits_2_and_writes_nothing(root: Path, case: str, command: str) -> None:
    make, message, _ = BAD[case]
    name = make(root)
    assert_run(root, run_cli, command, [name], NOTHING[command], {name: ALONE_MESSAGE.get(case, message)}, good=False)
    assert not (root / "out.html").exists()


# ----- encodings that are valid: analyzed, rewritten and undone byte for byte -----------------------------


def _encoded(declaration: bytes, encoding: str, bom: bool) -> bytes:
    text = LAYERS.replace("import paddle.nn as nn\n", "import paddle.nn as nn\n\nNAME = 'café'  # é\n")
    return (b"\xef\xbb\xbf" if bom else b"") + declaration + text.encode(encoding)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_encoded(b"# -*- coding: latin-1 -*-\n", "latin-1", False), id="latin1-declared"),
        pytest.param(_encoded(b"", "utf-8", True), id="bom"),
        pytest.param(_encoded(b"# vim: set fileencoding=utf-8 :\n", "utf-8", True), id="bom-and-declaration"),
        pytest.param(_encoded(b"#!/usr/bin/env python\n# coding=cp1252\n", "cp1252", False), id="cp1252-second-line"),
    ],
)
def test_declared_encodings_and_bom_go_through_every_command(root: Path, data: bytes) -> None:
    layers = root / "pkg" / "layers.py"
    layers.write_bytes(data)
    header = data.split(b"import paddle")[0].count(b"\n")
    finding = f"layers.py:{20 + 2 + header}:9: AG401"  # NAME adds two lines
    for command in COMMANDS:
        before = snapshot(root)
        code, out, err = run_cli(*COMMANDS[command], "pkg")
        assert code == CLEAN_RUN[command], (command, out, err)
        assert changed(before, snapshot(root)) == expected_changes(command, code)
        if command == "lint":
            assert finding in out
        if command == "rewrite":
            new = layers.read_bytes()
            assert new.startswith(data[:3]) and (b"caf\xe9" in new) == (b"caf\xe9" in data)
            assert WRAPPED.encode() in new
            assert run_cli("rewrite", "--undo", "pkg")[0] == 0
            assert layers.read_bytes() == data


# ----- permissions ------------------------------------------------------------------------------------------


def test_read_only_file_is_reported_and_keeps_its_bytes_and_mode(root: Path) -> None:
    layers = root / "pkg" / "layers.py"
    layers.chmod(0o444)
    for command, code in (("rewrite", 2), ("check", 2), ("lint", 1), ("plan", 0)):
        before = snapshot(root)
        got, _, err = run_cli(*COMMANDS[command], "pkg")
        assert got == code, (command, err)
        assert changed(before, snapshot(root)) == set()
        if command in ("rewrite", "check"):
            assert lines_naming(err, "layers.py") == ["pkg/layers.py: skipped (read-only): the file is read-only"]


def test_undo_of_a_read_only_file_is_refused(root: Path) -> None:
    assert run_cli("rewrite", "pkg")[0] == 0
    layers = root / "pkg" / "layers.py"
    layers.chmod(0o400)
    before = snapshot(root)
    code, _, err = run_cli("rewrite", "--undo", "pkg")
    assert code == 2 and "pkg/layers.py: skipped (read-only)" in err
    assert changed(before, snapshot(root)) == set()


def test_read_only_directory(root: Path) -> None:
    """The promise is on the file's mode bits; a read-only folder stops the temporary file only for non-root users."""
    (root / "pkg").chmod(0o555)
    try:
        code, _, err = run_cli("rewrite", "pkg")
        names = sorted(p.name for p in (root / "pkg").iterdir())
    finally:
        (root / "pkg").chmod(0o755)
    assert names == ["__init__.py", "layers.py"]  # never a stray temporary file
    if os.geteuid() == 0:
        assert code == 0 and WRAPPED in (root / "pkg" / "layers.py").read_text()
    else:
        assert code == 2 and "pkg/layers.py: skipped (unwritable)" in err
        assert (root / "pkg" / "layers.py").read_text() == LAYERS


# ----- a file that changes between the analysis and the write -----------------------------------------------


def _edit_after_analysis(monkeypatch: pytest.MonkeyPatch, edit: Callable[[str], str]) -> None:
    real = rewrite_cli.analyze

    def analyze_then_user_saves(paths, options):
        analysis = real(paths, options)
        layers = Path("pkg/layers.py")
        layers.write_text(edit(layers.read_text()))
        return analysis

    monkeypatch.setattr(rewrite_cli, "analyze", analyze_then_user_saves)


def test_edit_that_moves_the_sites_is_detected_and_kept(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _edit_after_analysis(monkeypatch, lambda text: "# saved meanwhile\n" + text)
    code, _, err = run_cli("rewrite", "pkg")
    assert code == 2
    assert lines_naming(err, "layers.py")[0].startswith("pkg/layers.py: skipped (stale-plan)")
    assert (root / "pkg" / "layers.py").read_text() == "# saved meanwhile\n" + LAYERS


def test_edit_away_from_the_sites_is_kept_and_the_newest_bytes_are_rewritten(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _edit_after_analysis(monkeypatch, lambda text: text + "# saved meanwhile\n")
    assert run_cli("rewrite", "pkg")[0] == 0
    text = (root / "pkg" / "layers.py").read_text()
    assert WRAPPED in text and text.endswith("# saved meanwhile\n")


def test_edit_between_read_and_write_is_never_overwritten(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = rewrite_api.rewrite_source

    def edit_then_user_saves(data, sites, settings):
        result = real(data, sites, settings)
        Path("pkg/layers.py").write_bytes(data + b"# saved meanwhile\n")
        return result

    monkeypatch.setattr(rewrite_api, "rewrite_source", edit_then_user_saves)
    code, _, err = run_cli("rewrite", "pkg")
    assert code == 2 and "pkg/layers.py: skipped (changed)" in err
    assert (root / "pkg" / "layers.py").read_text() == LAYERS + "# saved meanwhile\n"
    assert sorted(p.name for p in (root / "pkg").iterdir()) == ["__init__.py", "layers.py"]


# ----- in a real process: deep nesting, a 5 MB file ---------------------------------------------------------

# The site's own statement holds an expression too deep for libcst (rewrite hands libcst that statement alone).
SITE_AND_DEEP = (
    LAYERS.replace("class MLP", "class DeepMLP").replace("MLP()", "DeepMLP() if SHALLOW else (1" + " + 1" * 1500 + ")") + "\n\nSHALLOW = True\n"
)


def test_deep_nesting_is_one_line_per_file(root: Path) -> None:
    pkg = root / "pkg"
    (pkg / "parens.py").write_text("x = " + "(" * 1000 + "1" + ")" * 1000 + "\n")
    (pkg / "brackets.py").write_text("x = " + "[" * 1000 + "1" + "]" * 1000 + "\n")
    (pkg / "chain.py").write_text("x = 1" + " + 1" * 100_000 + "\n")
    (pkg / "calls.py").write_text("x = f" + "()" * 20_000 + "\n")
    (pkg / "site_deep.py").write_text(SITE_AND_DEEP)  # Python parses it; libcst runs out of recursion
    bad = {
        "parens.py": "too many nested parentheses",
        "brackets.py": "too many nested parentheses",
        "chain.py": "nesting too deep to analyze",
        "calls.py": "nesting too deep to analyze",
    }
    for command in COMMANDS:
        err = assert_run(root, lambda *a: run_process(*a, cwd=root), command, ["pkg"], ALONGSIDE[command], bad)
        if command in ("rewrite", "check"):
            assert lines_naming(err, "site_deep.py")[0].startswith("pkg/site_deep.py: skipped (not-reproducible)")
        (pkg / "layers.py").write_text(LAYERS)


def _five_megabytes() -> tuple[str, int]:
    """Many small eligible layers that nothing builds (no site to wrap), and one `.item()` in the last."""
    block = (
        "\n\nclass Block{i}(nn.Layer):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        y = self.fc(x)\n"
        "        if x.shape[0] > 1:\n            y = y * 2\n        return y + x.mean(axis=-1, keepdim=True)\n"
    )
    parts = ["import paddle.nn as nn\n"]
    size, i = len(parts[0]), 0
    while size < 5 * 1024 * 1024:
        parts.append(block.format(i=i))
        size += len(parts[-1])
        i += 1
    text = "".join(parts) + "        return y.sum().item()\n"
    return text, text.count("\n")


def test_five_megabyte_file(root: Path) -> None:
    text, last = _five_megabytes()
    (root / "pkg" / "big.py").write_text(text)
    before = snapshot(root)
    code, out, err = run_process("lint", "pkg", cwd=root)
    assert code == 1 and "Traceback" not in err
    assert f"pkg/big.py:{last}:16: AG101" in out and "pkg/layers.py:20:9: AG401" in out
    code, out, err = run_process("rewrite", "--check", "pkg", cwd=root)
    assert code == 1 and "would rewrite pkg/layers.py (1 site)" in err and "big.py" not in err
    assert changed(before, snapshot(root)) == set()


# ----- known bugs: strict xfails, so a fix turns them into failures that ask for the mark to go ------------


def test_fifo_inside_a_folder_is_not_opened(root: Path) -> None:
    fifo = root / "pkg" / "pipe.py"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograph_cg", "lint", "pkg", "--no-cache"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    opened = False
    while proc.poll() is None:
        # Opening the write end without blocking succeeds only while a reader (the tool) has the FIFO open;
        # closing it again gives that reader end-of-file, so the run always finishes.
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            opened = True
        except OSError:
            pass
        try:
            proc.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass
    out, err = proc.communicate()
    assert not opened, "the tool opened the FIFO"
    assert proc.returncode == 1 and len(lines_naming(err, "pipe.py")) == 1


def test_symlink_to_a_device_inside_a_folder_is_not_read(root: Path) -> None:
    os.symlink("/dev/zero", root / "pkg" / "zero.py")
    code, _, err = run_process("lint", "pkg", cwd=root, memory=1 << 30)  # the bug ends in MemoryError, not the machine
    assert code == 1 and "Traceback" not in err
    assert len(lines_naming(err, "zero.py")) == 1


def test_form_feed_before_a_non_ascii_line_keeps_columns_and_sites(root: Path) -> None:
    text = LAYERS.replace("import paddle.nn as nn\n", "import paddle.nn as nn\n# page\x0cbreak\n").replace(
        "        self.mlp = MLP()", '        s = "éé"; self.mlp = MLP()'
    )
    (root / "pkg" / "layers.py").write_text(text)
    code, _, err = run_cli("rewrite", "pkg")
    assert code == 0, err
    assert 's = "éé"; ' + WRAPPED in (root / "pkg" / "layers.py").read_text()


@pytest.mark.parametrize("command", ["lint", "rewrite"])
def test_the_parsers_warnings_about_analyzed_code_stay_silent(tmp_path: Path, command: str) -> None:
    """`"\\d"` and `x is 1` make the parser warn; those warnings are the code's, not the tool's output."""
    (tmp_path / "m.py").write_text(LAYERS + '\nPAT = "\\d+"\nSAME = 1 is 1\n')
    script = (
        "import sys, warnings; warnings.simplefilter('always'); from autograph_cg.cli import main; "
        f"sys.argv = ['autograph-cg', {command!r}, {str(tmp_path)!r}, '--no-cache', '--jobs', '1']; main()"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert "Warning" not in result.stderr, result.stderr
