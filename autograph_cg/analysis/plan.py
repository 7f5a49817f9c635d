"""The plan: which construction sites get wrapped in `CUDAGraphedLayer`.

The largest layers that can be captured and whose graph pays: a site is wrapped when everything it may build
is eligible (or conditional), its owner is never inside a graph, and a graph of it launches at least
`min_kernels` kernels per call (a wrapper costs a fixed host price per call, which one or two kernels never
earn back; `docs/performance.md` has the measurement behind the default). A `Sequential` whose items can all
be captured is wrapped whole. Sites too small to pay are listed with their estimate, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Collection, NamedTuple

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.guards import consistent, is_setting, literal, normal
from autograph_cg.analysis.facts import ModuleFacts, SiteFacts
from autograph_cg.analysis.resolver.summaries import MODULE_SCOPE
from autograph_cg.analysis.resolver.values import HOST_CALLED
from autograph_cg.analysis.verdicts import Guard, Status, Verdict
from autograph_cg.config import DEFAULT_MIN_KERNELS
from autograph_cg.findings import Span

if TYPE_CHECKING:
    from collections import Counter

    from autograph_cg.analysis.eligibility import Package



@dataclass(frozen=True)
class WrapSite:
    """One constructor call to wrap: `span` covers exactly the call expression, e.g. `MLP(cfg)`."""

    path: str
    span: Span
    wrapped_class: str  # what the call builds: a class, classes joined by " | ", or the container class
    owner: str  # qualified name of the class whose __init__ holds the call; "" outside classes
    target: str  # what receives the layer, as written: "self.mlp", "self.blocks[*]", "model"
    container: str = ""  # "" or the container it sits in: "LayerList", "Sequential", "list", ...
    existing: bool = False  # already `CUDAGraphedLayer(...)` in the source, with this guard: nothing to do
    kernels: int = 0  # about how many kernels one call launches: what the graph saves
    guard: Guard = ()  # the wrapper's `guard=`: tests of the forward's arguments under which a graph may run
    update: bool = False  # wrapped in the source with another guard: rewrite writes this one


@dataclass(frozen=True)
class SkippedSite:
    """A site that could be captured but is left alone, and why (too small to pay for its wrapper)."""

    path: str
    span: Span
    wrapped_class: str
    owner: str
    target: str
    kernels: int
    reason: str


@dataclass(frozen=True)
class TreeNode:
    """One layer in the instantiation tree, for `plan` output and reports."""

    qualname: str
    target: str  # attribute path from the parent, "" for a root
    wrapped: bool  # this node is captured as one graph (at `site`)
    in_graph: bool  # inside a graph wrapped higher up
    site: WrapSite | None = None
    children: tuple["TreeNode", ...] = field(default=())
    shown_above: bool = False  # its sublayers are listed where the class first appears (the tree stays linear)
    verdict: Verdict | None = None  # a package class's (None for other layers): the tree is read without the plan


class Note(NamedTuple):
    """Advice about one class (`subject`): an eligible root to wrap where it is built, say."""

    subject: str
    text: str


@dataclass(frozen=True)
class Plan:
    sites: tuple[WrapSite, ...]
    verdicts: dict[str, Verdict]
    roots: tuple[TreeNode, ...]
    notes: tuple[Note, ...] = ()  # e.g. eligible roots the user can wrap where they build them
    skipped: tuple[SkippedSite, ...] = ()
    min_kernels: int = DEFAULT_MIN_KERNELS
    unresolved: tuple[tuple[str, int], ...] = ()  # the names unresolved most often in the package: what to declare

    def only(self, paths: Collection[str]) -> "Plan":
        """The plan of the whole package as it concerns the files `paths`: their sites, their classes (with the
        trees of those that are roots) and the notes about them. What to declare stays the package's."""
        verdicts = {q: v for q, v in self.verdicts.items() if v.path in paths}
        return replace(
            self,
            sites=tuple(s for s in self.sites if s.path in paths),
            verdicts=verdicts,
            roots=tuple(r for r in self.roots if r.qualname in verdicts),
            notes=tuple(n for n in self.notes if n.subject in verdicts),
            skipped=tuple(s for s in self.skipped if s.path in paths),
        )


@dataclass(frozen=True)
class _Built:
    """What a site may build: package layer classes, other layers (framework, other libraries), or unknowns."""

    classes: tuple[str, ...] = ()
    others: tuple[str, ...] = ()
    opaque: bool = False  # something that is no known layer instance may come out


@dataclass
class _Entry:
    path: str
    site: SiteFacts
    owner: str  # the class whose __init__ builds it, or "" (a module-level function or statement)
    built: _Built
    items: _Built | None = None  # for a container: what it holds
    usual: _Built | None = None  # what the default build makes there, when the resolver can tell


def make_plan(package: Package, wrap_unknown: bool = False, min_kernels: int = DEFAULT_MIN_KERNELS) -> Plan:
    verdicts = package.compute_all()
    statuses = (Status.ELIGIBLE, Status.CONDITIONAL, Status.UNKNOWN) if wrap_unknown else (Status.ELIGIBLE, Status.CONDITIONAL)

    def guard(built: _Built) -> Guard | None:
        """The tests every class a site may build needs, together; None when no call could pass them all or a class
        built there has no such parameter (the runtime binds the guard to the wrapped layer's forward)."""
        tests = {t for c in built.classes if c in verdicts for t in verdicts[c].guard}
        names = {name for name, _ in tests if not is_setting(name)}  # a layer's settings are read from the layer
        if not consistent(tests) or any(not package.takes_keywords(c, names) for c in built.classes if names):
            return None
        return normal(tests)

    def capturable(built: _Built, guarded: bool = True) -> bool:
        """`guarded`: a class needing a guard may be built there (its own wrapper checks it). A class that defines
        `__call__` is called through it, never through the forward the wrapper routes: it is captured only inside a
        parent's graph."""
        found = guard(built)
        return (
            not built.opaque
            and all(c in verdicts and verdicts[c].status in statuses for c in built.classes)
            and not any(package.find_method(c, "__call__") is not None for c in built.classes)
            and all(fw.layer_kind(o) in ("known", "container") for o in built.others)
            and found is not None
            and (guarded or not found)
        )

    entries: list[_Entry] = []
    for module in package.modules.values():
        for cls in module.classes.values():
            for site in cls.sites:
                entries.append(_entry(package, module, site, cls.qualname))
        for site in module.sites:  # a layer a function builds belongs to the classes that call the function
            for owner in _function_owners(package, module.module, site.scope) or [""]:
                entries.append(_entry(package, module, site, owner))
    entries = _handed_over(entries)
    by_holder = {(e.path, e.site.holder): e for e in entries if e.items is not None}
    held: dict[tuple[str, str], list[_Entry]] = {}  # a container's item sites
    for e in entries:
        if e.items is None and e.site.holder:
            held.setdefault((e.path, e.site.holder), []).append(e)

    def whole(entry: _Entry) -> bool:
        """A callable container that is wrapped in the source, or whose items can all be captured."""
        if entry.items is None:
            return False
        if entry.site.existing:
            return True
        items = entry.items  # a Sequential calls its items with one input: a guard on another argument is not checked
        return entry.site.cls.endswith(".Sequential") and bool(items.classes or items.others) and capturable(items, guarded=False)

    def covered(entry: _Entry) -> bool:
        holder = by_holder.get((entry.path, entry.site.holder)) if entry.items is None and entry.site.holder else None
        return holder is not None and whole(holder)

    def kernels(entry: _Entry) -> int:
        """A site builds one of its candidates (of the default build where known), maybe the smallest; a container
        runs each item it is built with."""
        items = held.get((entry.path, entry.site.holder), []) if entry.items is not None else []
        if items:
            return sum(kernels(item) for item in {id(i): i for i in items}.values())
        built = entry.items if entry.items is not None else entry.usual or entry.built
        counts = [verdicts[c].kernels for c in built.classes if c in verdicts] + [fw.kernels(o) for o in built.others]
        return min(counts, default=0)

    def candidate(entry: _Entry) -> bool:
        if entry.site.skipped or covered(entry):
            return False
        if entry.site.existing or whole(entry):
            return True
        return entry.items is None and bool(entry.built.classes) and capturable(entry.built)

    def wraps_here(entry: _Entry) -> bool:
        return candidate(entry) and (entry.site.existing or kernels(entry) >= min_kernels)

    def falls_back(entry: _Entry) -> bool:
        """A conditional class may run eagerly at run time: its children keep graphs of their own."""
        return any(verdicts[c].status is Status.CONDITIONAL for c in entry.built.classes if c in verdicts)

    owned: dict[str, list[_Entry]] = {}
    for entry in entries:
        owned.setdefault(entry.owner, []).append(entry)
    constructed_inside = {c for e in entries if e.owner for c in e.built.classes}
    states: dict[str, set[bool]] = {}

    def visit(qual: str, in_graph: bool) -> None:
        seen = states.setdefault(qual, set())
        if in_graph in seen:
            return
        seen.add(in_graph)
        for entry in owned.get(qual, ()):
            inside = in_graph or covered(entry) or (wraps_here(entry) and not falls_back(entry))
            for child in entry.built.classes:
                if child in verdicts:
                    visit(child, inside)

    for entry in owned.get("", ()):
        for child in entry.built.classes:
            if child in verdicts:
                visit(child, wraps_here(entry) and not falls_back(entry))
    for qual in verdicts:
        if qual not in constructed_inside and qual not in states:
            visit(qual, False)

    def outside(entry: _Entry) -> bool:
        return not entry.owner or states.get(entry.owner) == {False}

    sites: list[WrapSite] = []
    skipped: list[SkippedSite] = []
    by_site: dict[int, WrapSite] = {}
    by_span: dict[tuple[str, Span], WrapSite] = {}  # a function's site is one wrapper, whichever classes call it
    for entry in entries:
        site = entry.site
        name = _describe(entry)
        if site.existing and not site.skipped or wraps_here(entry) and outside(entry):
            key = (entry.path, site.span)
            if key not in by_span:
                planned = guard(entry.built) if entry.items is None and capturable(entry.built) else None
                if planned is None or site.existing and site.guard is None:
                    planned = site.guard or ()  # a wrapper written by hand, or one the plan would not add: as it is
                current = site.existing and (site.guard is None or site.guard == planned)
                by_span[key] = WrapSite(
                    entry.path, site.span, name, entry.owner, site.target or "", _short(site.container), current, kernels(entry),
                    planned, site.existing and not current,
                )
                sites.append(by_span[key])
            by_site[id(site)] = by_span[key]
        elif candidate(entry) and outside(entry):
            estimate = kernels(entry)
            reason = f"about {estimate} kernel{'s' if estimate != 1 else ''} per call, fewer than min-kernels = {min_kernels}"
            skipped.append(SkippedSite(entry.path, site.span, name, entry.owner, site.target or "", estimate, reason))

    built_loose = {c for e in owned.get("", ()) for c in e.built.classes}
    wrappable = {q for q, v in verdicts.items() if v.status in statuses}
    notes = [
        Note(qual, f"{qual} is {verdicts[qual].status.value} as a whole: wrap it where you build it, `CUDAGraphedLayer({qual.rsplit('.', 1)[-1]}(...){_guard_argument(verdicts[qual].guard)})`")
        for qual in verdicts
        if qual in wrappable and qual not in constructed_inside and qual not in built_loose
    ]
    notes += [
        Note(qual, f"{qual} is inside a graph in one place and not in another: its sublayers are left unwrapped")
        for qual, seen in states.items()
        if len(seen) == 2 and owned.get(qual)
    ]

    expanded: set[tuple[str, bool]] = set()  # (class, inside a graph): whose sublayers are listed already

    def tree(qual: str, target: str, in_graph: bool, site: WrapSite | None, depth: int, path: tuple[str, ...]) -> TreeNode:
        wrapped = site is not None
        held = in_graph or (wrapped and verdicts[qual].status is not Status.CONDITIONAL)
        if (qual, held) in expanded and owned.get(qual):
            return TreeNode(qual, target, wrapped, in_graph, site, shown_above=True, verdict=verdicts[qual])
        children: list[TreeNode] = []
        if depth < 24 and qual not in path:
            expanded.add((qual, held))
            for entry in owned.get(qual, ()):
                inside = held or covered(entry)
                for child in entry.built.classes:
                    if child in verdicts:
                        children.append(tree(child, entry.site.target, inside, by_site.get(id(entry.site)), depth + 1, (*path, qual)))
        return TreeNode(qual, target, wrapped, in_graph, site, tuple(children), verdict=verdicts[qual])

    roots = [tree(q, "", False, None, 0, ()) for q in sorted(verdicts) if q not in constructed_inside]
    sites.sort(key=lambda s: (s.path, s.span.line, s.span.col))
    skipped.sort(key=lambda s: (s.path, s.span.line, s.span.col))
    unresolved = tuple(package.unresolved_names.most_common(10))
    return Plan(tuple(sites), verdicts, tuple(roots), tuple(sorted(notes, key=lambda n: n.text)), tuple(skipped), min_kernels, unresolved)


def joined(plans: list[Plan], verdicts: dict[str, Verdict], unresolved: Counter[str]) -> Plan:
    """The plans of groups of files judged apart (no group imports another: `groups.py`), as `make_plan` gives the plan
    of all of them: every list in its order, `verdicts` and the names left `unresolved` counted over all groups."""
    return Plan(
        tuple(sorted((s for p in plans for s in p.sites), key=lambda s: (s.path, s.span.line, s.span.col))),
        verdicts,
        tuple(sorted((r for p in plans for r in p.roots), key=lambda r: r.qualname)),
        tuple(sorted((n for p in plans for n in p.notes), key=lambda n: n.text)),
        tuple(sorted((s for p in plans for s in p.skipped), key=lambda s: (s.path, s.span.line, s.span.col))),
        plans[0].min_kernels,
        tuple(unresolved.most_common(10)),
    )


def _handed_over(entries: list[_Entry]) -> list[_Entry]:
    """A layer built into a local list and handed to another constructor belongs to the class that constructor builds
    (each of them, when it may build several): its graph holds it, or lets it keep its own."""
    calls = {(e.path, f"{e.site.span.line}:{e.site.span.col}"): e for e in entries if not e.site.receiver}
    out: list[_Entry] = []
    for entry in entries:
        receiver = calls.get((entry.path, entry.site.receiver)) if entry.site.receiver else None
        if receiver is None or not receiver.built.classes:
            out.append(entry)
        else:
            out.extend(replace(entry, owner=cls) for cls in receiver.built.classes)
    return out


def _function_owners(package: Package, module: str, scope: str, depth: int = 0) -> list[str]:
    """The classes whose `__init__` (or a method) calls the function `scope`, through other functions too."""
    if not scope or scope == MODULE_SCOPE or depth > 4:
        return []
    owners: set[str] = set()
    for caller_module, caller in package.solver.callers(module, scope):
        owner = f"{caller_module}.{caller.split('.', 1)[0]}"
        if owner in package.classes:
            owners.add(owner)
        elif caller != MODULE_SCOPE:
            owners.update(_function_owners(package, caller_module, caller, depth + 1))
    return sorted(owners)


def _entry(package: Package, module: ModuleFacts, site: SiteFacts, owner: str) -> _Entry:
    if site.callee is None:
        return _Entry(module.path, site, owner, _direct(package, module, site.cls))
    value = package.solver.value(site.callee, module.module, site.scope or MODULE_SCOPE)
    if fw.layer_kind(site.cls) == "container":
        items = package.solver.items(frozenset(a for a in value if a[0] == "L"))
        if site.cls.endswith(".Sequential"):
            items = _run_items(package, items)
        return _Entry(module.path, site, owner, _Built(others=(site.cls,)), _classify(package, items))
    usual = _classify(package, package.defaults.default_build(site.callee, module.module, site.scope or MODULE_SCOPE) & value)
    return _Entry(module.path, site, owner, _classify(package, value), usual=usual if usual.classes or usual.others else None)


def _run_items(package: Package, items: frozenset) -> frozenset:
    """What a Sequential runs: its items, a container among them replaced by its own items (timm's
    `nn.Sequential(*builder(...))` of stages, each `nn.Sequential(*blocks)`). A container that is an item of a
    Sequential is a callable one that runs its items in turn: a list is no module, and a ModuleList or ModuleDict
    cannot be called, so eagerly the model would fail first."""
    found: set = set()
    seen: set = set()
    todo = list(items)
    while todo:
        atom = todo.pop()
        if atom in seen:
            continue
        seen.add(atom)
        if atom[0] == "L":
            todo.extend(package.solver.items(frozenset({atom})))
        else:
            found.add(atom)
    return frozenset(found)


def _direct(package: Package, module: ModuleFacts, cls: str) -> _Built:
    """A site that names its class (`MLP(cfg)`, `nn.Linear(4, 4)`, an alias of one)."""
    if not cls:
        return _Built(opaque=True)
    resolved = package.resolve(cls)
    if resolved is not None and resolved in package.classes:
        return _Built(classes=(resolved,)) if package.is_layer(resolved) else _Built(opaque=True)
    if fw.layer_kind(cls) is not None or not package.in_package(cls):
        return _Built(others=(cls,))
    return _classify(package, package.solver.value(("call", ("g", cls), (), ()), module.module, MODULE_SCOPE))


def _classify(package: Package, value: frozenset) -> _Built:
    """The layers a site may build. What calling a host value gave (`HOST_CALLED`) builds nothing, as when such a call
    resolved to nothing: it must not make the site opaque (timm's ResNet stages, `Sequential(*blocks)` where a block
    class may also be an item of `tuple(repeat(x, n))`, lost their wrapper to it)."""
    classes: list[str] = []
    others: list[str] = []
    value = value - {HOST_CALLED}
    opaque = not value
    for atom in value:
        if atom[0] == "I" and atom[1] in package.classes and package.is_layer(atom[1]):
            classes.append(atom[1])
        elif atom[0] == "I" and atom[1] not in package.classes:
            others.append(atom[1])
        elif atom != ("C", None):  # `... if cond else None`: nothing built there
            opaque = True
    return _Built(tuple(sorted(classes)), tuple(sorted(others)), opaque)


def _describe(entry: _Entry) -> str:
    if entry.items is not None:
        return entry.site.cls
    names = entry.built.classes + entry.built.others
    return " | ".join(names) if names else entry.site.cls


def _guard_argument(guard: Guard) -> str:
    """`, guard={"past_key_values": "is None"}` as rewrite writes it, or ""."""
    return f", guard={literal(guard)}" if guard else ""


def _short(container: str) -> str:
    return container.rsplit(".", 1)[-1] if container else ""
