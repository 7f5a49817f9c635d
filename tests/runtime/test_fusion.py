"""Runs of wrapped layers that always follow each other are captured as one graph, with eager's numbers,
and end safely whenever the calls stop following the run."""

from __future__ import annotations

import pytest

from autograph_cg.runtime import chains, stats_of
from tests.runtime.harness import assert_all_close, randn, runner_of

D, B = 8, 4
N = 4  # blocks in the stack


def stack(fw, kind: str = "MLP", warmup: int = 1, **wrap):
    refs = [fw.build(kind, D) for _ in range(N)]
    blocks = [fw.wrap(fw.twin(r), num_warmup_steps=warmup, **wrap) for r in refs]
    return blocks, refs


def step(fw, blocks, x_np, between=None):
    """Forward through the blocks (``between(i, h)`` may act on the hidden state after block i),
    mean-square loss, backward; returns the output, the input grad and every parameter grad."""
    x = fw.tensor(x_np, True)
    h = x
    for i, block in enumerate(blocks):
        h = block(h)
        if between is not None:
            h = between(i, h)
    fw.backward(fw.loss(h))
    out = [fw.numpy(h), fw.grad(x)]
    for block in blocks:
        out += fw.param_grads(block)
        fw.clear_grads(block, True)
    return out


def forward_both(fw, blocks, refs, x_np):
    """The wrapped stack's output and the eager stack's, for one input."""
    outs = []
    for models in (blocks, refs):
        h = fw.tensor(x_np)
        for model in models:
            h = model(h)
        outs.append(h)
    return outs


def chain_runners(blocks):
    return [c.runner for c in runner_of(blocks[0]).chains.values()]


def test_a_stack_fuses_and_trains_like_eager(fw):
    blocks, refs = stack(fw)
    opts = [fw.sgd(m, 0.1) for m in blocks + refs]
    for n in range(8):
        x = randn(B, D)
        assert_all_close(step(fw, blocks, x), step(fw, refs, x), fw.atol, f"step {n}")
        for opt in opts:
            opt.step()
    (run,) = chain_runners(blocks)
    stats = run.stats.as_dict()
    assert stats["captures"] == 1 and stats["forward_replays"] == stats["backward_replays"] >= 3
    assert stats["eager_backwards"] == 0 and not stats["fallbacks"]
    assert all(stats_of(b)["fused_calls"] == stats["forward_replays"] for b in blocks)
    assert all(not runner_of(b).graph_count for b in blocks)  # their own graphs gave way to the run's


def test_a_run_stable_through_the_warmup_is_captured_as_the_run_at_once(fw):
    """With warmup calls enough to see who follows whom, the first capture is the run's: no member holds a graph
    of its own at any time (their memory never adds to the run's), and every step has eager's numbers."""
    blocks, refs = stack(fw, warmup=3)
    opts = [fw.sgd(m, 0.1) for m in blocks + refs]
    for n in range(7):
        x = randn(B, D)
        assert_all_close(step(fw, blocks, x), step(fw, refs, x), fw.atol, f"step {n}")
        assert all(stats_of(b)["captures"] == 0 for b in blocks), f"step {n}"
        for opt in opts:
            opt.step()
    (run,) = chain_runners(blocks)
    stats = run.stats.as_dict()
    assert stats["captures"] == 1 and stats["forward_replays"] == stats["backward_replays"] == 4  # steps 3 to 6
    assert all(stats_of(b)["fused_calls"] == 4 and stats_of(b)["state"] == "graphed" for b in blocks)


def test_shared_arguments_and_held_intermediate_outputs(fw):
    """Every block takes the run's first argument too (a mask, rotary tables); an intermediate
    output is kept and takes part in the loss every other step, as hidden states returned by a
    model do (its gradient buffer in the run's backward graph then holds a gradient, then zeros)."""
    refs = [fw.build("Partial", D) for _ in range(N)]
    blocks = [fw.wrap(fw.twin(r), num_warmup_steps=1) for r in refs]

    def run(models, x_np, shared_np, aux):
        x, shared = fw.tensor(x_np, True), fw.tensor(shared_np, True)
        h, kept = x, []
        for model in models:
            h = model(h, shared)
            kept.append(h)
        fw.backward(fw.loss(h) + fw.loss(kept[1]) if aux else fw.loss(h))
        out = [fw.numpy(h), fw.numpy(kept[1]), fw.grad(x)]
        for model in models:
            out += fw.param_grads(model)
            fw.clear_grads(model, True)
        return out

    for n in range(7):
        x, shared = randn(B, D), randn(B, D)
        aux = n % 2 == 1
        assert_all_close(run(blocks, x, shared, aux), run(refs, x, shared, aux), fw.atol, f"step {n}")
    (chain,) = runner_of(blocks[0]).chains.values()
    assert [m.mapping for m in chain.members[1:]] == [((chains.OUT, 0), (chains.ARG, 1))] * (N - 1)
    assert chain.runner.stats.forward_replays >= 2


def test_inference_fuses(fw):
    blocks, refs = stack(fw)
    for m in blocks + refs:
        m.eval()
    held = []
    with fw.no_grad():
        for _ in range(7):
            held.append(forward_both(fw, blocks, refs, randn(B, D)))
    for got, want in held:  # earlier outputs are intact
        assert_all_close([fw.numpy(got)], [fw.numpy(want)], fw.atol, "inference")
    (run,) = chain_runners(blocks)
    assert run.stats.forward_replays >= 3 and run.stats.backward_replays == 0


def test_inference_mode_tensors(torch_fw):
    """Tensors made under torch.inference_mode keep no version counter: warmup and runs do without."""
    fw = torch_fw
    blocks, refs = stack(fw)
    for m in blocks + refs:
        m.eval()
    with fw.torch.inference_mode():
        for n in range(7):
            outs = [fw.numpy(h) for h in forward_both(fw, blocks, refs, randn(B, D))]
            assert_all_close(outs[:1], outs[1:], fw.atol, f"call {n}")
    assert chain_runners(blocks) and stats_of(blocks[N - 1])["fused_calls"] >= 3


def nudge(fw, model) -> None:
    """Change the parameters in place, as an optimizer step or a loaded checkpoint would."""
    with fw.no_grad():
        for p in model.parameters():
            p.scale_(1.5) if hasattr(p, "scale_") else p.mul_(1.5)


CHANGES = ["modified in place", "other tensor", "skipped block", "other order"]


@pytest.mark.parametrize("change", CHANGES)
def test_a_run_that_stops_following_ends_with_eager_numbers(fw, change):
    check_run_that_stops_following(fw, change)


def test_parameters_changed_after_the_run_computed_them_end_it(torch_fw):
    """(On Paddle's CPU stand-in, Paddle's autograd refuses the run's backward afterwards: the
    replay saved those parameters, now changed in place. Docs: runtime.md.)"""
    check_run_that_stops_following(torch_fw, "parameters changed")


def check_run_that_stops_following(fw, change: str, kind: str = "MLP", warmup: int = 1) -> list:
    """Eager's numbers (and buffers) at every step; returns the wrapped blocks."""
    blocks, refs = stack(fw, kind, warmup)

    def between(i, h, models):
        if i != 1:
            return h
        if change == "modified in place":
            h.scale_(2.0) if hasattr(h, "scale_") else h.mul_(2.0)
        elif change == "parameters changed":  # the next block's, after the run computed it
            nudge(fw, models[2])
        else:
            h = h * 1.0  # a new tensor: not the output the run handed out
        return h

    for n in range(12):
        x = randn(B, D)
        late = n >= 6  # after the run fused
        if change in ("skipped block", "other order") and late:
            order = [0, 2, 3] if change == "skipped block" else [0, 2, 1, 3]
            got = step(fw, [blocks[i] for i in order], x)
            want = step(fw, [refs[i] for i in order], x)
        elif late:
            got = step(fw, blocks, x, lambda i, h: between(i, h, blocks))
            want = step(fw, refs, x, lambda i, h: between(i, h, refs))
        else:
            got, want = step(fw, blocks, x), step(fw, refs, x)
        assert_all_close(got, want, fw.atol, f"step {n}")
        assert_all_close(
            [b for m in blocks for b in fw.buffers(m)], [b for m in refs for b in fw.buffers(m)], fw.atol, f"buffers {n}"
        )
    head = runner_of(blocks[0])
    assert head.stats.fused_calls >= 2  # it fused before the change
    ended = head.stats.runs_ended
    if change in ("modified in place", "parameters changed"):  # every run ends: the head stops after MAX_BREAKS
        assert ended == chains.MAX_BREAKS and head.no_fuse and not head.chains
    else:  # the run ended once; the new order, as stable as the old one, fuses again
        assert ended == 1 and chain_runners(blocks)
    return blocks


def test_a_hook_on_an_intermediate_output_ends_the_run(torch_fw):
    """A hook sees the whole gradient of the tensor it is on, as eagerly: the run is not used."""
    fw = torch_fw
    blocks, refs = stack(fw)
    for n in range(8):
        x = randn(B, D)
        seen = []
        for models in (blocks, refs):
            grads = []

            def hook(i, h, grads=grads):
                if i == 1 and n >= 5:
                    h.register_hook(lambda g: grads.append(fw.numpy(g).copy()))
                return h

            out = step(fw, models, x, hook)
            seen.append(out + grads)
        assert_all_close(seen[0], seen[1], fw.atol, f"step {n}")
    assert stats_of(blocks[0])["runs_ended"] >= 1


@pytest.mark.parametrize("warmup", [1, 3])  # the run formed after its members captured, or from the warmup
@pytest.mark.parametrize("change", [c for c in CHANGES if c != "modified in place"])  # eager refuses that one
def test_layers_that_change_buffers_fuse_and_an_early_end_puts_them_back(fw, change, warmup):
    """Batch-norm statistics change at the run's replay; where the run ends before a layer's call,
    that layer's buffers go back to what they were, so that its own call changes them once, as eagerly.
    (Paddle keeps the statistics as parameters that take no gradient.) Members that never captured alone
    learned it from their warmup calls."""
    blocks = check_run_that_stops_following(fw, change, "Norm", warmup)
    assert all(e.mutates_buffers for b in blocks for e in runner_of(b).entries.values())


def test_fuse_false_keeps_each_layer_on_its_own(fw):
    blocks, refs = stack(fw, fuse=False)
    for n in range(7):
        x = randn(B, D)
        assert_all_close(step(fw, blocks, x), step(fw, refs, x), fw.atol, f"step {n}")
    assert not chain_runners(blocks) and all(stats_of(b)["forward_replays"] == 6 for b in blocks)


def test_what_follows_what_keeps_no_layer_alive(fw):
    """The last replayed call is remembered for the next one, weakly: a layer deleted after its
    calls goes with its graphs (and the memory pool they hold on a GPU)."""
    import gc
    import weakref

    blocks, _ = stack(fw)
    for n in range(7):
        step(fw, blocks, randn(B, D))
    alone = fw.wrap(fw.build("MLP", D), num_warmup_steps=0)
    for n in range(3):  # captured, then replayed: the thread's last replayed call
        step(fw, [alone], randn(B, D))
    assert chains.TRACK.pending is None and chains.TRACK.last.runner() is runner_of(alone)
    runners = [weakref.ref(runner_of(b)) for b in [*blocks, alone]]
    del blocks, alone
    gc.collect()
    assert all(r() is None for r in runners)
