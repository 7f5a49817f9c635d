"""Syntactically valid generated Python through `lint` and `plan`, the library and the CLI: the analyzer never fails.

hypothesmith draws programs from Python's grammar (`from_grammar`: any valid token sequence, odd spacing,
comments and continuations included) and from libcst's node types (`from_node`: statements as people write
them). Each program becomes one package of three files, so that the rules see it and not only the parser:
the program as it is, followed by a layer that builds every generated class in `__init__` and calls it and
every generated function from `forward`; the program as the body of a layer's `forward`; and a module that
imports the first. Every rule is selected. A failure prints the generated program (hypothesis shrinks it).
"""

from __future__ import annotations

import ast
import dataclasses
import tempfile
import textwrap
import warnings
from pathlib import Path

import hypothesmith
import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

from autograph_cg.analysis.failures import INTERNAL
from autograph_cg.api import Analysis, analyze
from autograph_cg.cli import main
from autograph_cg.rules.dispatch import DISPATCH
from tests.reliability.bench import safety
from tests.reliability.generate import EVERY_RULE, EXAMPLES, example_settings

# Generating is the slow part (from_node: about 0.2 s an example); 30 keeps both tests near 20 s on two cores.
PROPERTY = example_settings(30)
STRATEGIES = {"grammar": hypothesmith.from_grammar(), "node": hypothesmith.from_node()}
HEADS = {
    "torch": ("import torch\nimport torch.nn as nn\n", "nn.Module", "torch.tanh"),
    "paddle": ("import paddle\nimport paddle.nn as nn\n", "nn.Layer", "paddle.tanh"),
}
TENSOR_NAMES = 8  # free names of a program bound to tensors at the top of the forward it becomes


def _tree(text: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of generated code are the parser's business
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError):
            return None


def package_files(source: str, framework: str) -> dict[str, str]:
    """The generated program as `generated.py` with a probing layer after it, as a forward body, and imported.

    In the forward body, the names the program reads are tensors first, so that the rules have something to judge.
    """
    head, base, op = HEADS[framework]
    tree = _tree(source)
    assert tree is not None  # hypothesmith's programs parse
    body = tree.body
    read = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - {"__debug__"})
    tensors = "".join(f"        {name} = {op}(x)\n" for name in read[:TENSOR_NAMES])
    classes = [s.name for s in body if isinstance(s, ast.ClassDef)]
    functions = [s.name for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    init = "".join(f"        self.g{i} = {name}()\n" for i, name in enumerate(classes))
    calls = "".join(f"        x = self.g{i}(x)\n" for i in range(len(classes)))
    calls += "".join(f"        x = {name}(x)\n" for name in functions)
    probe = f"\n{head}\n\nclass Probe({base}):\n    def __init__(self):\n        super().__init__()\n{init}\n    def forward(self, x):\n{calls}        return x\n"
    files = {"__init__.py": "", "generated.py": source + "\n" + probe, "uses.py": f"from .generated import *\nfrom . import generated\n{head}\n\nclass Uses({base}):\n    def forward(self, x):\n        return generated.Probe()(x) + Probe()(x)\n"}
    inside = f"{head}\n\nclass Inside({base}):\n    def forward(self, x):\n{tensors}{textwrap.indent(source, ' ' * 8)}\n        return x\n"
    if _tree(inside) is not None:  # indenting can break a program (a form feed at a line start, a future import)
        files["inside.py"] = inside
    return files


def _write(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8", newline="")


def library_failures(analysis: Analysis) -> list[str]:
    """Source errors on valid code (internal errors are reported among them), and verdicts that one decided."""
    out = [str(e) for e in analysis.errors]
    if analysis.summary.internal_errors and not out:
        out.append(f"{analysis.summary.internal_errors} internal errors")
    for verdict in analysis.plan.verdicts.values():
        out += [f"{verdict.qualname}: {r.message}" for r in verdict.reasons if r.code == INTERNAL]
    return out


def cli_failures(command: str, root: Path) -> list[str]:
    result = CliRunner().invoke(main, [command, str(root), "--format", "json", "--select", "ALL", "--no-cache", "-q"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return [f"{command}: {type(result.exception).__name__}: {result.exception}"]
    return [f"{command}: {line}" for line in safety.cli_failures(result.exit_code, result.stdout, result.stderr)]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@PROPERTY
@given(data=st.data())
def test_generated_programs_never_make_the_analyzer_fail(strategy: str, data: st.DataObject) -> None:
    source = data.draw(STRATEGIES[strategy], label="program")
    assume(not any("\ud800" <= c <= "\udfff" for c in source))  # a lone surrogate has no UTF-8 bytes to write
    framework = data.draw(st.sampled_from(sorted(HEADS)), label="framework")
    files = package_files(source, framework)
    with tempfile.TemporaryDirectory(prefix="autograph-cg-gen-") as tmp:
        root = Path(tmp) / "pkg"
        _write(root, files)
        analysis = analyze([str(root)], EVERY_RULE)
        failures = library_failures(analysis)
        failures += cli_failures("lint", root) + cli_failures("plan", root)
        assert not failures, "\n".join(failures)
        assert analysis.summary.analyzed == len(files), analysis.summary
        assert any(v.qualname.endswith("Probe") for v in analysis.plan.verdicts.values())
    EXAMPLES[f"generated ({strategy})"] += 1
    if "inside.py" in files:
        EXAMPLES[f"generated ({strategy}), also as a forward body"] += 1
    if any(f.path.endswith("inside.py") for f in analysis.findings):  # the rules walked the program, not only the parser
        EXAMPLES[f"generated ({strategy}), with findings in the forward body"] += 1


def _boom(*args: object) -> bool:
    raise KeyError("injected")


def test_the_checks_see_an_internal_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that raises (a stand-in for any analyzer bug) fails the library check and both commands' checks."""
    for table in (DISPATCH.ops, DISPATCH.op_methods):
        monkeypatch.setitem(table, "reshape", tuple(dataclasses.replace(r, guard=_boom) for r in table["reshape"]))
    root = tmp_path / "pkg"
    _write(root, package_files("y = a.reshape(a.shape[0], -1)\n", "torch"))
    assert any("Inside.forward" in line for line in library_failures(analyze([str(root)], EVERY_RULE)))
    for command in ("lint", "plan"):
        assert any("internal error in Inside.forward" in line for line in cli_failures(command, root)), command
