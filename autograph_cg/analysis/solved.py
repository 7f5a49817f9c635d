"""The resolver's answers and the verdict pass's results of the last run, kept between runs.

An edit that leaves every file's summaries as they were (a comment, a line in a body that calls nothing new, a
finding added or fixed) cannot change what the resolver answers: those answers are loaded, and of the verdicts
and function results only those that read an edited file are judged again (`Ledger`). An edit that changes a
summary (a new call, a new assignment, a new class) solves the package afresh.

The state is kept by `runner.SolvedStore`, one per shape of run (the files analyzed and the settings).
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograph_cg.analysis.facts import ModuleFacts

if TYPE_CHECKING:
    from autograph_cg.analysis.eligibility import Package

Stamp = tuple[int, int]  # (mtime_ns, size): a changed file changes one of them, as black and ruff assume


def summary_digest(facts: ModuleFacts) -> str:
    """A digest of everything of a file that the resolver (and the package's name resolution) reads: its imports,
    its summaries, its classes' names, bases, class attributes and method names, its functions' names. Bodies'
    findings, calls as the verdict pass reads them, and positions are left out: they are read per result."""
    classes = tuple((c.name, c.qualname, c.bases, tuple(c.methods), c.attrs, c.has_init) for c in facts.classes.values())
    read = (facts.module, facts.framework, facts.imports, facts.star_imports, facts.optional_imports, classes, tuple(facts.functions), facts.scopes)
    return hashlib.blake2b(pickle.dumps(read, protocol=pickle.HIGHEST_PROTOCOL), digest_size=16).hexdigest()


@dataclass
class Solved:
    """A package's answers after a run, and what they were computed from."""

    files: dict[str, tuple[Stamp, str]]  # path -> (stamp, summary digest) of every file the run read
    deep: frozenset[str]  # files indexed deeply by the end of the run (indexed so again when they change)
    package: "Package"  # its resolver state and memoized results (`Package.__getstate__`)

    def changed(self, stamps: dict[str, Stamp]) -> frozenset[str] | None:
        """The files edited since, when the same files are analyzed; None when a file came or went."""
        if stamps.keys() != self.files.keys():
            return None
        return frozenset(path for path, stamp in stamps.items() if self.files[path][0] != stamp)

    def holds(self, modules: list[ModuleFacts], changed: frozenset[str]) -> bool:
        """Whether the resolver's answers hold for `modules`: no edited file's summaries changed."""
        return all(m.digest and m.digest == self.files[m.path][1] for m in modules if m.path in changed)
