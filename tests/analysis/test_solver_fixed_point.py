"""The resolver's fixed point ends fast on code that feeds values back into themselves: recursive helpers, attribute
chains of outside objects, and values that grow past the cap inside a cycle."""

from __future__ import annotations

import textwrap

from autograph_cg.analysis.eligibility import Package
from autograph_cg.analysis.index import index_source
from autograph_cg.analysis.resolver import fixpoint
from autograph_cg.analysis.resolver import attributes
from autograph_cg.analysis.resolver.solver import Solver
from autograph_cg.analysis.resolver.values import MAX_ATOMS, TOO_MANY


def _package(text: str) -> Package:
    return Package([index_source("m.py", "m", False, textwrap.dedent(text), deep=True)], keep=lambda code: True)


def test_a_recursive_helper_is_solved_in_the_run_it_is_made_in() -> None:
    callers = "".join(
        f"""
class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = convert(nn.Linear({i + 1}, {i + 1}))

    def forward(self, x):
        return self.body(x)
"""
        for i in range(12)
    )
    helper = """
        import torch.nn as nn


        def convert(x):
            if isinstance(x, (list, tuple)):
                return [convert(i) for i in x]
            if isinstance(x, dict):
                return {k: convert(v) for k, v in x.items()}
            return x
        """
    package = _package(textwrap.dedent(helper) + callers)
    verdicts = package.compute_all()
    assert all(verdicts[f"m.Net{i}"].status.value == "eligible" for i in range(12))
    held = package.solver.attribute("m.Net3", "body")
    assert ("I", "torch.nn.Linear") in held
    solved = [package.solver._by_number[n] for n in package.solver._values]
    runs = [k for k in solved if k[0] == "ret" and k[1][1] == "convert"]
    assert len(runs) == 12  # one run per call outside it; the recursive calls add none


def test_an_attribute_chain_of_outside_code_that_feeds_itself_ends_unknown() -> None:
    package = _package(
        """
        import numpy as np


        def walk(n):
            value = np.ndarray
            while n:
                value = value.device
            return value
        """
    )
    found = package.solver.value(("n", "value"), "m", "walk")
    names = [atom[1] for atom in found if atom[0] == "G"]
    assert "numpy.ndarray.device" in names and max(name.count(".") for name in names) < attributes._MAX_NAME_PARTS
    assert ("?", "an attribute chain of outside code too long to follow") in found
    assert max(package.solver._rounds.values()) < fixpoint._MAX_ROUNDS  # settled, not given up on


class _Swing(Solver):
    """Two nodes in a cycle: `a` holds `b` and more; `b` holds what `a` holds, or one atom once `a` is cut."""

    def _compute(self, key):  # type: ignore[override]
        if key[0] == "a":
            return self._node(("b",)) | {("H", n) for n in range(MAX_ATOMS - 5)}
        grown = self._node(("a",))
        return frozenset({("T",)}) if grown == TOO_MANY else grown | {("G", f"g{len(grown)}")}


def test_a_value_cut_to_too_many_in_a_cycle_settles_instead_of_swinging() -> None:
    swing = _Swing(_package("x = 1\n"))
    value = swing._ask(("a",))
    assert value == TOO_MANY
    assert max(swing._rounds.values()) < fixpoint._MAX_ROUNDS


def test_a_key_not_known_yet_reads_nothing_so_that_the_known_key_reads_only_its_own() -> None:
    """Values only grow: a lookup made while its key is still being computed (empty) must not read every entry, or
    the entries no key names stay in the value for good."""
    package = _package(
        """
        import torch.nn as nn


        class Clean:
            pass


        class Other:
            pass


        class Parts:
            clean = Clean
            other = Other


        TABLE = {"clean": Clean, "other": Other}


        class Net(nn.Module):
            def __init__(self, kind="clean"):
                super().__init__()
                self.kind = kind
                self.act = TABLE[self.kind]
                self.same = TABLE.get(self.kind)
                self.named = getattr(Parts, self.kind)
                self.kind = getattr(self.act, "kind", "clean")
                self.kind = getattr(self.same, "kind", "clean")
                self.kind = getattr(self.named, "kind", "clean")
        """
    )
    solver = package.solver
    solver.attribute("m.Net", "kind")  # asked first: the lookups are solved while `kind` is still empty
    assert solver.attribute("m.Net", "kind") == {("C", "clean")}
    for attr in ("act", "same", "named"):
        assert solver.attribute("m.Net", attr) == {("G", "m.Clean")}, attr
