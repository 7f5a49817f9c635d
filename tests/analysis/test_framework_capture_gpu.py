"""Every PyTorch and torchvision layer on the allowlist captures through the runtime users run
(``CUDAGraphedLayer``, its first-replay check on): forward and backward replayed on fresh inputs match
eager (outputs, input and parameter grads, buffers), with no eager call and no fallback. Layers that draw
random numbers draw what eager draws from the same generator state, anew on every replay, and the
backward uses the forward's draw."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from autograph_cg.analysis.framework_layers import GPU, LAYERS, OFF  # noqa: E402
from autograph_cg.runtime import CUDAGraphedLayer, stats_of  # noqa: E402
from tests.analysis.framework_cases import (  # noqa: E402
    HAZARD_CASES,
    TORCH_CASES,
    TORCHVISION_CASES,
    Case,
    float_outputs,
    grad_targets,
    make_inputs,
    torchvision_missing,
    weighted_sum,
)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

CHECKED = [layer.name for layer in LAYERS if layer.checked == GPU and layer.role != OFF]
REFUSED = [layer.name for layer in LAYERS if layer.checked == GPU and layer.role == OFF]  # off because of this test
STEPS = 3  # replays after the capture step


@pytest.fixture(autouse=True)
def _exact_math():
    """TF32 off: eager and replay then run the same fp32 kernels."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _case(name: str) -> Case:
    if name.startswith("torchvision.") and torchvision_missing():
        pytest.skip(torchvision_missing())
    return {**TORCH_CASES, **TORCHVISION_CASES}[name]


def _step(module: torch.nn.Module, args: list, kwargs: dict, weights: list, training: bool) -> tuple[list, list]:
    """Outputs, and in training the grads of a weighted sum of them (inputs and parameters), by
    ``loss.backward()`` as a training loop takes them."""
    with torch.set_grad_enabled(training):
        outputs = float_outputs(module(*args, **kwargs))
        if not training:
            return [o.detach().clone() for o in outputs], []
        if not weights:
            weights.extend(torch.randn_like(o) for o in outputs)
        loss = weighted_sum(outputs, weights)
        if not loss.requires_grad:
            return [o.detach() for o in outputs], []
        targets = grad_targets(module, args)
        loss.backward()
        grads = [None if t.grad is None else t.grad.clone() for t in targets]
        for t in targets:  # the next step starts from no gradient, inputs included
            t.grad = None
        return [o.detach() for o in outputs], grads


def _close(got: list, want: list, what: str) -> None:
    assert len(got) == len(want), what
    for index, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"{what} {index}"
        if g is not None:
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what} {index}: {m}")


def capture_matches_eager(case: Case, training: bool) -> None:
    """The layer wrapped and an eager twin run the same inputs from the same generator state."""
    torch.manual_seed(0)
    eager = case.build().cuda().train(training)
    graphed = CUDAGraphedLayer(copy.deepcopy(eager), num_warmup_steps=1, backend="cuda", fuse=False)
    weights: list = []
    random = case.random == "always" or (case.random == "train" and training)
    for step in range(STEPS + 2):  # a warmup call, the capture, then replays
        args, kwargs = make_inputs(case, step, "cuda")
        twin_args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
        torch.manual_seed(100 + step)
        outputs, grads = _step(graphed, args, kwargs, weights, training)
        torch.manual_seed(100 + step)
        want_outputs, want_grads = _step(eager, twin_args, kwargs, weights, training)
        assert all(torch.isfinite(o).all() for o in outputs)
        _close(outputs, want_outputs, f"step {step} output")
        _close(grads, want_grads, f"step {step} grad")
        _close(list(graphed.buffers()), list(eager.buffers()), f"step {step} buffer")
    if random:  # the same inputs twice: each replay draws anew, and the backward uses its forward's draw
        args, kwargs = make_inputs(case, 0, "cuda")
        first, _ = _step(graphed, args, kwargs, weights, training)
        outputs, grads = _step(graphed, args, kwargs, weights, training)
        assert any(not torch.equal(a, b) for a, b in zip(outputs, first)), "a replay repeated the previous draw"
        if case.homogeneous and grads and grads[0] is not None:  # Euler: x . grad = w . f(x) when f(a x) = a f(x)
            euler = sum((w * o).sum() for w, o in zip(weights, outputs))
            torch.testing.assert_close((grads[0] * args[0]).sum(), euler, rtol=1e-4, atol=1e-4)
    stats = stats_of(graphed)
    assert stats["disabled_reason"] is None, stats["disabled_reason"]
    replays = STEPS + 1 + (2 if random else 0)
    assert stats["captures"] == 1 and stats["forward_replays"] == replays, stats
    assert not stats["eager_calls"] and not stats["eager_backwards"] and not stats["fallbacks"], stats
    if training and grads:
        assert stats["backward_replays"] == replays, stats


@pytest.mark.parametrize("name", CHECKED)
def test_layer_captures_in_training(name: str) -> None:
    capture_matches_eager(_case(name), training=True)


@pytest.mark.parametrize("name", CHECKED)
def test_layer_captures_in_inference(name: str) -> None:
    capture_matches_eager(_case(name), training=False)


@pytest.mark.parametrize("name", REFUSED)
def test_layer_off_the_list_does_not_capture(name: str) -> None:
    """What keeps it off the list still holds: in training, its capture fails, the runtime's check
    finds the replay differs from eager, or it replays wrong."""
    with pytest.raises((RuntimeError, AssertionError)):
        capture_matches_eager(_case(name), training=True)


@pytest.mark.parametrize("name", sorted(HAZARD_CASES))
def test_caveat_breaks_capture(name: str) -> None:
    """The table's caveats hold: under these arguments the layer does not capture (or replays wrong)."""
    case, training = HAZARD_CASES[name]
    with pytest.raises((RuntimeError, AssertionError)):
        capture_matches_eager(case, training)
