"""Several micro-batches in flight: 1F1B, non-LIFO backward orders, per-block stacks, the in-flight bound."""

from __future__ import annotations

import pytest

from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, randn, runner_of

D, B = 8, 4


def one_f_one_b(num_micro: int, depth: int) -> list[tuple[str, int]]:
    """The 1F1B order of one pipeline stage: ``depth`` forwards ahead, then alternate, then drain."""
    order = [("F", i) for i in range(depth)]
    for i in range(num_micro - depth):
        order += [("B", i), ("F", i + depth)]
    return order + [("B", i) for i in range(num_micro - depth, num_micro)]


def run_schedule(fw, stages: list, order: list, xs: list) -> list:
    """Run ``order`` through the stages; return per micro-batch output and input grad, then param grads."""
    pending, results = {}, {}
    for op, i in order:
        if op == "F":
            x = fw.tensor(xs[i], True)
            y = x
            for stage in stages:
                y = stage(y)
            pending[i] = (x, y)
        else:
            x, y = pending.pop(i)
            fw.backward(fw.loss(y))
            results[i] = [fw.numpy(y), fw.grad(x)]
    out = [v for i in sorted(results) for v in results[i]]
    for stage in stages:
        out += fw.param_grads(stage)
    return out


@pytest.mark.parametrize("fuse", [False, True])
def test_one_f_one_b_matches_eager(fw, fuse):
    refs = [fw.build("MLP", D) for _ in range(2)]
    wrapped = [fw.wrap(fw.twin(r), num_warmup_steps=1, fuse=fuse) for r in refs]
    order = one_f_one_b(num_micro=4, depth=2)
    for step in range(5 if fuse else 3):
        xs = [randn(B, D) for _ in range(4)]
        got = run_schedule(fw, wrapped, order, xs)
        want = run_schedule(fw, refs, order, xs)
        assert_all_close(got, want, fw.atol, f"step {step}")
        for model in (*wrapped, *refs):
            fw.clear_grads(model, True)
    if fuse:  # the two stages run back to back: one graph per micro-batch in flight
        (run,) = [c.runner for c in runner_of(wrapped[0]).chains.values()]
        assert run.stats.captures == 2 and run.stats.forward_replays >= 8
        assert stats_of(wrapped[1])["fused_calls"] == run.stats.forward_replays
        return
    for w in wrapped:
        stats = stats_of(w)
        assert stats["captures"] == 2  # one graph set per micro-batch in flight, reused afterwards
        assert stats["forward_replays"] == 11 and stats["backward_replays"] == 11
        assert stats["eager_backwards"] == 0


def test_interleaved_chunks_match_eager(fw):
    """Two model chunks per stage, forwards of later micro-batches between backwards of earlier ones."""
    refs = [fw.build("MLP", D) for _ in range(2)]
    wrapped = [fw.wrap(fw.twin(r), num_warmup_steps=1) for r in refs]
    order = [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("F", 3), ("B", 1), ("B", 2), ("B", 3)]
    for step in range(3):
        xs = [randn(B, D) for _ in range(4)]
        got, want = [], []
        for models, sink in ((wrapped, got), (refs, want)):
            for chunk in (models[:1], models[1:]):  # each chunk sees every micro-batch
                sink += run_schedule(fw, chunk, order, xs)
        assert_all_close(got, want, fw.atol, f"step {step}")
        for model in (*wrapped, *refs):
            fw.clear_grads(model, True)
    assert all(stats_of(w)["captures"] == 3 for w in wrapped)


def test_backward_out_of_capture_order_stays_correct(fw):
    """Two layers share a memory pool; backward in the order the forwards ran (not LIFO) would let
    the first layer's backward graph reuse memory the second still needs, so it runs eagerly."""
    refs = [fw.build("MLP", D) for _ in range(2)]
    wrapped = [fw.wrap(fw.twin(r), num_warmup_steps=1) for r in refs]
    for step in range(4):
        xs = [randn(B, D), randn(B, D)]
        results = []
        for models in (wrapped, refs):
            inputs = [fw.tensor(x, True) for x in xs]
            outs = [m(x) for m, x in zip(models, inputs)]
            for y in outs:  # first forward's backward first
                fw.backward(fw.loss(y))
            results.append([fw.numpy(y) for y in outs] + [fw.grad(x) for x in inputs]
                           + fw.param_grads(models[0]) + fw.param_grads(models[1]))
        assert_all_close(results[0], results[1], fw.atol, f"step {step}")
    assert stats_of(wrapped[0])["eager_backwards"] == 3  # every step after capture: replay unsafe
    assert stats_of(wrapped[1])["backward_replays"] == 3


def test_per_block_stack_matches_eager(fw):
    refs = [fw.build("MLP", D) for _ in range(4)]
    wrapped = fw.container([fw.wrap(fw.twin(r), num_warmup_steps=2) for r in refs])
    ref = fw.container(refs)
    for step in range(5):
        x = randn(B, D)
        got, want = [], []
        for model, sink in ((wrapped, got), (ref, want)):
            xt = fw.tensor(x, True)
            y = model(xt)
            fw.backward(fw.loss(y))
            sink += [fw.numpy(y), fw.grad(xt)] + fw.param_grads(model)
            fw.clear_grads(model, step % 2 == 0)
        assert_all_close(got, want, fw.atol, f"step {step}")


def test_in_flight_calls_past_the_bound_run_eagerly(fw):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0, max_graphs=2)
    xs = [randn(B, D) for _ in range(4)]
    order = [("F", i) for i in range(4)] + [("B", i) for i in range(4)]
    got = run_schedule(fw, [wrapped], order, xs)
    want = run_schedule(fw, [ref], order, xs)
    assert_all_close(got, want, fw.atol, "four in flight")
    stats = stats_of(wrapped)
    assert stats["captures"] == 2 and stats["eager_calls"] == 2
    assert any("graph cache full" in reason for reason in stats["fallbacks"])
