"""Small predicates the rules share: what the arguments of a matched call are."""

from __future__ import annotations

import ast

from autograph_cg.analysis.guards import SPREAD
from autograph_cg.rules.base import Passes, RuleContext


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    """The argument given at `position` or as keyword `name`."""
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return keyword(call, name)


def is_method_form(ctx: RuleContext, call: ast.Call) -> bool:
    """`x.op(...)` on a value rather than `paddle.op(...)` / `torch.op(...)`."""
    return isinstance(call.func, ast.Attribute) and ctx.qualify(call.func) is None


def first_arg_tensor(ctx: RuleContext, call: ast.Call) -> bool:
    return bool(call.args) and ctx.is_tensor(call.args[0])


def any_arg_tensor(ctx: RuleContext, call: ast.Call) -> bool:
    return any(ctx.holds_tensor(a) for a in call.args) or any(ctx.holds_tensor(k.value) for k in call.keywords)


def spreads(passes: Passes) -> bool:
    """A call through a value that passes `*xs` or `**kw`: how many arguments it gives, and which, cannot be told."""
    return any(key is None or value == SPREAD for key, value in passes)


def is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def names_cpu(node: ast.expr | None) -> bool:
    """"cpu", torch.device("cpu"), paddle.CPUPlace()."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] == "cpu"
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "CPUPlace":
            return True
        if name == "device" and node.args:
            return names_cpu(node.args[0])
    return False

