"""The plain attributes of some layers: noted at one moment, compared with what they are later, put back.

A graph reads the tensors its layers' attributes held at capture and bakes in their host values; a forward
that rebinds an attribute (a cache table grown for a longer input) changes what eager reads, not what the
graph reads. The CPU stand-in replays with the attributes as the capture left them (``Snapshot.replayed``),
as a graph's kernels do.

Compared cheaply: every value by identity first, in one pass over all the layers; where that differs,
host values (None, bool, int, float, complex, str, bytes, tuples of them, the framework's dtypes and
devices) by value. Buffers count as attributes; the framework's own bookkeeping (parameters, sublayers,
hooks, the training flag) does not.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, NamedTuple, Sequence

_HOST = frozenset({type(None), bool, int, float, complex, str, bytes})
_MISSING = object()
_NO_BUFFERS: dict = {}  # the buffers of a layer without a buffer dict: never written
_BUFFERS = "_buffers"
_chain = itertools.chain.from_iterable
_is = operator.is_


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
        return a is b or (type(a) is type(b) and self._by_value(a) and a == b)

    def _by_value(self, v: Any) -> bool:
        if type(v) in _HOST:
            return True
        if isinstance(v, tuple):
            return all(map(self._by_value, v))
        return self._is_static(v)

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
