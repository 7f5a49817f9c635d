"""Whether a test holds: the `if` tests of the summaries read against the values solved for them.

The solver's `truth` question and the `if` expressions that flow only where their branch may run both ask here. A
test is decided by its candidates (`x is None`, `x > 2`, `x == "gelu"`, `isinstance(x, str)`, plain truth), and
"may hold" and "may fail" only ever turn true as values grow, so a value guarded by a test only grows too.
"""

from __future__ import annotations

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.resolver.sites import Ctx
from autograph_cg.analysis.resolver.summaries import Expr
from autograph_cg.analysis.resolver.values import EMPTY, HOST_CALLED, Atom, Value

_SCALAR_TYPES = (str, int, float, bool, bytes)
_BUILTIN_TYPES = {t.__name__: t for t in (*_SCALAR_TYPES, list, tuple, dict, set, frozenset)}


class Conditions:
    """The `Solver`'s reading of tests; it reads values through the solver's `_eval` and `_node`."""

    def _truth(self, condition: Expr, ctx: Ctx) -> bool | None:
        holds, fails = self._may(condition, ctx)
        return None if holds == fails else holds

    def _condition(self, condition: Expr, ctx: Ctx) -> tuple[bool, bool]:
        """`_may`, solved once per test and context (the values guarded by one `if` ask it again at every
        recomputation); while it is being computed (a cycle back to it) or when it did not settle, asked afresh."""
        for atom in self._node(("may", condition, ctx)):
            if atom[0] == "C":
                return atom[1]
        return self._may(condition, ctx)

    def _may(self, condition: Expr, ctx: Ctx) -> tuple[bool, bool]:
        """(the test may hold, it may fail) for some candidate value. Both only ever turn true as values grow,
        so a value guarded by a test (`if is_exportable(): ...`) only ever grows too."""
        tag = condition[0]
        if tag in ("and", "or"):
            parts = [self._may(c, ctx) for c in condition[1]]
            if tag == "and":
                return all(h for h, _ in parts), any(f for _, f in parts)
            return any(h for h, _ in parts), all(f for _, f in parts)
        if tag == "not":
            holds, fails = self._may(condition[1], ctx)
            return fails, holds
        if tag == "is":  # `x is None` (negated: `is not`)
            value = self._eval(condition[1], ctx)
            vague = any(a[0] in ("?", "H", HOST_CALLED[0]) for a in value)
            none = vague or ("C", None) in value
            other = vague or any(a != ("C", None) for a in value)
            return (other, none) if condition[2] else (none, other)
        if tag == "cmp":  # `x > number` and its kin
            value = self._eval(condition[1], ctx)
            outcomes = [_compare(a, condition[2], condition[3]) for a in value]
            return any(o is not False for o in outcomes), any(o is not True for o in outcomes)
        if tag == "eq":  # `x == constant` (negated: `!=`)
            value = self._eval(condition[1], ctx)
            same = any(a[0] != "C" or a[1] == condition[2] for a in value)
            other = any(a[0] != "C" or a[1] != condition[2] for a in value)
            return (other, same) if condition[3] else (same, other)
        if tag == "isa":  # `isinstance(x, str)`: decided for candidates whose type is known (on no candidate, undecided)
            types = _builtin_types(self._eval(condition[2], ctx))
            tested = self._eval(condition[1], ctx) if types else EMPTY
            outcomes = [self._is_instance(a, types) for a in tested] or [None]
            return any(o is not False for o in outcomes), any(o is not True for o in outcomes)
        value = self._eval(condition, ctx)
        return any(_may_be(a, True) for a in value), any(_may_be(a, False) for a in value)

    def _is_instance(self, atom: Atom, types: tuple[type, ...]) -> bool | None:
        """Whether a candidate is an instance of builtin `types`; None when its type is not known. A constant is its
        Python value, a dict atom a dict; a list atom may be a list, a tuple, a set or a framework container; tensors,
        framework objects and package classes, functions and instances (bases of their own or the framework's) are
        none of these types."""
        kind = atom[0]
        if kind == "C":
            return isinstance(atom[1], types)
        if kind == "K":
            return dict in types
        if kind == "L":
            return False if not any(t in types for t in (list, tuple, set, frozenset)) else None
        if kind == "T":
            return False
        if kind == "G" and (atom[1] in self.package.classes or self._function_scope(atom[1]) is not None):
            return False
        if kind == "I" and (fw.is_framework(atom[1]) or (atom[1] in self.package.classes and self._plain_class(atom[1]))):
            return False
        return None

    def _plain_class(self, cls: str) -> bool:
        """Whether a package class derives only from package classes, `object` and framework classes (so none of
        the builtin types)."""
        return all(b in ("object", "builtins.object") or fw.is_framework(b) for b in self._external_bases(cls))


def _compare(atom: Atom, op: str, number: float) -> bool | None:
    if atom[0] != "C" or not isinstance(atom[1], (int, float)) or isinstance(atom[1], bool) and op != ">":
        return None
    value = atom[1]
    return value > number if op == ">" else value >= number if op == ">=" else value < number if op == "<" else value <= number


def _builtin_types(value: Value) -> tuple[type, ...]:
    """The builtin types a value names (`str`, `(int, float)`); () when it names anything else too."""
    found: list[type] = []
    for atom in value:
        if atom[0] == "L":
            found.extend(_builtin_types(atom[1]) or [object])
        elif atom[0] == "G" and atom[1].startswith("builtins.") and atom[1][9:] in _BUILTIN_TYPES:
            found.append(_BUILTIN_TYPES[atom[1][9:]])
        else:
            return ()
    return () if not found or object in found else tuple(found)


def _may_be(atom: Atom, truth: bool) -> bool:
    """Whether a candidate may test as `truth` (tensors, host values and unknowns may test as either)."""
    kind = atom[0]
    if kind == "C":
        return bool(atom[1]) == truth
    if kind in ("L", "K"):
        return bool(atom[1]) == truth
    if kind in ("G", "I"):
        return truth
    return True
