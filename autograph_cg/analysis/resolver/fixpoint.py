"""The fixed point the resolver's values are solved to: nodes computed on demand, each noting what it reads.

A node (a key) is computed by `_compute` the first time it is asked for; whatever it reads (other nodes, or facts
named by a key of their own: a summary, a module's global writes, a function's call sites) records it as a
reader, so that a value that grows marks its readers dirty and they are computed again until nothing changes.
Values only grow (they are joined with what they were), so the fixed point is reached. What is asked from outside
(no node being computed) is recorded for the result that `asker` names, so that dropping a value (`forget`) tells
which results asked for it: that is how answers are kept across runs and only what read an edit is redone.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable

from autograph_cg.analysis.resolver.values import EMPTY, Value, bounded, unknown

MAX_DEPTH = 300  # nodes computed inside one another; deeper chains are unknown (and the stack stays small)
_MAX_ROUNDS = 64  # computations of one node before its value is given up as unsettled
_UNSETTLED = unknown("a value that does not settle")


class FixedPoint:
    """Keys are numbered when first met (`_number`) and everything below works on the numbers: a key is a nested
    tuple (a context holds the calls it runs for), hashed and compared at every dictionary lookup, and a read of a
    node looked it up four times (its readers, its value, the dirty set, and the reader itself)."""

    def __init__(self) -> None:
        self._numbers: dict[Any, int] = {}  # node or fact key -> its number
        self._by_number: list[Any] = []  # number -> key
        self._values: dict[int, Value] = {}
        self._dependents: dict[int, set[int]] = {}  # what a node (or a fact's key) is read by
        self._dirty: set[int] = set()
        self._rounds: dict[int, int] = {}  # how often each node was computed
        self._stack: list[int] = []
        self.asker: Callable[[], Hashable | None] | None = None  # the result asking from outside, if any
        self._askers: dict[int, set[Hashable]] = {}  # node (or a fact's key) -> the results that asked for it
        self.forgotten: set[Hashable] = set()  # results that asked for a value `forget` dropped

    def _compute(self, key: Any) -> Value:
        raise NotImplementedError

    def _grows(self, key: Any) -> bool:
        """Whether a node's value is joined with what it was and kept small (else it is answered anew each time, as
        computed: a part of the value of the nodes that read it, which join and bound it)."""
        return True

    def _prepare(self) -> None:
        """What must be in place before the first node is asked for."""

    def _number(self, key: Any) -> int:
        number = self._numbers.setdefault(key, len(self._by_number))
        if number == len(self._by_number):  # new
            self._by_number.append(key)
        return number

    def _known(self, key: Any) -> Value | None:
        """A node's value as it stands, None when it is not solved (or was dropped)."""
        number = self._numbers.get(key)
        return self._values.get(number) if number is not None else None

    def _read_keys(self) -> list[Any]:
        """The keys something read."""
        return [self._by_number[number] for number in self._dependents]

    def forget(self, reads: list[Any]) -> None:
        """Drop what read any of `reads` (node or fact keys), and everything computed from it: solved again when next
        asked. Only that part starts over (recomputing in place could keep an atom that a cycle of nodes feeds
        itself). The results that asked for a dropped value are noted in `forgotten`."""
        numbers = [n for n in map(self._numbers.get, reads) if n is not None]
        for number in numbers:
            self.forgotten.update(self._askers.pop(number, ()))
        todo = [reader for number in numbers for reader in self._dependents.pop(number, ())]
        while todo:
            number = todo.pop()
            if self._values.pop(number, None) is not None:
                self.forgotten.update(self._askers.pop(number, ()))
                self._rounds.pop(number, None)
                self._dirty.discard(number)
                todo.extend(self._dependents.pop(number, ()))

    def _ask(self, key: Any) -> Value:
        self._prepare()
        self._node(key)
        self._drain()
        return self._values[self._numbers[key]]

    def _node(self, key: Any) -> Value:
        """A node's value so far; whoever is computing now depends on it and is recomputed when it grows. The reader is
        noted after the node is brought up to date: it reads the value as it is then, so only a later change concerns it
        (noted before, every node computed for the first time inside another made that one compute again, for
        nothing: 37 % of transformers' computations)."""
        number = self._numbers.get(key)
        if number is None:
            number = self._number(key)
        stack = self._stack
        known = self._values.get(number)
        if known is not None:
            if number in self._dirty and len(stack) < MAX_DEPTH and number not in stack:
                self._dirty.discard(number)  # it read a value that grew since: bring it up to date before it is read
                self._recompute(number)
                known = self._values[number]
            if stack:  # `_reads`, written out: the most frequent path of the solve
                readers = self._dependents.get(number)
                if readers is None:
                    self._dependents[number] = {stack[-1]}
                else:
                    readers.add(stack[-1])
            else:
                self._reads(number)
            return known
        self._values[number] = EMPTY  # a cycle back to this node reads the empty set until it is computed
        if len(stack) >= MAX_DEPTH:
            self._values[number] = unknown("a chain of values too deep to follow")
        else:
            try:
                self._recompute(number)
            except BaseException:  # not computed (Python's stack ran out, say): no placeholder may pass for its value
                self._values.pop(number, None)
                raise
        self._reads(number)
        return self._values[number]

    def _read(self, key: Any) -> None:
        """The node being computed reads `key` (a node, or a fact's key): it is recomputed when that grows. Asked
        from outside (no node is being computed), the result that `asker` names reads it."""
        self._reads(self._number(key))

    def _reads(self, number: int) -> None:
        if self._stack:
            readers = self._dependents.get(number)
            if readers is None:
                self._dependents[number] = {self._stack[-1]}
            else:
                readers.add(self._stack[-1])
        elif self.asker is not None and (result := self.asker()) is not None:
            self._askers.setdefault(number, set()).add(result)

    def _recompute(self, number: int) -> None:
        rounds = self._rounds[number] = self._rounds.get(number, 0) + 1
        old = self._values.get(number)
        if rounds > _MAX_ROUNDS:  # a safety net: a value that keeps changing is given up on, and stays so
            value = _UNSETTLED
        else:
            key = self._by_number[number]
            self._stack.append(number)
            try:
                value = self._compute(key)
            finally:
                self._stack.pop()
            if self._grows(key):
                value = bounded(value)
                if old and not value >= old:
                    # Values only grow, so the fixed point is reached: an input cut to "too many candidates" can make
                    # a value read smaller than it did, and letting it shrink swung the two until the round limit.
                    value = bounded(old | value)
        if value != old:
            self._values[number] = value
            self._dirty.update(self._dependents.get(number, ()))

    def _drain(self) -> None:
        """Recompute what read a value before it grew, until nothing changes (values only grow: it ends)."""
        while self._dirty:
            self._recompute(self._dirty.pop())
