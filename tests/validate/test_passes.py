"""The parts of a validation run that decide: which layers the plan wraps, how runs compare, what a pass amounts to."""

from __future__ import annotations

from dataclasses import replace

import ast
import importlib
import math

import numpy as np
import pytest

from autograph_cg.analysis.plan import Plan, WrapSite
from autograph_cg.analysis.verdicts import Status, Verdict
from autograph_cg.findings import Span
from autograph_cg.validate.births import inside, recording
from autograph_cg.validate.outcome import Outcome, judge
from autograph_cg.validate.frameworks import framework_of
from autograph_cg.validate.passes import (
    Diff,
    RunStats,
    Trace,
    compare,
    dropin_differences,
    plan_picker,
    presence_differences,
    qualname,
    wrap_where,
)

torch = pytest.importorskip("torch")
nn = torch.nn


class A(nn.Linear):
    pass


class B(nn.Linear):
    pass


class Owner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([A(2, 2), B(2, 2), A(2, 2)])
        self.head = A(2, 2)
        self.proj = nn.Sequential(nn.Linear(2, 2))


class SubOwner(Owner):
    """Inherits Owner.__init__: its sites apply here too."""


def _site(owner: type | None, target: str, cls: str) -> WrapSite:
    return WrapSite("m.py", Span(1, 1, 1, 2), cls, qualname(owner) if owner else "", target)


def _plan(*sites: WrapSite) -> Plan:
    classes = (A, B, Owner, SubOwner)
    verdicts = {qualname(c): Verdict(qualname(c), "m.py", 1, Status.ELIGIBLE) for c in classes}
    return Plan(tuple(sites), verdicts, ())


def _wrapped(model: nn.Module, plan: Plan, nested: bool = False) -> list[str]:
    names: list[str] = []
    wrap_where(_torch_fw(), model, plan_picker(plan), lambda layer, name, _guard: names.append(name) or layer, nested)
    return names


def _torch_fw():
    from autograph_cg.validate.frameworks import TorchFramework

    return TorchFramework()


def test_container_sites_match_their_class_only_and_subclass_owners_inherit_them() -> None:
    plan = _plan(_site(Owner, "self.blocks[*]", qualname(A)), _site(Owner, "self.proj", "torch.nn.Sequential"))
    for model in (Owner(), SubOwner()):
        assert _wrapped(model, plan) == ["blocks.0", "blocks.2", "proj"]


def test_attribute_sites_check_the_class_built_there() -> None:
    assert _wrapped(Owner(), _plan(_site(Owner, "self.head", qualname(B)))) == []
    assert _wrapped(Owner(), _plan(_site(Owner, "self.head", qualname(A)))) == ["head"]


def test_builder_sites_match_package_classes_anywhere_but_never_framework_classes() -> None:
    assert _wrapped(Owner(), _plan(_site(None, "return", qualname(A)))) == ["blocks.0", "blocks.2", "head"]
    assert _wrapped(Owner(), _plan(_site(None, "return", "torch.nn.Sequential"))) == []
    # the root too, and then nothing below it: a graph never holds another
    assert _wrapped(Owner(), _plan(_site(None, "model", qualname(Owner)), _site(None, "x", qualname(A)))) == ["model"]


def test_the_plans_pass_wraps_nested_sites_innermost_first_each_with_its_guard() -> None:
    """As the rewritten source does: a conditional parent's wrapper may run eagerly (its guard fails), and the
    sites under it then keep graphs of their own."""
    guard = (("past_key_values", "is None"),)
    plan = _plan(
        replace(_site(None, "model", qualname(Owner)), guard=guard), _site(Owner, "self.blocks[*]", qualname(A))
    )
    given: list[tuple[str, tuple]] = []
    wrap_where(_torch_fw(), Owner(), plan_picker(plan), lambda layer, name, g: given.append((name, g)) or layer, True)
    assert given == [("blocks.0", ()), ("blocks.2", ()), ("model", guard)]
    assert _wrapped(Owner(), plan) == ["model"]  # a class's pass: the top-most only


def test_a_layer_held_twice_gets_one_wrapper() -> None:
    model = Owner()
    model.blocks[1] = model.head
    plan = _plan(_site(Owner, "self.head", qualname(A)), _site(Owner, "self.blocks[*]", qualname(A)))
    call, wrappers = wrap_where(_torch_fw(), model, plan_picker(plan), lambda layer, _name, _guard: nn.Sequential(layer))
    assert call is model and len(wrappers) == 3
    assert model.blocks[1] is model.head and isinstance(model.head, nn.Sequential)


def _trace(*outputs: list, grads: list | None = None) -> Trace:
    return Trace([list(map(np.asarray, o)) for o in outputs], grads or [])


def test_compare_is_relative_to_the_reference_and_bitwise_only_when_equal() -> None:
    want = _trace([[1.0, 2.5]], grads=[[np.ones(2), None]])
    assert compare(_trace([[1.0, 2.5]], grads=[[np.ones(2), None]]), want) == Diff(0.0, 0.0, True)
    diff = compare(_trace([[1.0, 2.0]], grads=[[np.ones(2), None]]), want)
    assert diff == Diff(pytest.approx(0.2), 0.0, False)
    assert compare(_trace([[1.0, 2.5]], grads=[[np.ones(2), np.ones(1)]]), want).grads == math.inf
    assert compare(_trace([[1.0, 2.5]], [[1.0, 2.5]]), want).outputs == math.inf  # a pass of another length
    assert compare(_trace([[np.nan, 1.0]]), _trace([[np.nan, 1.0]])) == Diff(0.0, 0.0, True)
    assert compare(_trace([[np.nan, 1.0]]), _trace([[0.0, 1.0]])).outputs == math.inf


@pytest.mark.parametrize(
    ("stats", "diff", "error", "outcome"),
    [
        (RunStats(1, {"captures": 1}, ("capture failed: X",)), Diff(1.0, 1.0, False), "E: boom", Outcome.ERROR),
        (RunStats(1, {"captures": 1}, ("capture failed: X",)), Diff(1.0, 1.0, False), None, Outcome.FAILED),
        (RunStats(1, {"captures": 1, "forward_replays": 3}), Diff(0.5, 0.0, False), None, Outcome.MISMATCH),
        (RunStats(1, {"captures": 1, "forward_replays": 3}), Diff(1e-6, 0.0, False), None, Outcome.CAPTURED),
        (RunStats(1), Diff(0.0, 0.0, True), None, Outcome.NOT_CALLED),
        (RunStats(1, {"eager_calls": 5}, (), {"unsupported argument": 5}), Diff(0.0, 0.0, True), None, Outcome.EAGER),
        (RunStats(1, {"warmup_calls": 2}), Diff(0.0, 0.0, True), None, Outcome.WARMUP),
        (RunStats(0), Diff(0.0, 0.0, True), None, Outcome.NOTHING),
    ],
)
def test_the_worst_thing_that_happened_decides(stats: RunStats, diff: Diff, error: str | None, outcome: Outcome) -> None:
    assert judge(stats, diff, error, 1e-3).outcome is outcome


def test_rounding_noise_of_a_zero_gradient_is_measured_against_its_step() -> None:
    """A bias whose gradient is zero in exact arithmetic holds noise like 1e-10 in both runs."""
    want = _trace([[0.0]], grads=[[np.array([1.2e-10]), np.array([0.5, -0.25])]])
    got = _trace([[0.0]], grads=[[np.array([-0.9e-10]), np.array([0.5, -0.25])]])
    assert compare(got, want).grads == pytest.approx(2.1e-10 / (1e-4 * 0.5))
    # a real error in a small tensor still counts at its own scale
    got = _trace([[0.0]], grads=[[np.array([2.4e-4]), np.array([0.5, -0.25])]])
    want = _trace([[0.0]], grads=[[np.array([1.2e-4]), np.array([0.5, -0.25])]])
    assert compare(got, want).grads == pytest.approx(1.0)


def test_a_following_run_starts_every_step_from_the_followed_parameters() -> None:
    """Another learning rate would move the parameters elsewhere; following keeps every step's gradients equal."""
    from autograph_cg.validate.passes import run
    from autograph_cg.validate.target import Subject

    fw = _torch_fw()
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)), torch.randn(16, 4)
    state = fw.state(model)
    reference = run(fw, Subject(model, (x,), None), model, 4, 0, 0.1)
    fw.load(model, state)
    drifting = run(fw, Subject(model, (x,), None), model, 4, 0, 0.3)
    fw.load(model, state)
    following = run(fw, Subject(model, (x,), None), model, 4, 0, 0.3, follow=reference)
    assert compare(drifting, reference).grads > 1e-3
    assert compare(following, reference) == Diff(0.0, 0.0, True)
    assert len(reference.params) == 4 and following.params == []


BUILT = """
import copy

import torch.nn as nn


def stage(n):
    return nn.Sequential(*[nn.Linear(2, 2) for _ in range(n)])


def factory():
    return Block()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([stage(2), stage(1)])
        self.extra = nn.Sequential(nn.Linear(2, 2))
        self.made = factory()
        self.copied = copy.deepcopy(self.made)
        self.plain = Block()
"""


def _call_span(source: str, text: str) -> Span:
    """The span the analyzer gives the call written as `text` (1-based columns)."""
    lines = source.splitlines()

    def column(line: int, byte_col: int) -> int:
        return len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8")) + 1

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.get_source_segment(source, node) == text:
            return Span(node.lineno, column(node.lineno, node.col_offset), node.end_lineno, column(node.end_lineno, node.end_col_offset))
    raise AssertionError(text)


def test_builder_sites_match_the_layers_their_calls_built(tmp_path, monkeypatch) -> None:
    path = tmp_path / "tiny_built.py"
    path.write_text(BUILT)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("tiny_built")
    block = qualname(module.Block)
    sequential = WrapSite(str(path), _call_span(BUILT, "nn.Sequential(*[nn.Linear(2, 2) for _ in range(n)])"), "torch.nn.Sequential", "", "return")
    made = WrapSite(str(path), _call_span(BUILT, "Block()"), block, "", "return")
    plan = Plan((sequential, made), {block: Verdict(block, str(path), 1, Status.ELIGIBLE)}, ())
    with recording() as births:
        model = module.Net()
    names: list[str] = []
    wrap_where(_torch_fw(), model, plan_picker(plan, births), lambda layer, name, _guard: names.append(name) or layer)
    # the Sequentials `stage` builds, not `extra`; the Block `factory` builds and its deep copy (no record of
    # where it was made: any Block of a builder site), not the Block built in `__init__`
    assert names == ["stages.0", "stages.1", "made", "copied"]
    # without the records: a builder site matches every Block and no framework class
    names.clear()
    wrap_where(_torch_fw(), module.Net(), plan_picker(plan), lambda layer, name, _guard: names.append(name) or layer)
    assert names == ["made", "copied", "plain"]


def test_recording_restores_the_base_init_even_when_the_build_fails() -> None:
    original = vars(nn.Module)["__init__"]
    with pytest.raises(RuntimeError), recording() as births:
        layer = nn.Linear(2, 2)
        assert vars(nn.Module)["__init__"] is not original
        raise RuntimeError("the factory failed")
    assert vars(nn.Module)["__init__"] is original
    assert births.of(layer) and births.of(nn.Linear(2, 2)) is None


def test_positions_are_compared_in_characters_not_bytes(tmp_path) -> None:
    line = 'x = ["üüüüüüüü", A(), B()]\n'
    path = tmp_path / "wide.py"
    path.write_text(line, encoding="utf-8")
    b = _call_span(line, "B()")
    a_bytes = len(line[: line.index("A()")].encode("utf-8"))  # where a frame running `A()` is, in bytes
    assert not inside(b, (str(path), 1, a_bytes))  # read as characters, the byte offset would fall inside B()
    assert inside(b, (str(path), 1, len(line[: line.index("B()")].encode("utf-8"))))
    assert inside(b, (str(path), 1, None))  # Python 3.10 gives the line alone


def test_a_wrapped_run_may_differ_by_a_few_times_eager_own_noise_and_no_more() -> None:
    diff = Diff(0.0, 2e-3, False)
    assert not diff.within(1e-3)
    assert diff.within(1e-3, Diff(0.0, 6e-4, False))  # 4x eager's own difference
    assert not diff.within(1e-3, Diff(0.0, 4e-4, False))
    assert not diff.within(1e-3, Diff(math.inf, math.inf, False))  # a second eager run that broke tells nothing


def test_a_drop_in_difference_is_a_failure_of_its_own():
    """Names, keys and classes that wrapping changed, and gradients present in one run only, are
    reported as such: they break code that holds the model even when the numbers match."""
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    fw = framework_of(model)
    before = fw.names(model)
    assert dropin_differences(before, fw.names(model)) == ()
    renamed = nn.Sequential()
    renamed.add_module("0", model[0])
    renamed.add_module("layer", model[1])  # a wrapper's prefix
    (line, *_) = dropin_differences(before, fw.names(renamed))
    assert line.startswith("parameter names changed (was 1.weight, 1.bias, now layer.weight, layer.bias)")
    g = np.ones(2)
    eager = Trace(grads=[[g, g, g, None]])
    wrapped = Trace(grads=[[g, g, g, np.zeros(2)]])  # a zero where eager left None
    (text,) = presence_differences(fw, model, wrapped, eager)
    assert text == "gradient presence at training step 1: 1.bias has none eagerly, one wrapped"
    result = judge(RunStats(wrapped=1, counts={"captures": 1}), Diff(0.0, 0.0, True), None, 1e-4, None, (text,))
    assert result.outcome is Outcome.DROPIN and result.outcome.bad
