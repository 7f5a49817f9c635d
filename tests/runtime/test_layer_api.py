"""CUDAGraphedLayer behaves as the framework's own layer: checkpoints, modes, attributes, copies, imports."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from autograph_cg.runtime import CUDAGraphedLayer, stats_of
from tests.runtime.harness import assert_all_close, close, randn

D, B = 8, 4


def test_is_a_layer_of_the_framework(fw):
    inner = fw.build("MLP", D)
    wrapped = fw.wrap(inner)
    assert isinstance(wrapped, CUDAGraphedLayer)
    assert isinstance(wrapped, type(fw.container([])).__mro__[1])  # nn.Module / nn.Layer
    assert wrapped.fc1 is inner.fc1  # attribute access reaches the wrapped layer
    assert [id(p) for p in wrapped.parameters()] == [id(p) for p in inner.parameters()]
    wrapped.eval()
    assert not inner.training and not inner.fc1.training
    wrapped.train()
    assert inner.training


def test_only_layers_can_be_wrapped():
    with pytest.raises(TypeError, match="paddle.nn.Layer or a torch.nn.Module"):
        CUDAGraphedLayer(lambda x: x)


def test_state_dict_keys_are_the_unwrapped_layers(fw):
    ref = fw.build("Norm", D)
    wrapped = fw.wrap(fw.build("Norm", D))
    assert list(fw.state_dict(wrapped)) == list(fw.state_dict(ref))
    fw.load(wrapped, fw.state_dict(ref))  # an unwrapped checkpoint loads into the wrapped layer
    assert_all_close(
        [fw.numpy(v) for v in fw.state_dict(wrapped).values()],
        [fw.numpy(v) for v in fw.state_dict(ref).values()], 0, "loaded")
    nested_ref = fw.container([fw.build("MLP", D), fw.build("MLP", D)])
    nested = fw.container([fw.wrap(fw.build("MLP", D)), fw.build("MLP", D)])
    assert list(fw.state_dict(nested)) == list(fw.state_dict(nested_ref))
    fw.load(nested_ref, fw.state_dict(nested))  # and a wrapped checkpoint into the unwrapped model
    x = randn(B, D)
    assert close(fw.numpy(nested(fw.tensor(x))), fw.numpy(nested_ref(fw.tensor(x))), fw.atol)


def test_deepcopy_makes_an_independent_graphed_layer(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    wrapped(fw.tensor(randn(B, D)))
    twin = copy.deepcopy(wrapped)
    assert isinstance(twin, CUDAGraphedLayer) and stats_of(twin)["captures"] == 0
    x = randn(B, D)
    assert close(fw.numpy(twin(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    assert stats_of(twin)["captures"] == 1 and stats_of(wrapped)["captures"] == 1


def test_importing_the_runtime_loads_no_framework_and_no_analyzer():
    code = (
        "import sys, autograph_cg.runtime\n"
        "bad = [m for m in sys.modules if m in ('torch', 'paddle', 'libcst') or "
        "m.startswith(('autograph_cg.analysis', 'autograph_cg.rules'))]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_inputs_keep_their_memory_layout(torch_fw):
    """A channels-last input reaches the layer channels-last, as in eager (same kernels, same bits),
    and a contiguous input of the same shape gets a graph of its own."""
    import torch

    fw = torch_fw
    ref = torch.nn.Conv2d(3, 4, 1).to(fw.device)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    x = torch.randn(2, 3, 5, 5, device=fw.device)
    for fmt in (torch.channels_last, torch.channels_last, torch.contiguous_format):
        xin = x.contiguous(memory_format=fmt)
        with torch.no_grad():
            got, want = wrapped(xin), ref(xin)
        assert got.stride() == want.stride(), fmt
        assert torch.equal(got, want), fmt
    assert stats_of(wrapped)["captures"] == 2 and stats_of(wrapped)["forward_replays"] == 3


def test_zero_grad_clears_every_parameter_before_and_after_capture(torch_fw):
    import torch

    fw = torch_fw
    wrapped = fw.wrap(fw.container([fw.build("MLP", D), fw.build("MLP", D)]), num_warmup_steps=1)
    for step, set_to_none in enumerate((True, False, True, True)):
        x = torch.randn(B, D, device=fw.device, requires_grad=True)
        wrapped(x).square().mean().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in wrapped.parameters()), step
        wrapped.zero_grad(set_to_none=set_to_none)
        if set_to_none:
            assert all(p.grad is None for p in wrapped.parameters()), step
        else:
            assert all(p.grad is not None and not p.grad.any() for p in wrapped.parameters()), step
    assert stats_of(wrapped)["backward_replays"] == 3
