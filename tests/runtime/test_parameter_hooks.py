"""Hooks on parameters see what they see eagerly: post-accumulate-grad hooks run after every replayed
backward with the complete gradient; a gradient hook (``register_hook``), which a replay can't call
on the gradient before it is stored, keeps the layer eager. PyTorch only: Paddle shows no hooks."""

from __future__ import annotations

from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, randn

D, B = 8, 4


def train_seen(fw, model, xs: list, hook) -> tuple[list, list]:
    """Param grads after every step, and what each parameter's hook saw, parameter by parameter."""
    seen: list = [[] for _ in model.parameters()]
    for p, sink in zip(model.parameters(), seen):
        hook(p, sink)
    grads = []
    for x in xs:
        fw.backward(fw.loss(model(fw.tensor(x, True))))
        grads += fw.param_grads(model)
        fw.clear_grads(model, True)
    return grads, [g for sink in seen for g in sink]


def compare(fw, hook, steps: int) -> tuple[tuple, tuple, dict]:
    """(grads, seen) of the wrapped layer and of the plain one, and the wrapped layer's stats."""
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    xs = [randn(B, D) for _ in range(steps)]
    return train_seen(fw, wrapped, xs, hook), train_seen(fw, ref, xs, hook), stats_of(wrapped)


def test_post_accumulate_grad_hooks_run_after_each_replay(torch_fw):
    fw = torch_fw

    def hook(p, seen):
        p.register_post_accumulate_grad_hook(lambda t: seen.append(fw.numpy(t.grad).copy()))

    got, want, stats = compare(fw, hook, 4)
    assert len(got[1]) == len(want[1]) == len(got[0])  # one per parameter and step
    assert_all_close(got[0] + got[1], want[0] + want[1], fw.atol, "grads and what the hooks saw")
    assert stats["backward_replays"] == 3


def test_gradient_hooks_keep_the_layer_eager(torch_fw):
    fw = torch_fw
    got, want, stats = compare(fw, lambda p, seen: p.register_hook(lambda g: g * 0.5), 3)
    assert_all_close(got[0], want[0], fw.atol, "grads through a halving hook")
    assert stats["state"] == "eager" and "register_hook" in stats["disabled_reason"]
    assert stats["forward_replays"] == 0
