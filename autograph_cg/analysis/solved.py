"""The resolver's answers and the verdict pass's results of the last run, kept between runs.

An edit that leaves every file's summaries as they were (a comment, a line in a body that calls nothing new, a
finding added or fixed) cannot change what the resolver answers: those answers are loaded, and of the verdicts
and function results only those that read an edited file are judged again (`Ledger`). An edit that changes
summaries but not what a file imports or defines drops the answers that read them (`FixedPoint.forget`). An edit of a
file's frame, or a file added or removed, solves the package afresh.

The state is kept by `runner.SolvedStore`, one per shape of run (the files analyzed and the settings).
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograph_cg.analysis.facts import Digests, ModuleFacts

if TYPE_CHECKING:
    from autograph_cg.analysis.eligibility import Package

Stamp = tuple[int, int]  # (mtime_ns, size): a changed file changes one of them, as black and ruff assume


def digests(facts: ModuleFacts) -> Digests:
    """Digests of what the resolver (and the package's name resolution) reads of a file: its frame (imports, the
    names it defines, its classes' bases, class attributes and method names) and each summary. Bodies' findings,
    calls as the verdict pass reads them, and positions are left out: they are read per result."""
    classes = tuple((c.name, c.qualname, c.bases, tuple(c.methods), c.attrs, c.has_init) for c in facts.classes.values())
    frame = (facts.module, facts.framework, facts.imports, facts.star_imports, facts.optional_imports, classes, tuple(facts.functions), tuple(facts.scopes))
    return _digest(frame), {name: _digest(summary) for name, summary in facts.scopes.items()}


def _digest(value: object) -> str:
    return hashlib.blake2b(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), digest_size=12).hexdigest()


@dataclass
class Solved:
    """A package's answers after a run, and what they were computed from."""

    files: dict[str, tuple[Stamp, Digests | None]]  # path -> (stamp, digests) of every file the run read
    deep: frozenset[str]  # files indexed deeply by the end of the run (indexed so again when they change)
    package: "Package"  # its resolver state and memoized results (`Package.__getstate__`)
    planned: bool = False  # its resolver holds the answers a plan asks for (a run of `rewrite` or `plan` made it)

    def changed(self, stamps: dict[str, Stamp]) -> frozenset[str] | None:
        """The files edited since, when the same files are analyzed; None when a file came or went."""
        if stamps.keys() != self.files.keys():
            return None
        return frozenset(path for path, stamp in stamps.items() if self.files[path][0] != stamp)

    def summaries_changed(self, modules: list[ModuleFacts], changed: frozenset[str]) -> set[tuple[str, str]] | None:
        """The summaries of the edited files that changed, as (module, scope); None when the frame of one changed
        (what it imports or defines, a class's bases): then the package is solved afresh."""
        found: set[tuple[str, str]] = set()
        for module in modules:
            if module.path not in changed:
                continue
            old, new = self.files[module.path][1], module.digests
            if old is None or new is None or old[0] != new[0]:
                return None
            found.update((module.module, name) for name in old[1].keys() | new[1].keys() if old[1].get(name) != new[1].get(name))
        return found
