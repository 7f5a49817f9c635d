"""The plan: which instantiation sites get wrapped in `CUDAGraphedLayer` (the largest eligible layers, never nested)."""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.facts import SiteFacts
from autograph_cg.analysis.verdicts import Status, Verdict
from autograph_cg.findings import Span

if TYPE_CHECKING:
    from autograph_cg.analysis.eligibility import Package


@dataclass(frozen=True)
class WrapSite:
    """One constructor call to wrap: `span` covers exactly the call expression, e.g. `MLP(cfg)`."""

    path: str
    span: Span
    wrapped_class: str  # qualified name of the class constructed
    owner: str  # qualified name of the class whose __init__ holds the call; "" outside classes
    target: str  # what receives the layer, as written: "self.mlp", "self.blocks[*]", "model"
    container: str = ""  # "" or the container it sits in: "LayerList", "Sequential", "list", ...
    existing: bool = False  # already `CUDAGraphedLayer(...)` in the source: nothing to do


@dataclass(frozen=True)
class TreeNode:
    """One layer in the instantiation tree, for `plan` output and reports."""

    qualname: str
    target: str  # attribute path from the parent, "" for a root
    wrapped: bool  # this node is captured as one graph (at `site`)
    in_graph: bool  # inside a graph wrapped higher up
    site: WrapSite | None = None
    children: tuple["TreeNode", ...] = field(default=())


@dataclass(frozen=True)
class Plan:
    sites: tuple[WrapSite, ...]
    verdicts: dict[str, Verdict]
    roots: tuple[TreeNode, ...]
    notes: tuple[str, ...] = ()  # e.g. eligible roots the user can wrap where they build them


def make_plan(package: Package, wrap_unknown: bool = False) -> Plan:
    """Wrap the largest eligible layers: at each site whose class is eligible and whose owner is never inside a graph."""
    verdicts = package.compute_all()

    def wrappable(qual: str | None) -> bool:
        if qual is None or qual not in verdicts:
            return False
        status = verdicts[qual].status
        return status is Status.ELIGIBLE or (wrap_unknown and status is Status.UNKNOWN)

    owned: dict[str, list[tuple[str, SiteFacts, str | None]]] = {}
    loose: list[tuple[str, SiteFacts, str | None]] = []
    constructed_inside: set[str] = set()
    for module in package.modules.values():
        for cls in module.classes.values():
            for site in cls.sites:
                resolved = package.resolve(site.cls) if site.cls else None
                owned.setdefault(cls.qualname, []).append((module.path, site, resolved))
                if resolved is not None:
                    constructed_inside.add(resolved)
        for site in module.sites:
            loose.append((module.path, site, package.resolve(site.cls) if site.cls else None))

    # A `Sequential` whose items are all capturable is wrapped whole, and its items are then inside its graph.
    whole: set[int] = set()  # id() of such Sequential sites, and of containers already wrapped in the source
    around: dict[int, int] = {}  # id() of an item site -> id() of the container site holding it
    for entries in owned.values():
        for _, site, _ in entries:
            if site.cls and fw.layer_kind(site.cls) == "container":
                items = [(s, c) for _, s, c in entries if s.container == site.cls and s.attr == site.attr and _inside(s.span, site.span)]
                for item, _ in items:
                    around[id(item)] = id(site)
                capturable = all(wrappable(c) or (c is None and fw.layer_kind(s.cls) == "known") for s, c in items)
                if site.existing or (items and capturable and site.cls.endswith(".Sequential")):
                    whole.add(id(site))

    def covered(site: SiteFacts) -> bool:
        return around.get(id(site)) in whole

    def wraps_here(site: SiteFacts, child: str | None) -> bool:
        """Whether this site becomes a graph when its owner is not inside one."""
        if site.skipped or covered(site):
            return False
        return site.existing or id(site) in whole or wrappable(child)

    states: dict[str, set[bool]] = {}

    def visit(qual: str, in_graph: bool) -> None:
        seen = states.setdefault(qual, set())
        if in_graph in seen:
            return
        seen.add(in_graph)
        for _, site, child in owned.get(qual, ()):
            if child is not None and child in verdicts:
                visit(child, in_graph or wraps_here(site, child) or covered(site))

    for _, site, child in loose:
        if child is not None and child in verdicts:
            visit(child, wraps_here(site, child))
    for qual in verdicts:
        if qual not in constructed_inside and qual not in states:
            visit(qual, False)

    def wrapped_at(owner: str, site: SiteFacts, child: str | None) -> bool:
        if site.existing:
            return not site.skipped
        if not wraps_here(site, child) or (child not in verdicts and id(site) not in whole):
            return False
        return not owner or states.get(owner) == {False}

    sites: list[WrapSite] = []
    by_site: dict[int, WrapSite] = {}
    for owner, entries in [*owned.items(), ("", loose)]:
        for path, site, child in entries:
            if wrapped_at(owner, site, child):
                wrap = WrapSite(path, site.span, child or site.cls, owner, site.target or "", _short(site.container), site.existing)
                sites.append(wrap)
                by_site[id(site)] = wrap
    built_loose = {child for _, _, child in loose}
    notes = [
        f"{qual} is eligible as a whole: wrap it where you build it, `CUDAGraphedLayer({qual.rsplit('.', 1)[-1]}(...))`"
        for qual in verdicts
        if wrappable(qual) and qual not in constructed_inside and qual not in built_loose
    ]
    notes += [
        f"{qual} is inside a graph in one place and not in another: its sublayers are left unwrapped"
        for qual, seen in states.items()
        if len(seen) == 2 and owned.get(qual)
    ]

    def tree(qual: str, target: str, in_graph: bool, site: WrapSite | None, depth: int, path: tuple[str, ...]) -> TreeNode:
        wrapped = site is not None
        children: list[TreeNode] = []
        if depth < 24 and qual not in path:
            for _, child_site, child in owned.get(qual, ()):
                if child is not None and child in verdicts:
                    children.append(
                        tree(child, child_site.target, in_graph or wrapped, by_site.get(id(child_site)), depth + 1, (*path, qual))
                    )
        return TreeNode(qual, target, wrapped, in_graph, site, tuple(children))

    roots = [tree(q, "", False, None, 0, ()) for q in sorted(verdicts) if q not in constructed_inside]
    sites.sort(key=lambda s: (s.path, s.span.line, s.span.col))
    return Plan(tuple(sites), verdicts, tuple(roots), tuple(sorted(notes)))


def _inside(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col)


def _short(container: str) -> str:
    return container.rsplit(".", 1)[-1] if container else ""
