"""The plain attributes of the layers inside a wrapped layer: noted before a run, compared after it.

A graph reads the tensors its layers' attributes held at capture and bakes in their host values. A
forward that rebinds an attribute (a cache table grown for a longer input, ``self._seq_len_cached``)
leaves the graphs captured before reading a freed or stale table. So a capture notes the attributes of
every layer it runs and puts back what it changed, and an eager run while graphs exist compares them
after and counts what changed (``record``): every wrapper whose layers hold a changed one drops its
graphs when it next reads its parameter lists, which the same count makes it do (structure.py), so a
replay checks nothing more. Docs: docs/runtime.md, "Layer attributes a forward changes".

Compared cheaply: every value by identity first, in one pass over all the layers; where that differs,
host values (None, bool, int, float, complex, str, bytes, the framework's dtypes and devices) by value,
lists and tuples item by item, weak references by their referent. Buffers count as attributes (a buffer rebound while capturing must be put back
too); the framework's own bookkeeping (parameters, sublayers, hooks, the training flag) does not.
"""

from __future__ import annotations

import itertools
import operator
import weakref
from typing import Any, Callable, NamedTuple, Sequence

from . import structure

_HOST = frozenset({type(None), bool, int, float, complex, str, bytes})
_MISSING = object()
_NO_BUFFERS: dict = {}  # the buffers of a layer without a buffer dict: never written
_BUFFERS = "_buffers"
_chain = itertools.chain.from_iterable
_is = operator.is_
SHOWN = 3  # attributes a description names before "and N more"


class Change(NamedTuple):
    """One attribute a run added (``old`` missing), removed (``new`` missing) or changed."""

    layer: Any
    buffer: bool  # in the layer's buffers rather than its ``__dict__``
    name: str
    old: Any
    new: Any

    def reversed(self) -> "Change":
        return self._replace(old=self.new, new=self.old)


class Snapshot:
    """The attributes and buffers of some layers as they are now: what a run changed since, and how to
    put it back. ``skip``: the names of the framework's own bookkeeping in a layer's ``__dict__``;
    ``is_static``: the framework's host values that compare by value (dtypes, devices)."""

    __slots__ = ("_layers", "_tables", "_copies", "_sizes", "_skip", "_is_static")

    def __init__(self, layers: Sequence[Any], skip: frozenset, is_static: Callable[[Any], bool]) -> None:
        self._layers = list(layers)
        dicts = list(map(vars, self._layers))
        self._tables = dicts + [d.get(_BUFFERS, _NO_BUFFERS) for d in dicts]  # table i: layer i % n, buffers from n on
        self._copies = list(map(dict.copy, self._tables))
        self._sizes = list(map(len, self._copies))
        self._skip, self._is_static = skip, is_static

    def changes(self) -> list[Change]:
        """What changed since the snapshot: nothing, found in one pass by identity, when every table kept its size
        and every value its object. (Keys are not compared there: an attribute renamed in the last place of its
        table, keeping its object, goes unseen; nothing a graph reads changed.)"""
        tables, copies = self._tables, self._copies
        values, then = _chain(map(dict.values, tables)), _chain(map(dict.values, copies))
        if list(map(len, tables)) == self._sizes and all(map(_is, values, then)):
            return []
        found: list[Change] = []
        n = len(self._layers)
        for i, (table, old) in enumerate(zip(tables, copies)):
            buffer = i >= n
            for name in (*old, *(k for k in table if k not in old)):
                if not buffer and name in self._skip:
                    continue
                before, now = old.get(name, _MISSING), table.get(name, _MISSING)
                if not self._same(before, now):
                    found.append(Change(self._layers[i % n], buffer, name, before, now))
        return found

    def _same(self, a: Any, b: Any) -> bool:
        """One object, or what a graph reads of both is the same: lists and tuples item by item (torch's RNNs
        build their list of flat weights anew while capturing, of the same tensors), weak references by their
        referent, host values by value."""
        if a is b:
            return True
        if type(a) is not type(b):
            return False
        if isinstance(a, (list, tuple)):
            return len(a) == len(b) and all(map(self._same, a, b))
        if isinstance(a, weakref.ref):
            target = a()
            return target is not None and target is b()
        return (type(a) in _HOST or self._is_static(a)) and a == b

    def restore(self, changes: Sequence[Change]) -> None:
        """Put each changed attribute back as it was in the snapshot (its ``old`` value)."""
        for change in changes:
            table = _tables_of(change.layer)[change.buffer]
            if change.old is _MISSING:
                table.pop(change.name, None)
            else:
                table[change.name] = change.old

    def replayed(self) -> "_AsTaken":
        """For the duration of a stand-in graph's replay, the layers as they were when the snapshot was taken
        (what a graph's kernels read), their changes during the replay undone after."""
        return _AsTaken(self)


class _AsTaken:
    __slots__ = ("_snapshot", "_since")

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def __enter__(self) -> None:
        self._since = self._snapshot.changes()
        self._snapshot.restore(self._since)

    def __exit__(self, *exc: Any) -> None:
        self._snapshot.restore(self._snapshot.changes())
        self._snapshot.restore([c.reversed() for c in self._since])


def _tables_of(layer: Any) -> tuple[dict, dict]:
    """The layer's ``__dict__`` and its buffers (the very dict, empty or not: a run may add the first one)."""
    d = vars(layer)
    return d, d.get(_BUFFERS, _NO_BUFFERS)


def describe(changes: Sequence[Change], names: dict[int, str]) -> str:
    """The changed attributes as ``path.name`` (``names``: a layer's path in the wrapped layer by id)."""
    paths = list(dict.fromkeys(_path(names.get(id(c.layer), "?"), c.name) for c in changes))
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(f"`{p}`" for p in paths[:SHOWN]) + more


def _path(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# Layers whose attributes an eager run changed: id -> (weak reference, times changed, serial of the last
# change, its description). A wrapper sums the counts over its layers when it reads its lists.
_changed: dict[int, tuple[weakref.ref, int, int, str]] = {}
_serial = itertools.count(1)


def record(changes: Sequence[Change], description: str) -> None:
    """An eager run changed these layers' attributes: every wrapper holding one of them drops its graphs
    at its next call (the structure epoch moves, so each reads its lists again and sees the count)."""
    serial = next(_serial)
    for layer in {id(c.layer): c.layer for c in changes}.values():
        key = id(layer)
        entry = _changed.get(key)
        count = entry[1] if entry is not None and entry[0]() is layer else 0
        ref = weakref.ref(layer, lambda dead, key=key: _forget(key, dead))
        _changed[key] = (ref, count + 1, serial, description)
    structure.invalidate()


def _forget(key: int, dead: weakref.ref) -> None:
    entry = _changed.get(key)
    if entry is not None and entry[0] is dead:
        del _changed[key]


def changed_in(layers: Sequence[Any]) -> tuple[int, str]:
    """How many times eager runs changed the attributes of these layers, and the latest such change."""
    total, latest, text = 0, 0, ""
    for layer in layers:
        entry = _changed.get(id(layer))
        if entry is not None and entry[0]() is layer:
            total += entry[1]
            if entry[2] > latest:
                latest, text = entry[2], entry[3]
    return total, text
