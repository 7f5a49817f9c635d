"""A wrapped layer inside another wrapped layer becomes part of the outer graph: no capture inside a capture."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, close, randn
from tests.runtime.test_training import B, D, run


def _sequential(fw, *layers):
    if fw.name == "torch":
        import torch

        return torch.nn.Sequential(*layers)
    import paddle

    return paddle.nn.Sequential(*layers)


def test_nested_wrappers_train_like_eager(fw):
    ref = _sequential(fw, fw.build("MLP", D), fw.build("MLP", D))
    twin = fw.twin(ref)
    inner = fw.wrap(twin[0], num_warmup_steps=1)
    outer = fw.wrap(_sequential(fw, inner, twin[1]), num_warmup_steps=2)
    opt_ref, opt_wrapped = fw.sgd(ref, 0.1), fw.sgd(outer, 0.1)
    for step in range(6):
        x = randn(B, D)
        y1, g1 = run(fw, outer, x)
        y0, g0 = run(fw, ref, x)
        assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol), f"step {step}"
        assert_all_close(fw.param_grads(outer), fw.param_grads(ref), fw.atol, f"param grads, step {step}")
        opt_ref.step()
        opt_wrapped.step()
        opt_ref.zero_grad(set_to_none=True)
        opt_wrapped.zero_grad(set_to_none=True)
    assert stats_of(outer)["captures"] == 1 and stats_of(outer)["forward_replays"] == 4  # 6 calls, 2 of warmup
    assert stats_of(inner)["nested_calls"] >= 1  # called inside the outer capture, it ran plainly
    assert not stats_of(inner)["disabled_reason"]


def test_an_inner_wrapper_graphs_itself_once_its_outer_one_falls_back(fw):
    ref = _sequential(fw, fw.build("MLP", D), fw.build("Sync", D))
    twin = fw.twin(ref)
    inner = fw.wrap(twin[0], num_warmup_steps=1)
    outer = fw.wrap(_sequential(fw, inner, twin[1]), num_warmup_steps=1)
    ref.eval()  # Sync's dropout would draw different masks on the two sides
    outer.eval()
    for step in range(5):
        x = randn(B, D)
        y1, g1 = run(fw, outer, x)
        y0, g0 = run(fw, ref, x)
        assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol), f"step {step}"
    assert stats_of(outer)["disabled_reason"]  # the host sync made its capture fail
    assert stats_of(inner)["captures"] == 1 and stats_of(inner)["forward_replays"] >= 1


def test_an_inner_wrapper_serves_its_graphs_while_its_outer_one_fails_a_guard(fw):
    """A root planned under a guard (a decoder model: `use_cache=False` passed) keeps its blocks' graphs for the
    calls that fail it, and covers them with its own graph for the calls that pass it."""
    ref = fw.build("Handing", D)
    twin = fw.twin(ref)
    inner = fw.wrap(twin.inner, num_warmup_steps=1)
    outer = fw.wrap(twin, num_warmup_steps=1, guard={"use_cache": "passed false"})
    ref.eval()
    outer.eval()
    for step in range(4):  # `use_cache` left out: the outer layer runs eagerly, the inner one replays
        x = randn(B, D)
        assert close(fw.numpy(outer(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol), step
    assert stats_of(outer)["fallbacks"] == {"guard: use_cache is not passed as false": 4}
    assert stats_of(inner)["captures"] == 1 and stats_of(inner)["forward_replays"] >= 2
    nested = stats_of(inner)["nested_calls"]
    for step in range(3):  # passed: the outer graph, the inner layer inside it
        x = randn(B, D)
        assert close(fw.numpy(outer(fw.tensor(x), use_cache=False)), fw.numpy(ref(fw.tensor(x), use_cache=False)), fw.atol)
    assert stats_of(outer)["captures"] == 1 and stats_of(outer)["forward_replays"] >= 1
    assert stats_of(inner)["nested_calls"] > nested


def test_an_inner_wrapper_called_past_its_outer_one_serves_its_own_graphs(fw):
    """A model may call a wrapped layer's sublayers without calling the wrapped layer (paddlenlp's MT5 calls
    `self.mt5.encoder(...)` where the plan wraps `self.mt5`): the outer wrapper is not running, so it covers
    nothing, and the inner one captures and replays; called through the outer layer, it is part of that graph."""
    ref = _sequential(fw, fw.build("MLP", D), fw.build("MLP", D))
    twin = fw.twin(ref)
    inner = fw.wrap(twin[0], num_warmup_steps=1)
    outer = fw.wrap(twin, num_warmup_steps=1)
    for step in range(4):  # past the outer layer: the inner one alone
        x = randn(B, D)
        y1, g1 = run(fw, outer[0], x)
        y0, g0 = run(fw, ref[0], x)
        assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol), f"step {step}"
    assert stats_of(outer)["warmup_calls"] == 0 and stats_of(outer)["captures"] == 0
    assert stats_of(inner)["captures"] == 1 and stats_of(inner)["forward_replays"] >= 2
    assert stats_of(inner)["nested_calls"] == 0
    for step in range(3):  # through the outer layer: its graph holds the inner one's computation
        x = randn(B, D)
        y1, g1 = run(fw, outer, x)
        y0, g0 = run(fw, ref, x)
        assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol), f"outer step {step}"
    assert stats_of(outer)["captures"] == 1 and stats_of(inner)["nested_calls"] >= 1


_AFTER_FAILED_OUTER = textwrap.dedent(
    """
    import gc
    import torch
    from autograph_cg.runtime import stats_of
    from tests.runtime.harness import TorchHarness, randn
    from tests.runtime.test_nested import _sequential
    from tests.runtime.test_training import B, D, run

    fw = TorchHarness("cuda")
    other = fw.wrap(fw.build("MLP", D), num_warmup_steps=0)  # its graphs stay alive in the shared pool
    run(fw, other, randn(B, D))
    inner = fw.wrap(fw.build("MLP", D), num_warmup_steps=1)
    outer = fw.wrap(_sequential(fw, inner, fw.build("Sync", D)), num_warmup_steps=1)
    for _ in range(4):
        run(fw, outer, randn(B, D))
    assert stats_of(outer)["disabled_reason"] and stats_of(inner)["captures"] == 1, (stats_of(outer), stats_of(inner))
    del inner, outer
    gc.collect()  # the pool the inner layer captured into loses its last graph
    fresh = fw.wrap(fw.build("MLP", D), num_warmup_steps=0)
    for _ in range(2):
        run(fw, fresh, randn(B, D))
    assert stats_of(fresh)["captures"] == 1, stats_of(fresh)
    del other, fresh
    gc.collect()
    torch.cuda.empty_cache()
    kept = [s for s in torch.cuda.memory._snapshot()["segments"] if tuple(s["segment_pool_id"]) != (0, 0)]
    assert not kept, kept  # every graph pool went back to the device, the one of the failed capture too
    """
)


@pytest.mark.gpu
def test_after_a_failed_outer_capture_other_layers_capture_and_pools_are_freed():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    repo = Path(__file__).resolve().parents[2]
    # A subprocess: it checks the allocator's pools, which other tests' graphs would share.
    result = subprocess.run([sys.executable, "-c", _AFTER_FAILED_OUTER], cwd=repo, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


_RECOMPUTED_INSIDE = textwrap.dedent(
    """
    import numpy as np
    import paddle
    from paddle.distributed.fleet.utils import recompute
    from autograph_cg.runtime import CUDAGraphedLayer, stats_of

    class Inner(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(8, 8)

        def forward(self, x):
            return paddle.nn.functional.gelu(self.fc(x))

    class Stack(paddle.nn.Layer):
        def __init__(self, wrap):
            super().__init__()
            self.blocks = paddle.nn.LayerList([wrap(Inner()), wrap(Inner())])

        def forward(self, x):
            for block in self.blocks:
                x = recompute(block, x, use_reentrant=True)
            return x

    paddle.seed(0)
    ref = Stack(lambda layer: layer)
    model = Stack(lambda layer: CUDAGraphedLayer(layer, 1, backend="standin"))
    model.set_state_dict(ref.state_dict())
    model = CUDAGraphedLayer(model, 1, backend="standin")
    for step in range(5):
        x = paddle.randn([2, 8])
        got = []
        for m in (model, ref):
            xi = x.clone()
            xi.stop_gradient = False
            m(xi).square().sum().backward()
            got.append([xi.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
            m.clear_gradients()
        for a, b in zip(*got):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    outer, inner = stats_of(model), stats_of(model.blocks[0])
    assert outer["backward_replays"] >= 3, outer
    assert inner["nested_calls"] >= 3, inner  # run again in the outer layer's backward: part of it
    """
)


def test_layers_run_again_in_an_outer_layers_backward_are_part_of_it():
    """Activation checkpointing runs the blocks' forward again in the backward; inside a wrapped stack that is the
    stack's backward replay (on the stand-in it runs Paddle's autograd again), so wrapped blocks called there are
    part of the stack's call. Served as graphs of their own there, Paddle's backward crashed the process (the
    rewritten paddlenlp MT5 with recompute on). A subprocess: the failure is a crash."""
    pytest.importorskip("paddle")
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", _RECOMPUTED_INSIDE], cwd=repo, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_wrapped_layers_inside_the_members_of_a_fused_run_are_part_of_it():
    """Blocks wrapped one by one, each holding a wrapped MLP, fuse into one run. The run's layers (on the stand-in
    its replay runs their forwards again, and the first replay's check runs them eagerly) hold the MLPs: called
    there they run plainly, as part of the run, though no block's own call is in progress. (A rule that asked
    only whether the block's own call was running served the MLPs' graphs inside the run: gradients went
    missing.)"""
    torch = pytest.importorskip("torch")
    from autograph_cg.runtime import CUDAGraphedLayer

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(D, D), torch.nn.Linear(D, D)

        def forward(self, x):
            return self.b(torch.nn.functional.gelu(self.a(x)))

    class Block(torch.nn.Module):
        def __init__(self, wrap):
            super().__init__()
            self.mlp, self.norm = wrap(MLP()), torch.nn.LayerNorm(D)

        def forward(self, x):
            return x + self.mlp(self.norm(x))

    class Net(torch.nn.Module):
        def __init__(self, wrap):
            super().__init__()
            self.blocks = torch.nn.ModuleList([wrap(Block(wrap)) for _ in range(3)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    torch.manual_seed(0)
    ref = Net(lambda m: m)
    model = Net(lambda m: CUDAGraphedLayer(m, 1, backend="standin"))
    model.load_state_dict(ref.state_dict())
    for step, n in enumerate([4] * 6 + [12] * 6 + [4] * 6):
        x = torch.randn(2, n, D)
        got = []
        for m in (model, ref):
            m.zero_grad(set_to_none=True)
            xi = x.clone().requires_grad_()
            y = m(xi)
            y.square().mean().backward()
            got.append([y.detach(), xi.grad, *(p.grad for p in m.parameters())])
        assert [g is None for g in got[0]] == [g is None for g in got[1]], f"gradient presence, step {step}"
        assert_all_close([g.numpy() for g in got[0]], [g.numpy() for g in got[1]], 1e-5, f"step {step}")
    assert stats_of(model.blocks[0])["fused_calls"] > 0
    assert stats_of(model.blocks[0].mlp)["nested_calls"] > 0 and stats_of(model.blocks[0].mlp)["captures"] == 0
