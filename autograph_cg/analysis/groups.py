"""The files of a run split into groups that do not import each other, each judged apart (in processes of their own).

A top-level package reaches another only through an import: every qualified name the facts hold (bases, callees,
what a site builds) comes from the file's imports. Two groups of top-level packages with no import between them
therefore ask the resolver nothing of each other, and each one judged alone gives the answers the run over all of
them gives, at a fraction of the cost when they are judged side by side. What reads the package as a whole without
an import (the classes a table of names names, by their own name; the outside modules some file imports only if
installed) answered one package with the other's classes and imports: a leak the split closes.
"""

from __future__ import annotations

from autograph_cg.analysis.facts import ModuleFacts


def _top(name: str) -> str:
    return name.partition(".")[0]


def separate(modules: list[ModuleFacts]) -> list[list[ModuleFacts]]:
    """`modules` as the groups of top-level packages that import one another (directly or through others), each in
    the order given; the groups by their first module's place."""
    parent: dict[str, str] = {}

    def find(top: str) -> str:
        while parent[top] != top:
            parent[top] = parent[parent[top]]
            top = parent[top]
        return top

    for module in modules:
        parent.setdefault(_top(module.module), _top(module.module))
    for module in modules:
        here = find(_top(module.module))
        for top in module.reaches:
            if top in parent and (there := find(top)) != here:
                parent[there] = here
    groups: dict[str, list[ModuleFacts]] = {}
    for module in modules:
        groups.setdefault(find(_top(module.module)), []).append(module)
    return list(groups.values())


def largest_first(groups: list[list[ModuleFacts]]) -> list[list[ModuleFacts]]:
    """The order processes take groups in, each the next left when it is done with one: the largest first (by lines:
    what a group costs to judge is not known before, and the smaller ones left to the end even the processes out)."""
    return sorted(groups, key=lambda group: -sum(m.lines for m in group))
