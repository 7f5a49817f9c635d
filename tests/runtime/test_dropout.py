"""Random ops in a replayed graph draw fresh numbers every replay, as many as eager mode draws."""

from __future__ import annotations

import numpy as np

from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, randn

D, B = 8, 4


def test_dropout_masks_are_fresh_and_match_backward(fw):
    wrapped = fw.wrap(fw.build("DropOnly", 0.5), num_warmup_steps=1)
    masks = []
    for _ in range(6):
        x = fw.tensor(np.ones((64, 64), dtype="float32"), True)
        y = wrapped(x)
        fw.backward(y.sum())
        out, grad = fw.numpy(y), fw.grad(x)
        assert set(np.unique(out)) <= {0.0, 2.0}
        assert np.array_equal(grad, out)  # backward replays the forward's mask
        assert abs((out == 0).mean() - 0.5) < 0.05  # the eager keep rate
        masks.append(out)
    assert stats_of(wrapped)["forward_replays"] == 5
    for i in range(len(masks)):
        for j in range(i):
            assert not np.array_equal(masks[i], masks[j]), f"replays {j} and {i} drew the same mask"


def test_dropout_on_the_stand_in_draws_exactly_what_eager_draws(cpu_fw):
    """The stand-in restores the RNG around capture, so the random stream is eager's, number for number."""
    fw = cpu_fw
    model = fw.build("MLP", D, 0.3)
    ref = fw.twin(model)
    wrapped = fw.wrap(model, num_warmup_steps=1)
    xs = [randn(B, D) for _ in range(4)]
    runs = []
    for m in (wrapped, ref):
        fw.seed(11)
        out = []
        for x_np in xs:
            x = fw.tensor(x_np, True)
            fw.backward(fw.loss(m(x)))
            out += [fw.grad(x)] + fw.param_grads(m)
            fw.clear_grads(m, True)
        runs.append(out + [fw.rand(4)])
    assert_all_close(runs[0], runs[1], fw.atol, "dropout steps")
    assert stats_of(wrapped)["forward_replays"] == 3
