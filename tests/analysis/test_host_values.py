"""The table of arguments read on the host (`autograph_cg/rules/host_values.json`) is what the installed frameworks'
signatures give: derived again here and compared, per framework (skipped only where that framework is not installed)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from autograph_cg.rules import host_values


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_the_shipped_table_is_what_the_installed_framework_signatures_give(framework: str) -> None:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    shipped = host_values.table()[framework]
    derived = json.loads(host_values.dump({framework: host_values.derive(framework)}))[framework]
    assert derived["version"] == shipped["version"], "another release: run `python -m autograph_cg.rules.host_values`"
    for section in ("functions", "methods"):
        changed = sorted(k for k in derived[section].keys() | shipped[section].keys() if derived[section].get(k) != shipped[section].get(k))
        assert not changed, f"{section} differ from the signatures (run `python -m autograph_cg.rules.host_values`): {changed[:20]}"


def test_sizes_are_read_on_the_host_and_operands_are_not() -> None:
    """What the derivation decides, on ops whose signatures say it plainly (both frameworks, both call forms)."""
    function = lambda qual: host_values.lookup(qual, qual.rsplit(".", 1)[-1], False, None)  # noqa: E731
    method = lambda name, framework: host_values.lookup(None, name, True, framework)  # noqa: E731
    assert function("torch.topk") == [((1, 2), ("dim", "k"), None)]  # `SymInt k, int dim`
    assert function("paddle.topk") == [((1, 2), ("axis", "k"), None)]  # `k: int | Tensor`
    assert method("view", "torch") == [((0,), ("size",), 0)]  # `view(*size)`: every positional argument
    assert method("reshape", "paddle") == [((0,), ("shape",), None)]  # `shape: ShapeLike`
    assert function("torch.masked_fill") == [] and method("masked_fill", "torch") == []  # a Tensor overload takes it
    assert function("paddle.pow") == []  # `y: float | Tensor`: an operand
    assert function("torch.matmul") == [] and function("paddle.matmul") == []
    # an internal path of a public function reads the public one's entry; a method of either framework when the
    # module imports neither
    assert host_values.lookup("paddle.tensor.manipulation.reshape", "reshape", False, None) == function("paddle.reshape")
    assert len(method("topk", None)) == 2


def test_every_short_name_of_the_table_is_dispatched_to_the_rule() -> None:
    from autograph_cg.rules.dispatch import DISPATCH

    names = host_values.names()
    assert {"topk", "reshape", "view", "one_hot", "narrow"} <= set(names)
    assert all(any(r.code == "AG109" for r in DISPATCH.ops.get(n, ())) for n in names)
