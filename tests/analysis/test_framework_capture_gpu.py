"""Every PyTorch and torchvision layer on the allowlist captures: forward and backward in one CUDA graph, replayed on
fresh inputs copied into the static ones, match eager (outputs, input and parameter grads, buffers). Layers that draw
random numbers must draw anew on every replay, and the backward must use the forward's draw."""

from __future__ import annotations

import copy
import importlib.util

import pytest

torch = pytest.importorskip("torch")

from autograph_cg.analysis.framework_layers import GPU, LAYERS, OFF  # noqa: E402
from tests.analysis.framework_cases import (  # noqa: E402
    HAZARD_CASES,
    TORCH_CASES,
    TORCHVISION_CASES,
    Case,
    float_outputs,
    grad_targets,
    make_inputs,
    weighted_sum,
)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

CHECKED = [layer.name for layer in LAYERS if layer.checked == GPU and layer.role != OFF]
REFUSED = [layer.name for layer in LAYERS if layer.checked == GPU and layer.role == OFF]  # off because of this test
STEPS = 2


@pytest.fixture(autouse=True)
def _exact_math():
    """TF32 off: eager and replay then run the same fp32 kernels."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _case(name: str) -> Case:
    if name.startswith("torchvision.") and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed")
    return {**TORCH_CASES, **TORCHVISION_CASES}[name]


class Captured:
    """One layer captured with static inputs: forward, and in training the grads of a weighted sum of its outputs."""

    def __init__(self, case: Case, module: torch.nn.Module, training: bool) -> None:
        self.case, self.module, self.training = case, module, training
        self.args, self.kwargs = make_inputs(case, 0, "cuda")
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                self._step()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs, self.grads = self._step()

    def _step(self) -> tuple[list, list]:
        with torch.set_grad_enabled(self.training):
            outputs = float_outputs(self.module(*self.args, **self.kwargs))
            if not self.training:  # copies: a layer that returns a view of its input still records a kernel
                return [o.clone() for o in outputs], []
            if not hasattr(self, "weights"):
                self.weights = [torch.randn_like(o) for o in outputs]
            loss = weighted_sum(outputs, self.weights)
            if not loss.requires_grad:
                return outputs, []
            return outputs, list(torch.autograd.grad(loss, grad_targets(self.module, self.args), allow_unused=True))

    def replay(self, args: list, kwargs: dict) -> tuple[list, list]:
        with torch.no_grad():
            for static, fresh in [*zip(self.args, args), *((self.kwargs[k], v) for k, v in kwargs.items())]:
                static.copy_(fresh)
        self.graph.replay()
        return [o.clone() for o in self.outputs], [g.clone() if g is not None else None for g in self.grads]


def _eager(case: Case, module: torch.nn.Module, args: list, kwargs: dict, weights: list, training: bool):
    with torch.set_grad_enabled(training):
        outputs = float_outputs(module(*args, **kwargs))
        if not training:
            return outputs, []
        loss = weighted_sum(outputs, weights)
        if not loss.requires_grad:
            return outputs, []
        return outputs, list(torch.autograd.grad(loss, grad_targets(module, args), allow_unused=True))


def _close(got: list, want: list, what: str) -> None:
    assert len(got) == len(want), what
    for index, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"{what} {index}"
        if g is not None:
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} {index}: {m}")


def capture_matches_eager(case: Case, training: bool) -> None:
    torch.manual_seed(0)
    eager = case.build().cuda().train(training)
    graphed = copy.deepcopy(eager)
    captured = Captured(case, graphed, training)
    with torch.no_grad():  # the warm-up moved running statistics: start both from the same state
        for mine, theirs in zip(graphed.buffers(), eager.buffers()):
            mine.copy_(theirs)
    random = case.random == "always" or (case.random == "train" and training)
    for step in range(1, STEPS + 1):
        args, kwargs = make_inputs(case, step, "cuda")
        outputs, grads = captured.replay(args, kwargs)
        assert all(torch.isfinite(o).all() for o in outputs)
        if random:
            again, _ = captured.replay(args, kwargs)
            assert any(not torch.equal(a, b) for a, b in zip(outputs, again)), "a replay repeated the previous draw"
            outputs, grads = captured.replay(args, kwargs)
            if case.homogeneous and grads and grads[0] is not None:  # Euler: x . grad = w . f(x) when f(a x) = a f(x)
                euler = sum((w * o).sum() for w, o in zip(captured.weights, outputs))
                torch.testing.assert_close((grads[0] * args[0]).sum(), euler, rtol=1e-4, atol=1e-4)
            continue
        want_outputs, want_grads = _eager(case, eager, args, kwargs, getattr(captured, "weights", []), training)
        _close(outputs, want_outputs, "output")
        _close(grads, want_grads, "grad")
        _close(list(graphed.buffers()), list(eager.buffers()), "buffer")


@pytest.mark.parametrize("name", CHECKED)
def test_layer_captures_in_training(name: str) -> None:
    capture_matches_eager(_case(name), training=True)


@pytest.mark.parametrize("name", CHECKED)
def test_layer_captures_in_inference(name: str) -> None:
    capture_matches_eager(_case(name), training=False)


@pytest.mark.parametrize("name", REFUSED)
def test_layer_off_the_list_does_not_capture(name: str) -> None:
    """What keeps it off the list still holds: in training, its capture fails or replays wrong."""
    with pytest.raises((RuntimeError, AssertionError)):
        capture_matches_eager(_case(name), training=True)


@pytest.mark.parametrize("name", sorted(HAZARD_CASES))
def test_caveat_breaks_capture(name: str) -> None:
    """The table's caveats hold: under these arguments the layer does not capture (or replays wrong)."""
    case, training = HAZARD_CASES[name]
    with pytest.raises((RuntimeError, AssertionError)):
        capture_matches_eager(case, training)
