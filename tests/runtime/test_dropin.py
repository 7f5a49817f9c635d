"""A wrapped layer cannot be told from the original except by speed: names, classes, attributes,
hooks, containers, copies and checkpoints are the original's, and structural changes recapture."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

from autograph_cg.runtime import CUDAGraphedLayer, stats_of, unwrap
from tests.runtime.harness import assert_all_close, close, randn

D, B = 8, 4


def tower(fw):
    """A model, an eager twin, and the same model with a block, a sublayer of another block and
    then the whole model wrapped (nested wrapping, as rewritten code and a user's wrapper make)."""
    ref = fw.build("Tower", D)
    model = fw.twin(ref)
    fw.wrap(model.blocks[0], num_warmup_steps=1)
    fw.wrap(model.blocks[1].fc1, num_warmup_steps=1)
    return ref, fw.wrap(model, num_warmup_steps=1)


def test_no_name_gains_a_prefix_and_every_class_is_the_original(fw):
    ref, model = tower(fw)
    assert fw.names(model) == fw.names(ref)
    originals = fw.names(ref)["layers"]
    for (name, cls_name), (_, sub) in zip(originals, [(n, m) for n, m in _named_layers(model)]):
        ref_sub = dict(_named_layers(ref))[name]
        assert isinstance(sub, type(ref_sub)) and type(sub).__name__ == cls_name, name
    assert isinstance(model, CUDAGraphedLayer) and isinstance(model.blocks[0], CUDAGraphedLayer)
    assert not isinstance(model.blocks[2], CUDAGraphedLayer)


def _named_layers(model):
    named = getattr(model, "named_modules", None) or (lambda: model.named_sublayers(include_self=True))
    return list(named())


def test_wrapping_returns_the_layer_and_unwrap_restores_it(fw):
    ref = fw.build("MLP", D)
    layer = fw.twin(ref)
    cls, fc1 = type(layer), layer.fc1
    wrapped = fw.wrap(layer)
    assert wrapped is layer and layer.fc1 is fc1 and type(layer).__name__ == cls.__name__
    assert unwrap(layer) is layer and type(layer) is cls and not isinstance(layer, CUDAGraphedLayer)
    x = randn(B, D)
    assert close(fw.numpy(layer(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), 0)


def test_training_matches_eager_and_the_graphs_serve_every_layer(fw):
    ref, model = tower(fw)
    opts = [fw.sgd(m, 0.1) for m in (model, ref)]
    for step in range(5):
        x = randn(B, D)
        got = []
        for m, opt in zip((model, ref), opts):
            y = m(fw.tensor(x))
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y)] + fw.param_grads(m))
            opt.step()
            opt.zero_grad(set_to_none=True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    stats = stats_of(model)
    assert stats["captures"] == 1 and stats["forward_replays"] == 4 and not stats["fallbacks"]
    assert stats_of(model.blocks[0])["nested_calls"] >= 1  # inside the whole model's graph


def test_attribute_writes_and_deletes_reach_the_layer_and_recapture(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    x = randn(B, D)
    wrapped(fw.tensor(x))
    new = fw.build("MLP", D).fc2  # a sublayer put in place of another: new parameters
    wrapped.fc2, ref.fc2 = new, copy.deepcopy(new)
    assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    assert stats_of(wrapped)["recaptures"] == 1
    wrapped.note = "kept"
    assert wrapped.__dict__["note"] == "kept"
    del wrapped.note
    assert not hasattr(wrapped, "note")


def test_a_sublayer_replaced_by_one_without_parameters_recaptures(torch_fw):
    """An activation swapped for another changes no parameter: the graph of the old one must go."""
    import torch

    fw = torch_fw
    ref = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.ReLU(), torch.nn.Linear(D, D)).to(fw.device)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    x = randn(B, D)
    wrapped(fw.tensor(x))
    wrapped[1] = torch.nn.Tanh()
    ref[1] = torch.nn.Tanh()
    assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    assert stats_of(wrapped)["recaptures"] == 1


def test_hooks_on_the_wrapped_layer_run_on_every_call_around_its_graph(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    seen = {"wrapped": [0, 0], "ref": [0, 0]}
    for name, model in (("wrapped", wrapped), ("ref", ref)):
        count = seen[name]

        def pre(layer, inputs, count=count):
            count[0] += 1

        def post(layer, inputs, output, count=count):
            count[1] += 1
            return output * 2

        fw.hook(model, pre, post)
    for _ in range(4):
        x = randn(B, D)
        assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    assert seen["wrapped"] == seen["ref"] == [4, 4]
    assert stats_of(wrapped)["forward_replays"] == 3


def test_a_wrapped_container_iterates_measures_indexes_and_slices(fw):
    blocks = [fw.build("MLP", D) for _ in range(3)]
    seq = fw.wrap(fw.container(blocks))
    assert len(seq) == 3 and list(seq) == blocks and seq[1] is blocks[1] and seq[-1] is blocks[2]
    head = seq[:2]
    assert len(head) == 2 and list(head) == blocks[:2]
    x = fw.tensor(randn(B, D))
    assert close(fw.numpy(head(x)), fw.numpy(blocks[1](blocks[0](x))), fw.atol)


def test_train_eval_and_dtype_casts_behave_as_for_the_original(torch_fw):
    import torch

    fw = torch_fw
    ref = fw.build("MLP", D, 0.5)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    wrapped.eval()
    assert not wrapped.training and not wrapped.drop.training
    x = torch.randn(B, D, device=fw.device)
    with torch.no_grad():
        assert torch.equal(wrapped(x), ref.eval()(x))
        wrapped.double()
        ref.double()
        assert wrapped(x.double()).dtype == torch.float64
        assert torch.allclose(wrapped(x.double()), ref(x.double()))
    assert stats_of(wrapped)["recaptures"] == 1


def test_copies_carry_the_wrapping_but_not_the_graphs(fw):
    ref, model = tower(fw)
    _copies_serve_like(fw, ref, model, {"deepcopy": copy.deepcopy})


def test_a_pickled_model_loads_wrapped(torch_fw):
    """torch.save of the whole model (module-level classes: pickle finds them by name)."""
    import torch

    fw = torch_fw
    ref = fw.place(PickledTower())
    model = fw.twin(ref)
    fw.wrap(model.blocks[0], num_warmup_steps=1)
    fw.wrap(model, num_warmup_steps=1)

    def reload(m):
        buffer = io.BytesIO()
        torch.save(m, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=False)

    _copies_serve_like(fw, ref, model, {"torch.save": reload})


def _copies_serve_like(fw, ref, model, how_to_copy):
    x = randn(B, D)
    for _ in range(3):
        model(fw.tensor(x))
    copies = {how: make(model) for how, make in how_to_copy.items()}
    for how, twin in copies.items():
        assert fw.names(twin) == fw.names(ref), how
        assert isinstance(twin, CUDAGraphedLayer) and isinstance(twin.blocks[0], CUDAGraphedLayer), how
        assert stats_of(twin)["captures"] == 0, how
        for _ in range(3):
            assert close(fw.numpy(twin(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol), how
        assert stats_of(twin)["captures"] == 1 and stats_of(model)["captures"] == 1, how


def test_checkpoints_load_both_ways(fw):
    ref, model = tower(fw)
    fw.load(model, fw.state_dict(fw.build("Tower", D)))  # the original's checkpoint into the wrapped model
    fw.load(ref, fw.state_dict(model))  # and back
    x = randn(B, D)
    assert close(fw.numpy(model(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)


def test_a_parameter_eager_leaves_without_a_gradient_stays_without(fw):
    """Only one of two outputs feeds the loss: the other output's parameters get no gradient eagerly
    (None), and none after a replayed backward."""
    ref = fw.build("Branches", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            xt = fw.tensor(x, True)
            a, _ = model(xt)
            fw.backward(fw.loss(a))
            got.append([fw.grad(xt)] + fw.param_grads(model))
            fw.clear_grads(model, True)
        assert [g is None for g in got[0]] == [g is None for g in got[1]], step
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
        assert fw.grad(wrapped.fb.weight) is None
    assert stats_of(wrapped)["backward_replays"] == 3


def test_gradient_presence_holds_in_a_fused_run(fw):
    """The first block's second output feeds nothing; a run of two blocks is one graph."""
    first_ref, second_ref = fw.build("Branches", D), fw.build("MLP", D)
    first = fw.wrap(fw.twin(first_ref), num_warmup_steps=1)
    second = fw.wrap(fw.twin(second_ref), num_warmup_steps=1)
    for step in range(8):
        x = randn(B, D)
        got = []
        for a, b in ((first, second), (first_ref, second_ref)):
            h, _ = a(fw.tensor(x))
            fw.backward(fw.loss(b(h)))
            got.append(fw.param_grads(a) + fw.param_grads(b))
            fw.clear_grads(a, True)
            fw.clear_grads(b, True)
        assert [g is None for g in got[0]] == [g is None for g in got[1]], step
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    assert stats_of(first)["fused_calls"] >= 2


def test_buffers_sliced_per_call_survive_a_capture_and_an_eager_backward(fw):
    """Position ids sliced from a registered buffer are saved for backward; a capture of another
    shape while a call is in flight restores the buffers, and the backward of the call in flight
    then runs eagerly on its saved graph: the restore must not look like an in-place change."""
    ref = fw.build("Positions", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    for step in range(3):
        got = []
        for model in (wrapped, ref):
            outs = [model(fw.tensor(_fixed(B, t, step))) for t in (4, 6)]
            fw.backward(fw.loss(outs[0]))  # the first call's backward while the second is in flight
            fw.backward(fw.loss(outs[1]))
            got.append([fw.numpy(o) for o in outs] + fw.param_grads(model))
            fw.clear_grads(model, True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    assert stats_of(wrapped)["captures"] == 2 and stats_of(wrapped)["eager_backwards"] >= 1


def _fixed(b: int, t: int, step: int) -> np.ndarray:
    return np.random.default_rng(100 * step + t).standard_normal((b, t, D)).astype("float32")


@pytest.mark.parametrize("verify", [True, False])
def test_a_graph_that_replays_wrong_is_caught_by_its_first_replay(fw, verify):
    """A forward that reads host state it changes (a call counter) is captured fine, but its graph
    keeps the value it saw: checked against eager, the layer runs eagerly with the reason, and each
    call gives what eager gives for the counter's value; unchecked, it stays graphed."""
    wrapped = fw.wrap(fw.build("Counter", D), num_warmup_steps=1, verify=verify)
    agree = []
    for _ in range(4):
        x = fw.tensor(randn(B, D))
        out = fw.numpy(wrapped(x))
        agree.append(close(out, fw.numpy(wrapped.fc(x)) * wrapped.seen["calls"], fw.atol))
    stats = stats_of(wrapped)
    if verify:
        assert all(agree), agree
        assert "first replay differs from eager: output 0" in stats["disabled_reason"]
        assert 0 < stats["check_ms"] <= stats["capture_ms"]
    else:
        assert stats["disabled_reason"] is None and stats["forward_replays"] == 3
        assert stats["check_ms"] == 0


@pytest.mark.parametrize("verify", [True, False])
def test_a_backward_graph_that_replays_wrong_is_caught_by_its_first_replay(fw, verify):
    """The check holds the backward graph's parameter gradients against eager's (left in the gradient
    bank by the probe, which frees its activations before the capture): a backward that scales by a
    host counter is caught there, with the parameter named, though every forward matches; unchecked,
    it stays graphed."""
    wrapped = fw.wrap(fw.build("BackwardCounter", D), num_warmup_steps=1, verify=verify)
    for _ in range(4):
        fw.backward(fw.loss(wrapped(fw.tensor(randn(B, D)))))  # no input gradient: parameters only
        fw.clear_grads(wrapped, True)
    stats = stats_of(wrapped)
    if verify:
        assert "first replay differs from eager: the gradient of parameter fc." in stats["disabled_reason"]
        assert stats["eager_calls"] >= 2
    else:
        assert stats["disabled_reason"] is None and stats["backward_replays"] == 3


def test_dropout_passes_the_check_and_draws_the_eager_stream(cpu_fw):
    fw = cpu_fw
    ref = fw.build("MLP", D, 0.5)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            fw.seed(step)
            y = model(fw.tensor(x))
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y)] + fw.param_grads(model))
            fw.clear_grads(model, True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    assert stats_of(wrapped)["disabled_reason"] is None and stats_of(wrapped)["forward_replays"] == 3


def _torch_tower():
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(D, 2 * D), torch.nn.Linear(2 * D, D)

        def forward(self, x):
            return x + self.fc2(torch.relu(self.fc1(x)))

    class Tower(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.Sequential(Block(), Block())
            self.head = torch.nn.Linear(D, D)

        def forward(self, x):
            return self.head(self.blocks(x))

    return Block, Tower


try:  # module-level classes, as pickle needs them
    PickledBlock, PickledTower = _torch_tower()
    PickledBlock.__qualname__, PickledTower.__qualname__ = "PickledBlock", "PickledTower"
except pytest.skip.Exception:  # pragma: no cover - torch missing
    pass


def test_backwards_that_ask_for_some_gradients_get_eagers(torch_fw):
    """torch.autograd.grad over inputs and parameters gives eager's gradients and leaves every .grad
    alone; backward(inputs=[x]) fills x.grad only."""
    import torch

    fw = torch_fw
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(5):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            xt = fw.tensor(x, True)
            grads = torch.autograd.grad(fw.loss(model(xt)), [xt, model.fc1.weight, model.ln.bias])
            assert all(p.grad is None for p in model.parameters()), step
            xt2 = fw.tensor(x, True)
            model(xt2).sum().backward(inputs=[xt2])
            assert all(p.grad is None for p in model.parameters()), step
            got.append([fw.numpy(g) for g in grads] + [fw.numpy(xt2.grad)])
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    assert stats_of(wrapped)["forward_replays"] == 9 and stats_of(wrapped)["disabled_reason"] is None


def _traced_pair(torch_fw):
    """A model with a wrapped block and its unwrapped twin."""
    fw = torch_fw
    ref = fw.place(PickledTower())
    model = fw.twin(ref)
    fw.wrap(model.blocks[0], num_warmup_steps=1)
    return fw, ref, model


def test_tracers_and_exporters_see_the_original_layers(torch_fw):
    """torch.fx, TorchScript, torch.export and torch.compile of the whole model trace the original
    forward of a wrapped block: the same graph, the same numbers, no graph break."""
    import torch

    fw, ref, model = _traced_pair(torch_fw)
    x = torch.randn(B, D, device=fw.device)
    assert torch.fx.symbolic_trace(model).code == torch.fx.symbolic_trace(ref).code
    scripted = torch.jit.script(model)
    assert torch.allclose(scripted(x), ref(x), atol=1e-6)

    def ops(m):
        return [n.kind() for n in m.inlined_graph.nodes()]

    assert ops(scripted) == ops(torch.jit.script(ref))
    exported = torch.export.export(model, (x,))
    assert str(exported.graph) == str(torch.export.export(ref, (x,)).graph)
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    assert torch.allclose(compiled(x), ref(x), atol=1e-6)
    assert stats_of(model.blocks[0])["warmup_calls"] + stats_of(model.blocks[0])["forward_replays"] == 0


def test_paddle_to_static_sees_the_original_layers():
    """paddle.jit.to_static of a model with a wrapped sublayer gives the model's numbers, by the
    bytecode translator and by the AST one (full_graph)."""
    paddle = pytest.importorskip("paddle")
    from tests.runtime.harness import PaddleHarness

    fw = PaddleHarness()
    ref = fw.build("Tower", D)
    model = fw.twin(ref)
    fw.wrap(model.blocks[0], num_warmup_steps=1)
    x = fw.tensor(randn(B, D))
    want = fw.numpy(ref(x))
    for full_graph in (False, True):
        static = paddle.jit.to_static(model, full_graph=full_graph)
        assert close(fw.numpy(static(x)), want, fw.atol), full_graph


@pytest.mark.parametrize("reentrant", [True, False])
def test_activation_checkpointing_of_a_wrapped_layer_trains_like_eager(torch_fw, reentrant):
    """torch.utils.checkpoint around a wrapped layer, as a library's gradient-checkpointing switch
    does: reentrant, the graphs serve both the forward and the recomputation; without reentry its
    saved-tensor hooks would pack the graph's memory, so the layer runs eagerly, with the reason."""
    from torch.utils.checkpoint import checkpoint

    fw = torch_fw
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            xt = fw.tensor(x, True)
            y = checkpoint(model, xt, use_reentrant=reentrant)
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y), fw.grad(xt)] + fw.param_grads(model))
            model.zero_grad(set_to_none=True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    stats = stats_of(wrapped)
    assert stats["disabled_reason"] is None
    if reentrant:
        assert stats["captures"] == 2 and stats["backward_replays"] == 3  # no-grad forward, and the recomputation
    else:
        assert stats["captures"] == 0 and list(stats["fallbacks"]) == ["saved-tensor hooks are active (checkpointing or offloading)"]


def test_paddle_recompute_of_a_wrapped_layer_trains_like_eager():
    pytest.importorskip("paddle")
    from paddle.distributed.fleet.utils import recompute

    from tests.runtime.harness import PaddleHarness

    fw = PaddleHarness()
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            xt = fw.tensor(x, True)
            y = recompute(model, xt)
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y), fw.grad(xt)] + fw.param_grads(model))
            fw.clear_grads(model, True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
    assert stats_of(wrapped)["captures"] == 2 and stats_of(wrapped)["disabled_reason"] is None


def test_paddle_recompute_without_reentry_runs_the_layer_eagerly():
    """Paddle's non-reentrant recompute sets saved-tensor hooks around the forward; a capture there
    would run under them (and Paddle allows one pair at a time): the layer runs eagerly, exactly."""
    pytest.importorskip("paddle")
    from paddle.distributed.fleet.utils import recompute

    from tests.runtime.harness import PaddleHarness

    fw = PaddleHarness()
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            y = recompute(model, fw.tensor(x, True), use_reentrant=False)
            fw.backward(fw.loss(y))
            got.append(fw.param_grads(model))
            fw.clear_grads(model, True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
        assert fw.paddle.is_grad_enabled()
    assert stats_of(wrapped)["fallbacks"] == {"saved-tensor hooks are active (checkpointing or offloading)": 8}


def test_a_forward_that_recomputes_a_part_of_itself_captures_with_eagers_gradients(cpu_fw):
    """A wrapped model whose forward checkpoints a block (reentrant: its backward runs the block again
    and adds into the parameters' gradients): the capture's own backwards must leave the real
    gradients as they were (Paddle: the graphs serve it; PyTorch: its checkpoint refuses the probe's
    backward(inputs=...), and the layer runs eagerly)."""
    fw = cpu_fw
    ref = fw.build("Recomputed", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            fw.backward(fw.loss(model(fw.tensor(x))))
            got.append(fw.param_grads(model))
            fw.clear_grads(model, True)
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")


def test_a_gradient_laid_out_otherwise_than_the_output_trains_bitwise_as_eager(cpu_fw):
    """A batch norm's backward adds up in another order when its gradient comes in another memory layout: the
    graph's gradient buffer takes the layout the gradient arrives in (learned at the first replayed backward,
    which runs eagerly; the key is captured again), so every step's gradients are eager's bit for bit."""
    fw = cpu_fw
    ref = fw.build("Tokens", D)
    model = fw.twin(ref)
    fw.wrap(model.patches, num_warmup_steps=1)
    opts = [fw.sgd(m, 0.1) for m in (model, ref)]
    for step in range(6):
        x = randn(B, 6, D)
        got = []
        for m, opt in zip((model, ref), opts):
            y = m(fw.tensor(x))
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y)] + fw.param_grads(m) + fw.buffers(m))
            opt.step()
            opt.zero_grad(set_to_none=True)
        for i, (a, b) in enumerate(zip(*got)):
            assert np.array_equal(a, b), f"step {step}: tensor {i} differs by {np.abs(a - b).max():.1e}"
    stats = stats_of(model.patches)
    assert stats["backward_replays"] >= 3 and not stats["fallbacks"] and stats["disabled_reason"] is None


def test_a_gradient_that_alternates_layouts_stops_recapturing_and_stays_exact(cpu_fw):
    """A loss that reads the output as a contiguous copy on one step and transposed on the next sends gradients in
    two layouts by turns (PyTorch): the key is captured again a bounded number of times, then such backwards run
    eagerly on the captured graph; every step is eager's bit for bit. Paddle has one layout: nothing to learn."""
    from autograph_cg.runtime.core import MAX_RELAYOUTS

    fw = cpu_fw
    swap = (lambda t: t.transpose(1, 2)) if fw.name == "torch" else (lambda t: t.transpose([0, 2, 1]))
    ref = fw.build("Patches", D)
    model = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(10):
        x = randn(B, 6, D)
        got = []
        for m in (model, ref):
            y = m(fw.tensor(x))
            fw.backward(fw.loss(swap(y).contiguous() if step % 2 else y.contiguous()))
            got.append(fw.param_grads(m) + fw.buffers(m))
            fw.clear_grads(m, True)
        for i, (a, b) in enumerate(zip(*got)):
            assert np.array_equal(a, b), f"step {step}: tensor {i} differs by {np.abs(a - b).max():.1e}"
    stats = stats_of(model)
    varying = [r for r in stats["fallbacks"] if "varying memory layouts" in r]
    if fw.name == "torch":
        assert stats["recaptures"] == MAX_RELAYOUTS and varying and stats["backward_replays"] > 0
    else:
        assert stats["recaptures"] == 0 and not varying and stats["backward_replays"] == 9


def test_a_checkpointed_block_that_runs_otherwise_in_capture_keeps_training_when_a_gradient_changes_layout(torch_fw):
    """A wrapped layer that checkpoints a block without reentry, whose code takes another path while a stream
    captures (transformers builds its masks so): an eager backward of the captured autograd graph would recompute
    the block outside the capture and torch's checkpoint refuses it (saved and recomputed values differ). When a
    gradient arrives in another layout, such a layer's backward replays its graph with the gradient copied in; its
    next key is captured in the layout learned; training goes on with eager's losses."""
    fw = torch_fw
    torch = fw.torch
    from torch.utils.checkpoint import checkpoint

    from autograph_cg.runtime import is_capturing

    class Scaled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(D, D)

        def forward(self, x):
            capturing = is_capturing() or (x.is_cuda and torch.cuda.is_current_stream_capturing())
            scale = torch.full((), 2, dtype=torch.int32 if capturing else torch.int64, device=x.device)
            return self.fc(x) * scale  # the product saves the scale for its backward

    class Block(torch.nn.Module):
        """Hands its output out as a transposed view: a head's gradient comes back laid out otherwise."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = Scaled()

        def forward(self, x):
            h = checkpoint(self.inner, x, use_reentrant=False)
            return h.transpose(1, 2).contiguous().transpose(1, 2)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()
            self.head = torch.nn.Linear(D, D)

        def forward(self, x):
            return self.head(self.block(x))

    torch.manual_seed(0)
    ref = fw.place(Model())
    model = fw.twin(ref)
    fw.wrap(model.block, num_warmup_steps=1)
    for step in range(5):
        x = randn(B, 6, D)
        losses = []
        for m in (model, ref):
            loss = fw.loss(m(fw.tensor(x)))
            fw.backward(loss)
            losses.append(loss.item())
            fw.clear_grads(m, True)
        assert losses[0] == pytest.approx(losses[1], rel=1e-5), f"step {step}"
    stats = stats_of(model.block)
    assert stats["captures"] >= 2 and stats["backward_replays"] >= 3 and stats["disabled_reason"] is None
