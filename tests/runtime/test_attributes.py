"""The snapshot of layer attributes: what it compares and how, what it puts back, and the stand-in's replay with
the attributes as captured."""

from __future__ import annotations

from types import SimpleNamespace

from autograph_cg.runtime import attributes


class _Layer:
    def __init__(self, **attrs) -> None:
        self._buffers = {}
        self._modules = {}
        self.__dict__.update(attrs)


SKIP = frozenset({"_buffers", "_modules", "training"})


def _snapshot(*layers):
    return attributes.Snapshot(layers, SKIP, lambda v: isinstance(v, SimpleNamespace))


def test_a_snapshot_compares_objects_by_identity_and_host_values_by_value():
    table, other = [1.0], [1.0]
    layer = _Layer(n=1000, scale=0.5, shape=(2, 3), name="a", table=table, dtype=SimpleNamespace(v=1), training=True)
    snapshot = _snapshot(layer)
    layer.n, layer.shape, layer.name = 999 + 1, tuple([2, 3]), "".join("a")  # new objects, the same values
    layer.dtype = SimpleNamespace(v=1)  # a framework's host value (here: is_static), compared by value
    layer.training = False  # the framework's own bookkeeping
    assert snapshot.changes() == []
    layer.table = other  # equal, but another object: a graph reads the one it captured
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
