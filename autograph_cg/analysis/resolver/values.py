"""Values the solver computes: frozensets of atoms, kept small and finite.

    ("G", qualname)      a class, function, module or method object (of the package, a framework, or another library)
    ("I", qualname)      an instance of that class
    ("L", atoms)         a container (list, tuple, set, a framework container layer) holding any of `atoms`
    ("K", pairs)         a dict: pairs of (key or None, atom)
    ("C", value)         a host constant;  ("H",) a host value;  ("T",) a tensor
    ("?", reason)        something that cannot be seen, and why
    ("HC",)              what calling a host value gave: nothing a layer runs (a call of it resolves to nothing, as
                         before it existed), but a test made of it may go either way (`if arch.startswith("b"):`)

A value holds at most one list and one dict atom (their contents merged), containers nest one level at most,
and unknowns and constants are capped: values grow by content, so a fixed point is reached in a few rounds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

Atom = tuple[Any, ...]
Value = frozenset  # of Atom
EMPTY: Value = frozenset()
TENSOR: Value = frozenset({("T",)})
HOST: Value = frozenset({("H",)})
HOST_CALLED: Atom = ("HC",)

MAX_ATOMS = 64  # a value larger than this is cut to an unknown: the flow is too wide to decide a verdict (any timm model)
MAX_REASONS = 4  # distinct unknowns kept in one value
MAX_CONSTANTS = 16  # distinct constants kept before they become a host value


def unknown(reason: str) -> Value:
    return frozenset({("?", reason)})


def union(values: Iterable[Value]) -> Value:
    """The atoms of all `values`; where only one of them holds any, that value itself (most unions in the solve:
    a name with one binding, a call with one callee), not a copy."""
    first: Value = EMPTY
    out: set[Atom] | None = None
    for value in values:
        if not value:
            continue
        if not first:
            first = value
            continue
        if out is None:
            out = set(first)
        out |= value
    if out is not None:
        return frozenset(out)
    return first if first.__class__ is frozenset else frozenset(first)


def flat(atoms: Iterable[Atom]) -> frozenset:
    """Atoms with every container replaced by what it holds, recursively."""
    out: set[Atom] = set()
    for atom in atoms:
        if atom[0] == "L":
            out |= flat(atom[1])
        elif atom[0] == "K":
            out |= flat(a for _, a in atom[1])
        else:
            out.add(atom)
    return frozenset(out)


def _shallow(atom: Atom) -> Atom:
    """An item of a container: a container inside it keeps one level (a list of tuples), deeper ones flatten,
    so values built through cycles (`xs = xs + [x]`) stay finite."""
    if atom[0] == "L" or atom[0] == "K":
        return _flattened(atom)
    return atom


@lru_cache(maxsize=1 << 15)
def _flattened(container: Atom) -> Atom:
    """A container atom with what it holds flattened. The same containers come back through every cycle of values
    (and a frozenset keeps its hash once computed): remembered, not flattened again each time."""
    if container[0] == "L":
        return ("L", bounded(flat(container[1])))
    return ("L", bounded(flat(a for _, a in container[1])))


def merged(value: Iterable[Atom]) -> set[Atom]:
    """One list atom and one dict atom, holding what all of them held."""
    out: set[Atom] = set()
    items: set[Atom] = set()
    pairs: set[tuple[Any, Atom]] = set()
    lists = dicts = 0
    for atom in value:
        if atom[0] == "L":
            lists += 1
            items |= atom[1]
        elif atom[0] == "K":
            dicts += 1
            pairs |= atom[1]
        else:
            out.add(atom)
    if lists:
        out.add(("L", frozenset(merged(items)) if lists > 1 else frozenset(items)))
    if dicts:
        out.add(("K", frozenset(pairs)))
    return out


@lru_cache(maxsize=1 << 12)
def by_key(pairs: frozenset) -> dict[Any, Value]:
    """What a dict atom's pairs hold under each key: a call passing `**kwargs` binds each parameter of its callee
    from the same few large dicts (a model's config, hundreds of keys)."""
    found: dict[Any, set[Atom]] = {}
    for key, atom in pairs:
        found.setdefault(key, set()).add(atom)
    return {key: frozenset(atoms) for key, atoms in found.items()}


def listing(items: Iterable[Atom]) -> Atom:
    return ("L", bounded(frozenset(merged(_shallow(a) for a in items))))


def mapping(pairs: Iterable[tuple[Any, Atom]]) -> Atom:
    """A dict atom; what each key holds is kept small like any value."""
    by_key: dict[Any, set[Atom]] = {}
    for key, atom in pairs:
        by_key.setdefault(key, set()).add(_shallow(atom))
    out: list[tuple[Any, Atom]] = []
    for key, atoms in by_key.items():
        if len(atoms) == 1:  # nothing to bound (most keys): the one atom as it is
            out.append((key, *atoms))
        else:
            out.extend((key, a) for a in bounded(frozenset(atoms)))
    return ("K", frozenset(out))


SEVERAL_UNKNOWNS: Atom = ("?", "several values that cannot be seen")
TOO_MANY: Value = unknown("too many candidates")


_TOO_MANY_ATOM: Atom = next(iter(TOO_MANY))


def bounded(value: Value) -> Value:
    """Keep a value small, and only ever growing: past a few unknowns they become one general unknown, past a
    few constants they become a host value, past many atoms the value becomes unknown, which then absorbs
    whatever joins it. Each of these stands for more than what it replaces, so a value that grows through a
    cycle still reaches a fixed point."""
    if len(value) < 2:
        return value
    if _TOO_MANY_ATOM in value:
        return TOO_MANY
    lists = dicts = unknowns_seen = constants_seen = 0
    for atom in value:
        kind = atom[0]
        if kind == "L":
            lists += 1
        elif kind == "K":
            dicts += 1
        elif kind == "?":
            unknowns_seen += 1
        elif kind == "C":
            constants_seen += 1
    if lists > 1 or dicts > 1:
        value = frozenset(merged(value))
    if len(value) > MAX_ATOMS:
        return TOO_MANY
    if unknowns_seen <= MAX_REASONS and constants_seen <= MAX_CONSTANTS and SEVERAL_UNKNOWNS not in value:
        return value
    unknowns = [a for a in value if a[0] == "?"]
    constants = [a for a in value if a[0] == "C"]
    kept = set(value)
    if len(unknowns) > MAX_REASONS or SEVERAL_UNKNOWNS in value:
        kept = (kept - set(unknowns)) | {SEVERAL_UNKNOWNS}
    if len(constants) > MAX_CONSTANTS:
        kept = (kept - set(constants)) | {("H",)}
    return frozenset(kept)


@lru_cache(maxsize=1 << 14)
def order_key(atom: Atom) -> str:
    """An atom's text with every set in it written sorted: the order atoms are judged in, which a reason list keeps.
    `repr` writes a set in the order it iterates, which the interpreter's hash seed decides (two lists a Sequential
    may hold, judged in either order from one run to the next, swapped a verdict's reasons)."""
    return _text(atom)


def _text(part: Any) -> str:
    if isinstance(part, frozenset):
        return "{" + ", ".join(sorted(_text(item) for item in part)) + "}"
    if isinstance(part, tuple):
        return "(" + ", ".join(_text(item) for item in part) + ")"
    return repr(part)


def truthiness(value: Value) -> bool | None:
    """True or False when every candidate agrees, else None (tensors and host values never say)."""
    found: set[bool] = set()
    for atom in value:
        kind = atom[0]
        if kind == "C":
            found.add(bool(atom[1]))
        elif kind in ("G", "I"):
            found.add(True)
        elif kind in ("L", "K"):
            found.add(bool(atom[1]))
        else:
            return None
    return found.pop() if len(found) == 1 else None


def instances(value: Value, is_class: Any) -> Value:
    """Class objects made instances (`config: LlamaConfig` names the class; the value is an instance)."""
    return frozenset(("I", a[1]) if a[0] == "G" and is_class(a[1]) else a for a in value)
