"""Code that never runs while a CUDA graph is captured.

The frameworks answer "is this stream capturing?" (`torch.cuda.is_current_stream_capturing()`, Paddle's
`is_cuda_graph_capturing()`), and libraries wrap the answer in predicates of their own (`is_tracing()`: compiling,
exporting, or capturing) to skip host checks a graph cannot hold: `if not is_tracing(m) and m.all(): return None`.
While a graph captures such a predicate is true, so what sits under its negation never runs in the graph; eager
warm-up runs it, where a host read is harmless. The walk of a file records, per finding and call, which calls would
have to be such predicates for its code to be unreachable while capturing (`cut`); whether they are is known only
across files (`truthy_calls` per function, solved by the verdict pass), like what another module's function returns.
"""

from __future__ import annotations

import ast
from itertools import product
from typing import Callable, Sequence

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis import nodes

Qualify = Callable[[ast.expr], "str | None"]
#: A test and whether the code sits where it holds (True) or where it fails (False).
Fact = tuple[ast.expr, bool]

_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
#: More distinct tests than this in one place: the contradiction is not searched for (2**n assignments).
_MAX_ATOMS = 10


def terminates(statements: list[ast.stmt]) -> bool:
    """The block never falls through to the statement after it (it returns, raises, continues or breaks)."""
    return bool(statements) and isinstance(statements[-1], _TERMINATORS)


def truthy_calls(func: ast.FunctionDef | ast.AsyncFunctionDef, qualify: Qualify) -> tuple[tuple[str, ...], ...]:
    """Per `return` of `func` outside `except` handlers, the calls whose truth makes what it returns true: operands
    of an `or`, written there or in a local bound once (`found = a() or b()`, then only `found |= c`). Empty when a
    return has none: the function then says nothing about capture."""
    returns: list[ast.expr] = []
    bound: dict[str, list[ast.expr]] = {}
    rebound: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(statement, False) for statement in func.body]
    while stack:
        node, handled = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        children = nodes.children(node)
        if isinstance(node, ast.Return) and not handled:
            if node.value is None:
                return ()
            returns.append(node.value)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node.value)
            children = [node.value]
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            if not isinstance(node.op, ast.BitOr):  # `|=` keeps a true value true; other operators may not
                rebound.add(node.target.id)
            children = [node.value]
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            rebound.add(node.id)  # a loop or `with` target, `del`, an annotated or unpacking assignment
        within = handled or isinstance(node, ast.ExceptHandler)  # a handler's return: only when the query raised
        stack.extend((child, within) for child in children)
    if not returns:
        return ()
    locals_ = {name: values[0] for name, values in bound.items() if len(values) == 1 and name not in rebound}
    found: list[tuple[str, ...]] = []
    for value in returns:
        calls = tuple(sorted(_or_calls(value, locals_, qualify, set())))
        if not calls:
            return ()
        found.append(calls)
    return tuple(found)


def _or_calls(node: ast.expr, locals_: dict[str, ast.expr], qualify: Qualify, seen: set[str]) -> set[str]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return {q for value in node.values for q in _or_calls(value, locals_, qualify, seen)}
    if isinstance(node, ast.Call):
        qual = qualify(node.func)
        return {qual} if qual is not None else set()
    if isinstance(node, ast.Name) and node.id in locals_ and node.id not in seen:
        return _or_calls(locals_[node.id], locals_, qualify, seen | {node.id})
    return set()


def candidates(test: ast.expr, qualify: Qualify) -> dict[int, str]:
    """The calls in `test` that may be capture predicates, by node id: the framework's queries and calls of
    functions outside the frameworks (the verdict pass finds out which are)."""
    found: dict[int, str] = {}
    for node in nodes.walk(test):
        if isinstance(node, ast.Call):
            qual = qualify(node.func)
            if qual is not None and (qual in fw.CAPTURE_QUERIES or not fw.is_framework(qual)):
                found[id(node)] = qual
    return found


def cut(facts: Sequence[Fact], calls_in: Callable[[ast.expr], dict[int, str]]) -> tuple[str, ...]:
    """The calls that, each true while capturing, make `facts` contradict one another: code that sits where they
    all stand then never runs in a graph. The fewest found by dropping one at a time; empty when none do.
    `calls_in(test)`: `candidates` of a test."""
    calls: dict[int, str] = {}
    for test, _ in facts:
        calls.update(calls_in(test))
    if not calls:
        return ()
    chosen = set(calls.values())
    if _satisfiable(facts, calls, chosen):
        return ()
    for qual in sorted(chosen):
        if len(chosen) > 1 and not _satisfiable(facts, calls, chosen - {qual}):
            chosen.discard(qual)
    return tuple(sorted(chosen))


def _satisfiable(facts: Sequence[Fact], calls: dict[int, str], true: set[str]) -> bool:
    """Whether some truth of the other tests makes every fact stand, the calls named in `true` being true."""
    atoms: dict[str, int] = {}
    formulas = [(_formula(test, calls, true, atoms), holds) for test, holds in facts]
    if len(atoms) > _MAX_ATOMS:
        return True
    for values in product((False, True), repeat=len(atoms)):
        if all(_evaluate(formula, values) == holds for formula, holds in formulas):
            return True
    return False


def _formula(node: ast.expr, calls: dict[int, str], true: set[str], atoms: dict[str, int]) -> tuple:
    """`node` as ("and"|"or", parts), ("not", part), ("const", value) or ("atom", index); `x is None` and
    `x is not None` (and `==` / `!=`) are one atom and its negation."""
    if isinstance(node, ast.BoolOp):
        return ("and" if isinstance(node.op, ast.And) else "or", tuple(_formula(v, calls, true, atoms) for v in node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ("not", _formula(node.operand, calls, true, atoms))
    if isinstance(node, ast.Call) and calls.get(id(node)) in true:
        return ("const", True)
    if isinstance(node, ast.Constant):
        return ("const", bool(node.value))
    negated = False
    key = node
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.IsNot, ast.NotEq)):
        negated = True
        key = ast.Compare(left=node.left, ops=[ast.Is() if isinstance(node.ops[0], ast.IsNot) else ast.Eq()], comparators=node.comparators)
    index = atoms.setdefault(ast.dump(key), len(atoms))
    return ("not", ("atom", index)) if negated else ("atom", index)


def _evaluate(formula: tuple, values: tuple[bool, ...]) -> bool:
    tag = formula[0]
    if tag == "atom":
        return values[formula[1]]
    if tag == "const":
        return formula[1]
    if tag == "not":
        return not _evaluate(formula[1], values)
    if tag == "and":
        return all(_evaluate(part, values) for part in formula[1])
    return any(_evaluate(part, values) for part in formula[1])
