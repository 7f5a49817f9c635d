"""Shared memory pools of the captured graphs and the rule that says when a graph may replay."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .ops import Ops


class PoolLedger:
    """Bookkeeping of one shared memory pool (one per device and in-flight depth).

    Graphs in one pool reuse each other's freed temporaries. Replaying graph G is safe only if no
    call still waiting for its backward holds memory captured *after* G (that memory may sit in G's
    temporaries). Capture sequence numbers make that check exact; ``epoch`` counts replays so a
    second backward through the same call can tell whether its saved activations are intact.
    """

    def __init__(self, new_pool: Callable[[], Any]) -> None:
        self._new_pool = new_pool
        self.handle: Any = None
        self._graphs: weakref.WeakSet = weakref.WeakSet()
        self._pin: Any = None
        self.inflight: dict[int, int] = {}
        self.epoch = 0
        self._seq = 0

    def pool_for_capture(self) -> Any:
        """The pool for the next capture. A fresh one once the last graph of the old one is gone
        (the allocator retires a pool with its last graph) or after a failed capture (``poison``);
        otherwise one live graph is pinned so a garbage collection before the capture begins can't
        retire the pool under it. Only graphs of the current pool count: graphs left in an old
        pool keep that pool alive, not this one (sharing a retired pool trips the allocator)."""
        alive = list(self._graphs)
        if self.handle is None or not alive:
            self.handle, self._graphs, alive = self._new_pool(), weakref.WeakSet(), []
        self._pin = alive[0] if alive else None
        return self.handle

    def adopt(self, graph: Any) -> None:
        self._graphs.add(graph)
        self._pin = None

    def poison(self) -> None:
        """A failed capture may leave the pool marked as recording: capture the next graph elsewhere."""
        self.handle = self._pin = None

    def next_seq(self) -> int:
        self._seq += 1
        self.epoch += 1
        return self._seq

    def may_replay(self, seq: int) -> bool:
        return not self.inflight or max(self.inflight.values()) < seq


_ledgers: dict[tuple, PoolLedger] = {}


def ledger_for(ops: Ops, backend: str, device: Any, depth: int) -> PoolLedger:
    key = (ops.name, backend, str(device), depth)
    ledger = _ledgers.get(key)
    if ledger is None:
        ledger = _ledgers[key] = PoolLedger(lambda: ops.new_pool(backend, device))
    return ledger
