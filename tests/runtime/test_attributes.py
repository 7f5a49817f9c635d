"""Layers whose forward changes their plain attributes (a cache refreshed when an input outgrows it): exact or
eager. A capture that changed them puts them back and runs the call eagerly; an eager call that changed them
while graphs exist drops every graph that may read them (its layer's, an outer wrapper's, a fused run's)."""

from __future__ import annotations

import weakref
from types import SimpleNamespace

import pytest

from autograph_cg.runtime import attributes, core, stats_of
from tests.runtime.harness import assert_all_close, close, randn, runner_of
from tests.runtime.test_fusion import chain_runners, stack, step
from tests.runtime.test_training import run

D, B = 8, 2
LENGTHS = [16] * 4 + [32] * 4 + [16] * 3  # the cache grows at the first 32; the graph of 16 read the old one


def _changes_dropped(stats: dict) -> list[str]:
    return [r for r in stats["recapture_reasons"] if r.startswith("an eager call changed layer state")]


@pytest.mark.parametrize("train", [True, False], ids=["training", "inference"])
def test_a_cache_refreshed_by_an_eager_call_drops_the_graphs_that_read_it(fw, train):
    """16 -> 32 -> 16: the first call of 32 is a warmup, run eagerly while the graph of 16 exists; it makes the
    tables again, normalized by 32, so the graph of 16 must go: the later calls of 16 capture anew."""
    ref = fw.build("RotaryBlock", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=2)
    opts = [fw.sgd(m, 0.1) for m in (wrapped, ref)]
    for i, n in enumerate(LENGTHS):
        x = randn(B, n, D)
        if train:
            got, want = run(fw, wrapped, x), run(fw, ref, x)
            assert_all_close([*got, *fw.param_grads(wrapped)], [*want, *fw.param_grads(ref)], fw.atol, f"call {i}")
            for opt in opts:
                opt.step()
                opt.zero_grad(set_to_none=True)
        else:
            with fw.no_grad():
                assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol), f"call {i}"
    stats = stats_of(wrapped)
    assert stats["captures"] == 3 and stats["forward_replays"] == 7  # 16, 32, 16 again (a capture replays too)
    assert any("`rotary.tables`" in r for r in _changes_dropped(stats)), stats["recapture_reasons"]


@pytest.mark.parametrize("tensors", [False, True], ids=["tuple", "tensors"])
def test_a_capture_that_refreshes_the_cache_puts_it_back_and_runs_eagerly(fw, tensors):
    """Captured at its first call, the forward refreshes its cache in the capture's probe: the attributes are put
    back, the call runs eagerly as a warmup call (its result eager's), and the next call captures. In Paddle a
    tensor attribute is a buffer, put back as well."""
    ref = fw.build("RotaryBlock", D, tensors)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    rotary = wrapped.rotary
    for i, n in enumerate([16, 16, 16, 32, 16]):
        x = randn(B, n, D)
        got, want = run(fw, wrapped, x), run(fw, ref, x)
        assert_all_close([*got, *fw.param_grads(wrapped)], [*want, *fw.param_grads(ref)], fw.atol, f"call {i}")
        assert rotary._max == ref.rotary._max
        cos = rotary.cos if tensors else rotary.tables[0]
        assert close(fw.numpy(cos), fw.numpy(ref.rotary.cos if tensors else ref.rotary.tables[0]), fw.atol)
        fw.clear_grads(wrapped, True)
        fw.clear_grads(ref, True)
        if i == 0:
            stats = stats_of(wrapped)
            assert stats["captures"] == 0 and stats["warmup_calls"] == 1
            [reason] = stats["fallbacks"]
            assert reason.startswith("forward changed layer state while capturing: ") and "`rotary._max`" in reason
    stats = stats_of(wrapped)
    # 16 captured at its second call; 32's capture refreshed too (put back, run eagerly, the graph of 16 dropped)
    assert stats["captures"] == 2 and stats["forward_replays"] == 3 and stats["warmup_calls"] == 2
    assert _changes_dropped(stats)


def test_an_outer_wrapper_drops_its_graphs_when_an_inner_layers_eager_call_refreshed(fw):
    """The outer wrapped layer's graph holds the inner one's computation, tables included. A call that fails the
    outer layer's guard runs it eagerly; the inner layer then serves itself, and its warmup for 32 refreshes the
    cache. Later the inner layer is called on its own with 64 (the outer layer is not running: the inner one
    serves itself, a warmup call of a new key) and refreshes again. Each time the outer graph must go."""
    ref = fw.build("Stack", [fw.build("RotaryBlock", D), fw.build("MLP", D)])
    twin = fw.twin(ref)
    inner = fw.wrap(twin.body[0], num_warmup_steps=1)
    outer = fw.wrap(twin, num_warmup_steps=1, guard={"note": "is None"})
    calls = [(16, None)] * 3 + [(32, "a note")] + [(16, None)] * 2 + [(64, "inner")] + [(16, None)] * 2
    for i, (n, note) in enumerate(calls):
        x_np = randn(B, n, D)
        got = []
        for model in (outer, ref):
            x = fw.tensor(x_np, True)
            y = model.body[0](x) if note == "inner" else model(x, note=note)
            fw.backward(fw.loss(y))
            got.append([fw.numpy(y), fw.grad(x), *fw.param_grads(model)])
            fw.clear_grads(model, True)
        assert_all_close(got[0], got[1], fw.atol, f"call {i}")
    inner_stats, stats = stats_of(inner), stats_of(outer)
    assert inner_stats["warmup_calls"] == 2 and inner_stats["captures"] == 0  # its own calls of 32 and 64
    assert stats["captures"] == 3 and stats["fallbacks"] == {"guard: note is not None": 1}
    # noted by the outer layer's eager run the first time, by the inner layer's own run the second
    seen_by = {r.rsplit(" of ", 1)[1] for r in _changes_dropped(stats)}
    assert seen_by == {f"{stats['name']})", f"{inner_stats['name']})"}, stats["recapture_reasons"]


def test_a_refresh_in_a_member_of_a_fused_run_drops_the_run(fw):
    blocks, refs = stack(fw, "RotaryBlock")
    fused = False
    for i, n in enumerate([16] * 6 + [32] * 4 + [16] * 4):
        x = randn(B, n, D)
        assert_all_close(step(fw, blocks, x), step(fw, refs, x), fw.atol, f"call {i}")
        if n == 16 and i < 6:
            fused |= any(r.graph_count for r in chain_runners(blocks))
    assert fused  # the graphs of 16 were a fused run's when the cache grew
    dropped = [r for run_ in chain_runners(blocks) for r in _changes_dropped(run_.stats.as_dict())]
    assert dropped, [run_.stats.as_dict() for run_ in chain_runners(blocks)]


def test_a_forward_that_changes_its_attributes_at_every_capture_runs_that_key_eagerly(fw):
    """A call counter changes at every capture: after a few tries the key runs eagerly, with the reason, and
    the counter counts each call once."""
    ref = fw.build("Tally", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for i in range(7):
        x = randn(B, D)
        got, want = run(fw, wrapped, x), run(fw, ref, x)
        assert close(got[0], want[0], fw.atol) and close(got[1], want[1], fw.atol), f"call {i}"
        assert wrapped.calls == ref.calls == i + 1
    stats = stats_of(wrapped)
    tries, later = core.MAX_STATE_CHANGES, 7 - 1 - core.MAX_STATE_CHANGES
    assert stats["captures"] == 0 and stats["warmup_calls"] == 1 + tries and stats["eager_calls"] == later
    assert stats["fallbacks"] == {
        "forward changed layer state while capturing: `calls`": tries,
        "forward changes layer state at every capture: `calls`": later,
    }


def test_a_fused_run_whose_captures_change_state_gives_way_to_its_layers(fw):
    """Counters in a stack that fuses: the run's captures change them, so after a few tries the run goes, and
    each layer's key runs eagerly after its own tries; each call counted once, every step eager's numbers."""
    blocks, refs = stack(fw, "Tally", warmup=2)
    for i in range(16):
        x = randn(B, D)
        assert_all_close(step(fw, blocks, x), step(fw, refs, x), fw.atol, f"step {i}")
        assert [b.calls for b in blocks] == [r.calls for r in refs] == [i + 1] * len(blocks)
    assert runner_of(blocks[0]).no_fuse  # the run was formed, and given up
    for block in blocks:
        stats = stats_of(block)
        assert stats["captures"] == 0 and "forward changes layer state at every capture: `calls`" in stats["fallbacks"]


def test_framework_layers_change_no_attribute_in_forward(cpu_fw):
    """Nothing of the framework's own layers counts as a change after their first call (the watch would
    otherwise drop graphs for nothing): training and inference, with and without grad."""
    fw = cpu_fw
    model = fw.build("Tower", D)
    ops = fw.ops()
    layers = ops.sublayers(model)
    x = fw.tensor(randn(B, D))
    model(x)
    for train in (True, False):
        model.train() if train else model.eval()
        snapshot = ops.snapshot(layers)
        model(x)
        with fw.no_grad():
            model(x)
        assert snapshot.changes() == []


class _Layer:
    def __init__(self, **attrs) -> None:
        self._buffers = {}
        self._modules = {}
        self.__dict__.update(attrs)


SKIP = frozenset({"_buffers", "_modules", "training"})


def _snapshot(*layers):
    return attributes.Snapshot(layers, SKIP, lambda v: isinstance(v, SimpleNamespace))


def test_a_snapshot_compares_objects_by_identity_and_host_values_by_value():
    weight, bias, same = object(), object(), _Layer()
    table, other = [object()], [object()]
    layer = _Layer(n=1000, scale=0.5, shape=(2, 3), name="a", table=table, dtype=SimpleNamespace(v=1), training=True,
                   flat=[weight, bias], refs=[weakref.ref(same, print)])
    snapshot = _snapshot(layer)
    layer.n, layer.shape, layer.name = 999 + 1, tuple([2, 3]), "".join("a")  # new objects, the same values
    layer.dtype = SimpleNamespace(v=1)  # a framework's host value (here: is_static), compared by value
    layer.training = False  # the framework's own bookkeeping
    layer.flat, layer.refs = [weight, bias], [weakref.ref(same, print)]  # built anew of the same objects (torch's RNNs)
    assert snapshot.changes() == []
    layer.table = other  # a list of another object: a graph reads the one it captured
    layer.scale = 0.25
    [a, b] = snapshot.changes()
    assert (a.name, a.old, a.new, b.name, b.old is table, b.new is other) == ("scale", 0.5, 0.25, "table", True, True)


def test_a_snapshot_puts_back_what_a_run_added_removed_or_rebound():
    buffer = object()
    inner = _Layer(keep=1)
    inner._buffers["cos"] = buffer
    outer = _Layer(cache=None, gone="x")
    snapshot = _snapshot(outer, inner)
    outer.cache = object()
    outer.added = 1
    del outer.gone
    outer._buffers["first"] = object()  # into a buffer dict that was empty
    inner._buffers["cos"] = object()
    changes = snapshot.changes()
    assert {(c.layer is inner, c.buffer, c.name) for c in changes} == {
        (False, False, "cache"),
        (False, False, "added"),
        (False, False, "gone"),
        (False, True, "first"),
        (True, True, "cos"),
    }
    assert attributes.describe(changes, {id(outer): "", id(inner): "inner"}) == "`cache`, `gone`, `added` and 2 more"
    snapshot.restore(changes)
    assert snapshot.changes() == []
    assert outer.cache is None and outer.gone == "x" and not hasattr(outer, "added") and outer._buffers == {}
    assert inner._buffers == {"cos": buffer}


def test_a_stand_in_replay_reads_the_attributes_as_captured_and_changes_none():
    layer = _Layer(scale=2.0, calls=0)
    snapshot = _snapshot(layer)
    layer.scale = 3.0
    seen = []
    with snapshot.replayed():
        seen.append(layer.scale)
        layer.calls += 1  # a replay runs no Python: what it changes here is undone
    assert seen == [2.0] and layer.scale == 3.0 and layer.calls == 0


def test_an_eager_change_counts_for_every_layer_changed():
    a, b = _Layer(), _Layer()
    before = attributes.changed_in([a, b])
    attributes.record([attributes.Change(a, False, "x", 1, 2), attributes.Change(a, False, "y", 1, 2)], "`x`, `y`")
    assert attributes.changed_in([a, b]) == (before[0] + 1, "`x`, `y`")
    assert attributes.changed_in([b])[0] == 0
