"""torch.compile inside a wrapped layer: a compiled module, or a compiled block inside one, captures and
trains like eager (AOTAutograd's backend on CPU, Inductor on CUDA)."""

from __future__ import annotations

import pytest

from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, randn

torch = pytest.importorskip("torch")

D, B = 8, 4


def compiled(fw, module):
    # Inductor on CUDA is what users run; on CPU AOTAutograd alone compiles in seconds and gives the
    # compiled backward (and its donated buffers) all the same.
    return torch.compile(module, backend="inductor" if fw.device == "cuda" else "aot_eager")


@pytest.mark.parametrize("where", ["outside", "inside", "option"])
def test_a_compiled_module_captures_and_trains_like_eager(torch_fw, where):
    fw = torch_fw
    ref = fw.container([fw.build("MLP", D), fw.build("MLP", D)])
    twin = fw.twin(ref)
    if where == "outside":  # CUDAGraphedLayer(torch.compile(model))
        wrapped = fw.wrap(compiled(fw, twin), num_warmup_steps=1)
    elif where == "option":  # CUDAGraphedLayer(model, compile=...): what rewrite writes when asked to compile
        backend = "inductor" if fw.device == "cuda" else "aot_eager"
        wrapped = fw.wrap(twin, num_warmup_steps=1, compile={"backend": backend})
        assert wrapped is twin and list(fw.state_dict(wrapped)) == list(fw.state_dict(ref))
    else:  # a compiled block inside the wrapped model
        twin[1] = compiled(fw, twin[1])
        wrapped = fw.wrap(twin, num_warmup_steps=1)
    opt_ref, opt_wrapped = fw.sgd(ref, 0.1), fw.sgd(wrapped, 0.1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model, opt in ((wrapped, opt_wrapped), (ref, opt_ref)):
            xt = fw.tensor(x, True)
            y = model(xt)
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y), fw.grad(xt)] + fw.param_grads(model))
            opt.step()
            opt.zero_grad(set_to_none=True)
        assert_all_close(got[0], got[1], 1e-4, f"step {step}")
    stats = stats_of(wrapped)
    assert stats["disabled_reason"] is None and stats["captures"] == 1
    assert stats["backward_replays"] == 3 and stats["eager_backwards"] == 0
    wrapped.eval()
    ref.eval()
    with fw.no_grad():
        for _ in range(3):
            x = randn(B, D)
            assert_all_close([fw.numpy(wrapped(fw.tensor(x)))], [fw.numpy(ref(fw.tensor(x)))], 1e-4, "inference")
    assert stats_of(wrapped)["captures"] == 2


def test_a_second_backward_through_a_compiled_capture(torch_fw):
    """The retained autograd graph of a capture serves an eager backward (here: retain_graph)."""
    fw = torch_fw
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(compiled(fw, fw.twin(ref)), num_warmup_steps=0)
    x = randn(B, D)
    for model in (wrapped, ref):
        loss = fw.loss(model(fw.tensor(x, True)))
        fw.backward(loss, retain_graph=True)
        fw.backward(loss)
    assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), 1e-4, "param grads")
    assert stats_of(wrapped)["disabled_reason"] is None


def test_a_compiler_that_fails_leaves_the_layer_graphed_uncompiled(torch_fw):
    """compiled and graphed -> graphed -> eager: a compiler that cannot run falls back to the plain
    forward with the reason, and the layer still captures."""
    fw = torch_fw
    ref = fw.build("MLP", D)

    def broken(gm, example_inputs):
        raise RuntimeError("this backend compiles nothing")

    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1, compile={"backend": broken})
    for step in range(3):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            y = model(fw.tensor(x, True))
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y)] + fw.param_grads(model))
            model.zero_grad(set_to_none=True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    stats = stats_of(wrapped)
    assert stats["disabled_reason"] is None and stats["captures"] == 1
    assert any("compiling failed" in reason and "uncompiled" in reason for reason in stats["fallbacks"])


def test_a_call_that_fails_the_guard_of_a_compiled_layer_keeps_the_graphs_inside(torch_fw):
    """A guarded root that compiles runs a call that fails its guard uncompiled: the wrapped blocks inside serve
    their own graphs (the compiler would trace through them and run them without any)."""
    fw = torch_fw

    class Root(torch.nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block, self.head = block, torch.nn.Linear(D, D)

        def forward(self, x, cache=None):
            return self.head(self.block(x))

    ref = fw.place(Root(fw.build("MLP", D)))
    twin = fw.twin(ref)
    fw.wrap(twin.block, num_warmup_steps=1)
    backend = "inductor" if fw.device == "cuda" else "aot_eager"
    wrapped = fw.wrap(twin, num_warmup_steps=1, compile={"backend": backend}, guard={"cache": "is None"})
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            y = model(fw.tensor(x, True), cache=[])
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y)] + fw.param_grads(model))
            model.zero_grad(set_to_none=True)
        assert_all_close(got[0], got[1], 1e-4, f"step {step}")
    assert stats_of(wrapped)["eager_calls"] == 4
    assert stats_of(twin.block)["forward_replays"] == 3 and stats_of(twin.block)["backward_replays"] == 3
