"""The exact shape of what `rewrite` adds, so that undo and the safety check recognise it and nothing else.

A wrapped site reads `CUDAGraphedLayer(<original call>)`, or `CUDAGraphedLayer(<original call>, num_warmup_steps=3,
compile=True)` when settings are passed through; settings are keyword arguments with literal values from `SETTINGS`. A guarded site
adds `guard={"past_key_values": "is None"}` last: a dict literal from forward parameters to the runtime's tests. The
import that rewrite adds carries `MARKER`, so undo never removes an import the user wrote.
"""

from __future__ import annotations

import ast

import libcst as cst

from autograph_cg.analysis.guards import literal, literal_guard
from autograph_cg.analysis.verdicts import Guard
from autograph_cg.rewrite.settings import SETTINGS, WrapSettings

RUNTIME_MODULE = "autograph_cg.runtime"
WRAPPER = "CUDAGraphedLayer"
MARKER = "# autograph-cg: added"
IMPORT_LINE = f"from {RUNTIME_MODULE} import {WRAPPER}  {MARKER}\n"

GUARD = "guard"  # the runtime's keyword for a site's guard


def _literal_ok(name: str, value: object) -> bool:
    kind = SETTINGS.get(name)
    return kind is not None and type(value) is kind


def cst_wrapped_call(node: cst.Call) -> cst.Call | None:
    """The inner call when `node` has the wrapper's shape, else None."""
    if not (isinstance(node.func, cst.Name) and node.func.value == WRAPPER) or not node.args:
        return None
    first, *rest = node.args
    if first.keyword is not None or first.star or not isinstance(first.value, cst.Call):
        return None
    for arg in rest:
        if arg.keyword is None or arg.star:
            return None
        if arg.keyword.value == GUARD and isinstance(arg.value, cst.Dict):
            if literal_guard(ast.parse(cst.Module([]).code_for_node(arg.value), mode="eval").body) is None:
                return None
        elif not _literal_ok(arg.keyword.value, _cst_literal(arg.value)):
            return None
    return first.value


def _cst_literal(node: cst.BaseExpression) -> object:
    """The value of an integer or True/False literal; None for anything else."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def cst_guard(wrapper: cst.Call, guard: Guard) -> cst.Call:
    """A wrapper of rewrite's shape with `guard` as its guard (none when empty), its other arguments kept."""
    kept = [a for a in wrapper.args if not (a.keyword is not None and a.keyword.value == GUARD)]
    return wrapper.with_changes(args=_joined([*kept, *_guard_arg(guard)]))


def _guard_arg(guard: Guard) -> list[cst.Arg]:
    if not guard:
        return []
    no_space = cst.SimpleWhitespace("")
    equal = cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space)
    return [cst.Arg(cst.parse_expression(literal(guard)), keyword=cst.Name(GUARD), equal=equal)]


def _joined(args: list[cst.Arg]) -> list[cst.Arg]:
    """Arguments separated by `, `, the last without a comma."""
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [a.with_changes(comma=comma if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT) for i, a in enumerate(args)]


def ast_wrapped_call(node: ast.Call) -> ast.Call | None:
    """The same test on Python's own AST, for the safety check."""
    if not (isinstance(node.func, ast.Name) and node.func.id == WRAPPER) or len(node.args) != 1:
        return None
    inner = node.args[0]
    if not isinstance(inner, ast.Call):
        return None
    for kw in node.keywords:
        if kw.arg == GUARD and literal_guard(kw.value) is not None:
            continue
        if kw.arg is None or not isinstance(kw.value, ast.Constant) or not _literal_ok(kw.arg, kw.value.value):
            return None
    return inner


def ast_is_runtime_import(stmt: ast.stmt) -> bool:
    """`from autograph_cg.runtime import CUDAGraphedLayer`, the statement rewrite adds."""
    return (
        isinstance(stmt, ast.ImportFrom)
        and stmt.module == RUNTIME_MODULE
        and stmt.level == 0
        and [(a.name, a.asname) for a in stmt.names] == [(WRAPPER, None)]
    )


def build_wrapper(call: cst.Call, settings: WrapSettings, guard: Guard = (), wrapped_class: str = "") -> cst.Call:
    """`CUDAGraphedLayer(call, k=v, guard={...})`; parentheses around `call` move outside so undo can move them back."""
    no_space = cst.SimpleWhitespace("")
    equal = cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space)
    args = [cst.Arg(call.with_changes(lpar=(), rpar=()))]
    args += [
        cst.Arg(cst.Name(str(value)) if isinstance(value, bool) else cst.Integer(str(value)), keyword=cst.Name(name), equal=equal)
        for name, value in settings.keywords(wrapped_class)
    ]
    return cst.Call(func=cst.Name(WRAPPER), args=_joined(args + _guard_arg(guard)), lpar=call.lpar, rpar=call.rpar)


def unwrap(wrapper: cst.Call, inner: cst.Call) -> cst.Call:
    """The inverse of `build_wrapper`: the inner call with the wrapper's parentheses given back."""
    return inner.with_changes(lpar=(*wrapper.lpar, *inner.lpar), rpar=(*inner.rpar, *wrapper.rpar))
