"""Refreshes: a layer's state that forward rewrites only when a test of that same state finds it stale.

`if seqlen > self._seq_len_cached: self._seq_len_cached = ...; self.cos_cached = ...` writes the layer's state in
forward (AG401), but only while what the test reads of that state is stale. The runtime undoes a capture whose
forward changed the layer's state and retries it later, and drops the graphs that may have read that state when an
eager call changes it, so a graph is only ever kept from a capture in which the refresh did not run. Between
replays the test cannot change its answer without an eager call: it reads the layer's attributes, which replays
do not write, and host values that the graph's key fixes (shapes, dtypes, `training`, the call's other values).
Such writes are no hazard; what else the branch does is judged as always.

The recognition is strict: the write sits in the body (not the `else`) of an `if` of the same function, and that
`if`'s test reads an attribute of `self` that its body writes, in every way the test may hold. The walk decides
the writes the body makes itself; the verdict pass (`eligibility.Package._refresh_call`) adds what the methods of
`self` the body calls write, a few calls deep, from the test's `staleness` recorded with its condition, and takes
their writes of the layer's state as a refresh for that call only (the same method called elsewhere, outside a
refresh, keeps them as hazards there). A test on anything else (a flag, an argument alone, `self.training`) refreshes nothing, nor does one that
may also hold whatever the state (`self.deltas is None or past_length == 0`), and a test that reads a tensor's
value is a host read found by other rules, under which nothing is waived.
"""

from __future__ import annotations

import ast

from autograph_cg.analysis import nodes

#: Nodes whose code does not run where they are written: what they write is not the branch's own.
_DEFERRED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_DEFERRED_TYPES = frozenset(_DEFERRED)
#: Builtins that read an attribute named by a string: `getattr(self, "x", None)`, `hasattr(self, "x")`.
_READERS = frozenset({"getattr", "hasattr"})


def written(node: ast.AST) -> str | None:
    """The attribute of `self` that `node` writes: a target `self.x`, or `self.register_buffer("x", ...)`."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        return node.attr if _is_self(node.value) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer":
        name = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        return _string(name) if _is_self(node.func.value) else None
    return None


#: What a test needs to hold, over the attributes of `self` it reads: ("read", names) holds where one of `names` was
#: written, ("all", parts) and ("any", parts) where all or any of its parts do. Plain tuples: recorded in the facts
#: of a condition (`Condition.stale`), for the verdict pass to ask with what a method the body calls writes.
Staleness = tuple


def staleness(test: ast.expr) -> Staleness | None:
    """What `test` holding needs of the attributes of `self` it reads; None when it reads none."""
    return _staleness(test, True) if _read(test) else None


def _staleness(test: ast.expr, holds: bool) -> Staleness:
    """What `test` holding (failing, not `holds`) needs of the attributes of `self` it reads."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _staleness(test.operand, not holds)
    if isinstance(test, ast.BoolOp):  # `not (a and b)`: `not a or not b`
        parts = tuple(_staleness(value, holds) for value in test.values)
        return ("all" if isinstance(test.op, ast.Or) == holds else "any", parts)
    return ("read", tuple(sorted(_read(test))))


def stale(found: Staleness, written: set[str] | frozenset[str]) -> bool:
    """Whether a test of this staleness holds only where what it reads of the state `written` says so: then every
    write of the layer's state in the body that writes them is a refresh. Each way an `or` may hold must read that
    state (`self.deltas is None or past_length == 0` also runs on every prefill, whatever the state: per-call state,
    not a refresh), one part of an `and` is enough (`flag and self.cache is None`)."""
    kind, parts = found
    if kind == "read":
        return not written.isdisjoint(parts)
    return (all if kind == "all" else any)(stale(part, written) for part in parts)


def _read(test: ast.expr) -> set[str]:
    """The attributes of `self` that `test` reads: `self.x` (`self.x.shape` too), `getattr(self, "x")`,
    `hasattr(self, "x")`."""
    found: set[str] = set()
    for node in _walk(test):
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            found.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _READERS:
            if len(node.args) >= 2 and _is_self(node.args[0]) and (name := _string(node.args[1])) is not None:
                found.add(name)
    return found


def assigned(statements: list[ast.stmt]) -> set[str]:
    """The attributes of `self` that `statements` write where they stand (nested blocks included): what `written` finds
    in `_walk`'s nodes, in one pass that asks it only of attributes and calls (asked of every method the index walks,
    this was a tenth of indexing a file)."""
    found: set[str] = set()
    todo: list[ast.AST] = list(statements)
    pop, extend, children = todo.pop, todo.extend, nodes.children
    while todo:
        node = pop()
        kind = type(node)
        if kind is ast.Attribute or kind is ast.Call:
            name = written(node)
            if name is not None:
                found.add(name)
        elif kind in _DEFERRED_TYPES:
            continue
        extend(children(node))
    return found


def _walk(root: ast.AST) -> list[ast.AST]:
    """`root` and the nodes under it, leaving out the bodies of nested functions, classes and lambdas."""
    found: list[ast.AST] = []
    todo = [root]
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, _DEFERRED):
            todo.extend(nodes.children(node))
    return found


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
