"""Training and inference through CUDAGraphedLayer give the unwrapped layer's numbers at every step."""

from __future__ import annotations

import numpy as np
import pytest

from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, close, randn, runner_of

D, B = 8, 4


def run(fw, model, x_np: np.ndarray, requires_grad: bool = True):
    x = fw.tensor(x_np, requires_grad)
    y = model(x)
    fw.backward(fw.loss(y))
    return fw.numpy(y), (fw.grad(x) if requires_grad else None)


def test_training_matches_eager_through_warmup_capture_and_replay(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=2)
    opt_ref, opt_wrapped = fw.sgd(ref, 0.1), fw.sgd(wrapped, 0.1)
    for step in range(6):
        for _ in range(2):  # gradient accumulation over two micro-batches
            x = randn(B, D)
            y1, g1 = run(fw, wrapped, x)
            y0, g0 = run(fw, ref, x)
            assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol), f"step {step}"
        assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), fw.atol, f"param grads, step {step}")
        opt_ref.step()
        opt_wrapped.step()
        set_to_none = step % 2 == 0  # both ways of clearing, alternately
        opt_ref.zero_grad(set_to_none=set_to_none)
        opt_wrapped.zero_grad(set_to_none=set_to_none)
    stats = stats_of(wrapped)
    assert stats["captures"] == 1
    assert stats["warmup_calls"] == 2
    assert stats["forward_replays"] == stats["backward_replays"] == 10
    assert stats["eager_backwards"] == 0


def test_parameter_grads_without_input_grad(fw):
    """The first layer of a model: the input needs no grad, the parameters do."""
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(4):
        x = randn(B, D)
        y1, _ = run(fw, wrapped, x, requires_grad=False)
        y0, _ = run(fw, ref, x, requires_grad=False)
        assert close(y1, y0, fw.atol)
        assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), fw.atol, f"param grads, step {step}")
    assert stats_of(wrapped)["backward_replays"] == 3


def test_inference_uses_one_forward_graph(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    ref.eval()
    wrapped.eval()
    held = []
    with fw.no_grad():
        for _ in range(4):
            x = randn(B, D)
            y = wrapped(fw.tensor(x))
            held.append((y, fw.numpy(ref(fw.tensor(x)))))
    for y, want in held:  # earlier outputs are not overwritten by later replays
        assert close(fw.numpy(y), want, fw.atol)
    stats = stats_of(wrapped)
    assert stats["captures"] == 1 and stats["forward_replays"] == 3 and stats["backward_replays"] == 0


def test_training_outputs_held_across_calls_stay_intact(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    xs = [randn(B, D) for _ in range(3)]
    outs = [wrapped(fw.tensor(x, True)) for x in xs]  # three forwards before any backward
    for x, y in zip(xs, outs):
        assert close(fw.numpy(y), fw.numpy(ref(fw.tensor(x, True))), fw.atol)
    assert stats_of(wrapped)["captures"] == 3  # one graph per call in flight


def test_nested_args_kwargs_and_several_outputs(fw):
    ref = fw.build("Multi", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(8):
        mode = "sum" if step % 4 < 2 else "prod"
        a, b, bias = randn(B, D), randn(B, D), randn(D)
        ids = np.arange(B, dtype="int64")
        results = []
        for model in (wrapped, ref):
            xs = [fw.tensor(a, True), fw.tensor(b, True)]
            cfg = {"bias": fw.tensor(bias, True), "ids": fw.ints(ids)}
            out = model(xs, cfg, scale=0.5, mode=mode)
            fw.backward(fw.loss(out["main"]) + fw.loss(out["aux"][0]))
            results.append(
                [fw.numpy(out["main"]), fw.numpy(out["aux"][0]), fw.numpy(out["aux"][1])]
                + [fw.grad(t) for t in (*xs, cfg["bias"])]
                + fw.param_grads(model)
            )
            assert out["mode"] == mode
        assert_all_close(results[0], results[1], fw.atol, f"step {step}")
        fw.clear_grads(wrapped, True)
        fw.clear_grads(ref, True)
    assert stats_of(wrapped)["captures"] == 2  # one graph per value of the non-tensor argument


def test_unused_parameter_and_input_get_no_grad(fw):
    ref = fw.build("Partial", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for _ in range(3):
        got = []
        xa, ya = randn(B, D), randn(B, D)
        for model in (wrapped, ref):
            x, y = fw.tensor(xa, True), fw.tensor(ya, True)
            fw.backward(fw.loss(model(x, y)))
            got.append([fw.grad(y)] + fw.param_grads(model))
        assert got[0][0] is None and got[0][-1] is None  # like eager: no grad at all
        assert_all_close(got[0], got[1], fw.atol, "grads")
    assert stats_of(wrapped)["backward_replays"] == 2


def test_shape_changes_get_their_own_graphs(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for batch in (4, 6, 4, 6, 4, 6, 3):
        x = randn(batch, D)
        y1, g1 = run(fw, wrapped, x)
        y0, g0 = run(fw, ref, x)
        assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol)
        assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), fw.atol, f"batch {batch}")
    assert stats_of(wrapped)["captures"] == 2
    assert stats_of(wrapped)["warmup_calls"] == 3


def test_buffers_follow_eager(fw):
    """Batch-norm statistics: the throwaway warmup before a capture leaves no trace."""
    ref = fw.build("Norm", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for _ in range(4):
        x = randn(B, D)
        y1, _ = run(fw, wrapped, x)
        y0, _ = run(fw, ref, x)
        assert close(y1, y0, fw.atol)
        assert_all_close(fw.buffers(wrapped), fw.buffers(ref), fw.atol, "buffers")
    assert stats_of(wrapped)["forward_replays"] == 3


def test_second_backward_with_retain_graph(torch_fw):
    fw = torch_fw
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    x = randn(B, D)
    for model in (wrapped, ref):
        loss = fw.loss(model(fw.tensor(x, True)))
        fw.backward(loss, retain_graph=True)
        fw.backward(loss)
    assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), fw.atol, "param grads")


def test_second_backward_after_the_graph_ran_again_is_refused(torch_fw):
    fw = torch_fw
    wrapped = fw.wrap(fw.build("MLP", D), num_warmup_steps=0)
    loss = fw.loss(wrapped(fw.tensor(randn(B, D), True)))
    fw.backward(loss, retain_graph=True)
    fw.backward(fw.loss(wrapped(fw.tensor(randn(B, D), True))))  # same graph, new values
    with pytest.raises(RuntimeError, match="reused"):
        fw.backward(loss)


def test_reallocated_parameters_are_recaptured(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    opt_ref, opt_wrapped = fw.sgd(ref, 0.5), fw.sgd(wrapped, 0.5)
    for step in range(4):
        if step == 2:
            for p in wrapped.parameters():
                fw.reallocate(p)
            opt_wrapped = fw.sgd(wrapped, 0.5)
        x = randn(B, D)
        y1, _ = run(fw, wrapped, x)
        y0, _ = run(fw, ref, x)
        assert close(y1, y0, fw.atol), f"step {step}"
        opt_ref.step()
        opt_wrapped.step()
        opt_ref.zero_grad()
        opt_wrapped.zero_grad()
    assert stats_of(wrapped)["recaptures"] == 1 and stats_of(wrapped)["captures"] == 2


def test_a_checkpoint_loaded_after_capture_is_what_replays_use(fw):
    """Loading a state dict writes into the captured parameters (or moves them); replays never use stale values."""
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    other = fw.build("MLP", D)  # different random weights: the checkpoint
    for step in range(5):
        if step == 3:
            state = other.state_dict()
            for model in (ref, wrapped):
                (model.load_state_dict if fw.name == "torch" else model.set_state_dict)(state)
        x = randn(B, D)
        y1, _ = run(fw, wrapped, x)
        y0, _ = run(fw, ref, x)
        assert close(y1, y0, fw.atol), f"step {step}"
    assert stats_of(wrapped)["forward_replays"] >= 2


def test_parameter_grads_are_stored_a_group_at_a_time(fw):
    """The backward graph stores parameter grads into the bank in groups as they complete, so they
    never all exist beside the bank; every parameter still gets its grad, equal to eager's."""
    ref = fw.container([fw.build("MLP", D) for _ in range(4)])
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    ops = runner_of(wrapped).ops
    sizes: list[int] = []
    real = ops.foreach_add_

    def record(dsts, srcs):
        sizes.append(len(dsts))
        real(dsts, srcs)

    ops.foreach_add_ = record
    try:
        for step in range(3):
            x = randn(B, D)
            run(fw, wrapped, x)
            run(fw, ref, x)
            assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), fw.atol, f"param grads, step {step}")
    finally:
        del ops.foreach_add_
    n_params = len(list(ref.parameters()))
    assert stats_of(wrapped)["backward_replays"] >= 2 and sizes
    assert max(sizes) < n_params / 2 and len(sizes) >= 4  # in groups, not all at once


def test_layers_built_outside_wrapped_layers_leave_the_parameter_lists_alone(fw):
    """A model that builds a layer in its forward (a loss layer registers its buffer on every call) must not
    make every wrapper walk its layer again on every call; a registration inside a wrapped layer still does."""
    wrapped = fw.wrap(fw.build("MLP", D), num_warmup_steps=0)
    run(fw, wrapped, randn(B, D))
    runner = runner_of(wrapped)
    read = runner._params
    for _ in range(3):
        fw.build("MLP", D)  # registers parameters on layers no wrapper holds
        run(fw, wrapped, randn(B, D))
    assert runner._params is read
    wrapped.extra = fw.build("MLP", D)  # a sublayer registered on the wrapped layer
    run(fw, wrapped, randn(B, D))
    assert runner._params is not read and len(runner._params) == 2 * len(read)
    assert stats_of(wrapped)["recaptures"] == 1


def test_replaced_parameters_and_sublayers_are_recaptured(torch_fw):
    """A checkpoint loaded by assignment or a replaced sublayer puts new parameter objects in the
    layer: the replays use them and their grads, as eager does."""
    import copy

    import torch

    fw = torch_fw
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    for change in ("assign", "sublayer"):
        run(fw, wrapped, randn(B, D))
        if change == "assign":
            state = {k: torch.randn_like(v) for k, v in ref.state_dict().items()}
            ref.load_state_dict(state)
            wrapped.load_state_dict(state, assign=True)
        else:
            wrapped.fc2 = torch.nn.Linear(4 * D, D).to(fw.device)
            ref.fc2 = copy.deepcopy(wrapped.fc2)
        for model in (wrapped, ref):
            model.zero_grad(set_to_none=True)
        x = randn(B, D)
        y1, g1 = run(fw, wrapped, x)
        y0, g0 = run(fw, ref, x)
        assert close(y1, y0, fw.atol) and close(g1, g0, fw.atol), change
        assert_all_close(fw.param_grads(wrapped), fw.param_grads(ref), fw.atol, change)
    assert stats_of(wrapped)["recaptures"] == 2 and stats_of(wrapped)["captures"] == 3
    assert not stats_of(wrapped)["fallbacks"]
