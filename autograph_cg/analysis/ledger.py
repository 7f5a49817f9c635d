"""What each memoized result of the verdict pass read and added, so that a later round or run keeps exactly the
results whose inputs still stand and reports what the kept and new results add up to.

A result is a class's verdict or a function's result. While it is computed, the ledger notes the files whose facts
it reads (its own, and those of every result it uses, memoized or computed inside it), whether it read something a
deeper index of a file replaces (then it is only provisional), and what it adds to the report: the functions it
reaches (their findings are reported), the places of unresolved calls, extra findings, internal errors. A run's
report is what the results reachable from its class verdicts added: a result that nothing uses any more (the call
to it was edited away) adds nothing, whether or not it is still in the memo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, TypeVar

_T = TypeVar("_T")

#: The bucket of what is added outside any result: reported with every run's results, never carried to another.
TOP: Hashable = None


@dataclass
class _Frame:
    key: Hashable
    files: set[str] = field(default_factory=set)
    uses: set[Hashable] = field(default_factory=set)
    provisional: bool = False


class Ledger:
    def __init__(self) -> None:
        self.files: dict[Hashable, frozenset[str]] = {}  # every file a result read, through what it used too
        self.uses: dict[Hashable, frozenset[Hashable]] = {}  # the results it used
        self.provisional: set[Hashable] = set()  # results that read what a deeper index replaces, or a placeholder
        self.added: dict[Hashable, list[tuple]] = {}  # what each result added to the report, in order
        self._stack: list[_Frame] = []

    def track(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """Compute result `key`, noting what it reads, uses and adds; what it read is read by its user too."""
        frame = _Frame(key)
        self._stack.append(frame)
        try:
            found = compute()
        finally:
            self._stack.pop()
        self.files[key] = frozenset(frame.files)
        self.uses[key] = frozenset(frame.uses)
        if frame.provisional:
            self.provisional.add(key)
        else:
            self.provisional.discard(key)
        self.used(key)
        return found

    def used(self, key: Hashable) -> None:
        """The result being computed uses result `key` (memoized, or just computed)."""
        if not self._stack:
            return
        frame = self._stack[-1]
        frame.uses.add(key)
        frame.files |= self.files.get(key, frozenset())
        if key in self.provisional:
            frame.provisional = True

    def read(self, path: str) -> None:
        """The result being computed reads the facts of file `path`."""
        if self._stack:
            self._stack[-1].files.add(path)

    def provisional_read(self) -> None:
        """The result being computed read what a deeper index replaces (or a cycle's placeholder)."""
        if self._stack:
            self._stack[-1].provisional = True

    def add(self, item: tuple) -> None:
        """The result being computed adds `item` to the report."""
        self.added.setdefault(self._stack[-1].key if self._stack else TOP, []).append(item)

    def live(self, roots: Iterable[Hashable]) -> Iterable[tuple]:
        """What the results reachable from `roots` (and nothing) added, each result once."""
        seen: set[Hashable] = set()
        todo = [TOP, *roots]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            yield from self.added.get(key, ())
            todo.extend(self.uses.get(key, ()))

    def current(self) -> Hashable | None:
        """The result being computed, if any."""
        return self._stack[-1].key if self._stack else None

    def standing(self, keys: Iterable[Hashable], changed: frozenset[str], dropped: set[Hashable]) -> set[Hashable]:
        """The results among `keys` that hold in a later round or run where the files `changed` changed and the
        results `dropped` (they read resolver answers that changed) do not: not provisional, reading no changed
        file, using no dropped result, directly or through others."""
        keys = set(keys)
        bad = {k for k in keys if k not in self.files or k in self.provisional or (changed and self.files[k] & changed)}
        bad |= dropped & keys
        users: dict[Hashable, list[Hashable]] = {}
        for key in keys:
            for used in self.uses.get(key, ()):
                users.setdefault(used, []).append(key)
        todo = list(bad | dropped)
        while todo:
            for user in users.get(todo.pop(), ()):
                if user not in bad:
                    bad.add(user)
                    todo.append(user)
        return keys - bad

    def kept(self, keys: set[Hashable]) -> "Ledger":
        """A ledger of the results `keys` only."""
        out = Ledger()
        for key in keys:
            out.files[key] = self.files[key]
            out.uses[key] = self.uses[key]
            if key in self.added:
                out.added[key] = self.added[key]
        return out
