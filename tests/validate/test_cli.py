"""`validate` end to end on a tiny module written here: the verdict/run table, text and JSON, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.validate.helpers import invoke, report, table  # noqa: E402

LAYERS = '''
import numpy
import torch
import torch.nn as nn


class Good(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return torch.tanh(self.fc(x))


CALLS = 0


class Counter(nn.Module):
    """Counts calls in a global: a hazard for the analyzer, harmless to the numbers (the runtime watches
    layer attributes, not globals)."""

    def forward(self, x):
        global CALLS
        CALLS += 1
        return x * 2


class Scaled(nn.Module):
    """Scales by its own call count: its captures change the count, so the runtime keeps it eager."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


class Gated(nn.Module):
    """`scale` is annotated as a float, so the analyzer takes it for a host value; the model passes a tensor."""

    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x, scale: float = 1.0):
        if scale > 0:
            return self.fc(x) * scale
        return self.fc(x)


class Net(nn.Module):
    def __init__(self, gated=True, d=8):
        super().__init__()
        self.good = Good(d)
        self.counter = Counter()
        self.scaled = Scaled()
        self.gated = Gated(d) if gated else None

    def forward(self, x):
        h = self.scaled(self.counter(self.good(x)))
        return h if self.gated is None else self.gated(h, h.abs().mean())


class Broken(nn.Module):
    def forward(self, x):
        raise ValueError("no forward today")


def make_gated():
    torch.manual_seed(0)
    return Net(), (torch.randn(4, 8),)


def make_clean():
    torch.manual_seed(0)
    return Net(gated=False), [torch.randn(4, 8)]


def make_dict():
    torch.manual_seed(0)
    return {"model": Good(8), "inputs": (torch.randn(4, 8),), "loss_fn": lambda model, out, x: (out - x).abs().mean()}


def make_wrapped():
    from autograph_cg.runtime import CUDAGraphedLayer

    torch.manual_seed(0)
    net = Net(gated=False)
    net.good = CUDAGraphedLayer(net.good)  # as `rewrite` leaves it
    return net, (torch.randn(4, 8),)


def make_one():
    return Good(8)


def make_built():
    torch.manual_seed(0)
    return {"model": make_one(), "inputs": (torch.randn(4, 8),), "loss_fn": lambda model, out, x: (out - x).abs().mean()}


def make_raises():
    raise RuntimeError("boom")


class Jitter(nn.Module):
    """Differs a little on every run, as kernels that add in another order on each run do on a GPU."""

    def forward(self, x):
        noise = numpy.random.default_rng().uniform(-1.0, 1.0, tuple(x.shape))
        return x * (1 + 3e-3 * torch.from_numpy(noise).to(x.dtype))


class Jittery(nn.Module):
    def __init__(self):
        super().__init__()
        self.good = Good(8)
        self.jitter = Jitter()

    def forward(self, x):
        return self.jitter(self.good(x))


def make_jittery():
    torch.manual_seed(0)
    return Jittery(), (torch.randn(4, 8),)


def make_broken():
    return Broken(), (torch.randn(2, 8),)

'''


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    (tmp_path / "tiny_layers.py").write_text(LAYERS)
    return str(tmp_path)


def test_an_eligible_class_that_fails_is_an_analyzer_bug(tiny: str) -> None:
    code, data = report("tiny_layers:make_gated", "--path", tiny)
    assert code == 1
    assert table(data) == {
        "tiny_layers.Net": ("ineligible", "failed", None),
        "tiny_layers.Good": ("eligible", "captured", None),
        "tiny_layers.Counter": ("ineligible", "captured", "missed opportunity"),
        "tiny_layers.Scaled": ("ineligible", "eager", None),
        "tiny_layers.Gated": ("eligible", "failed", "analyzer bug"),
    }
    gated = next(c for c in data["classes"] if c["class"] == "tiny_layers.Gated")
    assert "Tensor.__bool__" in gated["detail"]
    # A graph would keep the count it was captured with: the runtime sees its captures change the count,
    # puts it back and runs the layer eagerly, with eager's numbers.
    scaled = next(c for c in data["classes"] if c["class"] == "tiny_layers.Scaled")
    assert "forward changed layer state while capturing: `calls`" in scaled["detail"]
    # The plan wraps Good and Gated; Gated's capture fails, so it runs eagerly and the numbers still match.
    assert (data["plan"]["runtime"]["wrapped"], data["plan"]["outcome"]) == (2, "failed")
    assert data["plan"]["max_rel_diff"] == {"outputs": 0.0, "grads": 0.0}
    assert data["exit_code"] == 1


def test_a_class_that_replays_wrong_is_a_runtime_bug_whatever_its_verdict(tiny: str, monkeypatch) -> None:
    """A runtime that replays right once, at its check, and then hands out stale outputs (simulated:
    graphs replay only once) is caught by validate, whatever the class's verdict, and the run fails."""
    from autograph_cg.runtime import standin

    replay = standin.StandInGraph.replay

    def once(self) -> None:
        if not getattr(self, "replayed", False):
            self.replayed = True
            replay(self)

    monkeypatch.setattr(standin.StandInGraph, "replay", once)
    code, data = report("tiny_layers:make_gated", "--path", tiny)
    good = next(c for c in data["classes"] if c["class"] == "tiny_layers.Good")
    assert (good["verdict"], good["outcome"], good["disagreement"]) == ("eligible", "mismatch", "runtime bug")
    assert any(d["class"] == "tiny_layers.Good" and d["kind"] == "runtime bug" for d in data["disagreements"])
    assert code == 1 and data["exit_code"] == 1


def test_clean_model_exits_zero_and_lists_the_missed_opportunity(tiny: str) -> None:
    result = invoke("tiny_layers:make_clean", "--path", tiny)
    assert result.exit_code == 0
    out = result.stdout
    assert "Plan: 1 layer(s) wrapped, 2 of 5 layers inside graphs\n  captured: outputs 0, gradients 0, bitwise\n" in out
    assert "Disagreements (1)\n  missed opportunity: tiny_layers.Counter is ineligible (Counter.forward:" in out
    assert "AG402" in out and out.endswith("no eligible class failed\n")


def test_dict_factory_with_its_own_loss(tiny: str) -> None:
    code, data = report("tiny_layers:make_dict", "--path", tiny)
    assert code == 0
    assert table(data) == {"tiny_layers.Good": ("eligible", "captured", None)}
    # `Good(8)` inside make_dict's dict is no site of the plan (rewrite leaves it): nothing is wrapped
    plan = data["plan"]
    assert (plan["runtime"]["wrapped"], plan["layers_in_graphs"], plan["layers"]) == (0, 0, 2)
    assert plan["outcome"] == "nothing wrapped"


def test_the_plan_wraps_a_layer_where_its_site_built_it(tiny: str) -> None:
    # the same class built at `return Good(8)` in make_one, a site outside any __init__: the root is wrapped
    code, data = report("tiny_layers:make_built", "--path", tiny)
    assert code == 0
    plan = data["plan"]
    assert (plan["runtime"]["wrapped"], plan["layers_in_graphs"], plan["layers"]) == (1, 2, 2)
    assert plan["outcome"] == "captured" and plan["runtime"]["backward_replays"] == 3  # steps 3, 4, 5


def test_differences_within_eager_own_noise_are_no_mismatch(tiny: str) -> None:
    code, data = report("tiny_layers:make_jittery", "--path", tiny)
    noise = data["eager_noise"]
    assert not noise["bitwise"] and noise["outputs"] > 1e-3  # two eager runs differ beyond the tolerance
    good = next(c for c in data["classes"] if c["class"] == "tiny_layers.Good")
    assert good["max_rel_diff"]["outputs"] > 1e-3  # so does Good wrapped, by as much as eager from itself
    assert (good["verdict"], good["outcome"], good["disagreement"]) == ("eligible", "captured", None)
    assert code == 0 and "eager against itself" in invoke("tiny_layers:make_jittery", "--path", tiny).stdout


def test_wrappers_already_in_the_model_are_validated_as_the_plan(tiny: str) -> None:
    code, data = report("tiny_layers:make_wrapped", "--path", tiny)
    assert code == 0
    assert data["plan"]["runtime"]["wrapped"] == 1 and data["plan"]["outcome"] == "captured"
    assert table(data)["tiny_layers.Good"] == ("eligible", "captured", None)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tiny_nowhere:make", "cannot import module 'tiny_nowhere': ModuleNotFoundError"),
        ("tiny_layers:make_nothing", "module 'tiny_layers' has no attribute 'make_nothing'"),
        ("tiny_layers", "factory must be written MODULE:NAME, got 'tiny_layers'"),
        ("tiny_layers:make_one", "tiny_layers:make_one must return (model, inputs)"),
        ("tiny_layers:make_raises", "tiny_layers:make_raises raised RuntimeError: boom"),
        ("tiny_layers:make_broken", "the model fails eagerly: ValueError: no forward today"),
    ],
)
def test_bad_targets_exit_2_with_one_line(tiny: str, target: str, message: str) -> None:
    result = invoke(target, "--path", tiny)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"autograph-cg: error: {message}")
    assert result.stderr.count("\n") == 1


def test_steps_must_outlast_the_warmup(tiny: str) -> None:
    from click.testing import CliRunner

    from autograph_cg.cli.validate import validate

    result = CliRunner().invoke(validate, ["tiny_layers:make_clean", "--path", tiny, "--steps", "3"])
    assert result.exit_code == 2 and "--steps (3) must exceed --warmup-steps (3)" in result.stderr
