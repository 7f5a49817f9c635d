"""AG3xx: Python decides what to run from a tensor's value, so the value must come to the host."""

from __future__ import annotations

import ast
from typing import Iterator

from autograph_cg.findings import Severity
from autograph_cg.rules.base import CONTROL_FLOW, Rule, RuleContext


_FLOW_WHY = (
    "Python evaluates the condition on the host: `bool(tensor)` copies the value and waits (capture refuses "
    "it). Even where it could be captured, the graph would record one branch and replay it forever, whatever "
    "later inputs say."
)


def _exits(body: list[ast.stmt]) -> bool:
    return any(isinstance(s, (ast.Return, ast.Raise)) for s in body)


def _condition(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    test = node.test  # type: ignore[attr-defined]
    if ctx.truth_syncs(test):
        if isinstance(node, ast.If):
            yield test, "an early exit" if _exits(node.body) else "an `if`"
        else:
            yield test, "a conditional expression"


def _while(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.While)
    if ctx.truth_syncs(node.test):
        yield node.test, ""


def _assert(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.Assert)
    if ctx.truth_syncs(node.test):
        yield node.test, ""


def _bool_operands(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """`a and b` converts `a` to a Python bool (in a condition the whole result is converted: AG301 says so)."""
    if ctx.in_test():
        return
    if isinstance(node, ast.BoolOp):
        for value in node.values[:-1]:
            if ctx.truth_syncs(value):
                yield value, "and" if isinstance(node.op, ast.And) else "or"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and ctx.truth_syncs(node.operand):
        yield node, "not"


def _range_of_tensor(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    return any(ctx.is_tensor(a) for a in call.args)


RULES = (
    Rule(
        code="AG301",
        name="tensor-condition",
        family=CONTROL_FLOW,
        severity=Severity.ERROR,
        message="{detail} on a tensor value runs on the host",
        what="Finds `if`, `elif` and conditional expressions whose condition is a tensor, including early "
        "`return`/`raise` guarded by one.",
        why=_FLOW_WHY,
        example="if probs.max() > self.threshold:\n    x = self.expert(x)",
        instead="gate = (probs.max() > self.threshold).astype(x.dtype)\nx = gate * self.expert(x) + (1 - gate) * x",
        check=_condition,
        node_types=(ast.If, ast.IfExp),
        invalid=(
            "if x.sum() > 0:\n    x = x * 2",
            "y = x if x.mean() > 0 else -x",
            "if (x > 0).any():\n    return x",
            "class Case(nn.Module):\n    def forward(self, x, scale):\n        if scale.sum() > 0:\n            x = x * scale\n        return x",
            "class Case(nn.Module):\n    def forward(self, x, feats: List[Tensor]):\n        if feats[0].sum() > 0:\n"
            "            x = x * 2\n        return x",
            "class Case(nn.Module):\n    def peak(self, x):\n        return x.max()\n\n    def forward(self, x):\n        if self.peak(x) > 0:\n            x = x * 2\n        return x",
            "def split(x):\n    return x * 2, x.sum()\n\n\nclass Case(nn.Module):\n    def forward(self, x):\n"
            "        y, total = split(x)\n        if total > 0:\n            y = y - 1\n        return y",
            "def peak(x):\n    if x.ndim == 1:\n        return 0\n    return x.max()\n\n\nclass Case(nn.Module):\n    def forward(self, x):\n"
            "        if peak(x) > 0:\n            x = x * 2\n        return x",
        ),
        valid=(
            "if x.shape[0] > 1:\n    x = x * 2",
            "if self.training:\n    x = x * 2",
            "if mask is not None:\n    x = x * mask",
            "if x.ndim == 3:\n    x = x[0]",
            "if x.requires_grad and not x.is_leaf:\n    x = x * 2",
            "torch: if x.device.type == 'cuda' and x.dtype == torch.float16:\n    x = x.float()",
            "paddle: if x.stop_gradient and x.dtype == paddle.float16:\n    x = x.astype('float32')",
            "paddle: from paddle.distributed import fleet\nhcg = fleet.get_hybrid_communicate_group()\n"
            "if hcg.get_model_parallel_world_size() > 1:\n    x = x * 2",
            "class Case(nn.Module):\n    def forward(self, x, feats):\n        if feats:\n            x = x + feats.pop()\n        return x",
            "class Case(nn.Module):\n    def forward(self, x, past: Optional[Tuple[Tensor, Tensor]] = None):\n"
            "        if past:\n            x = x + past[0]\n        return x",
            "class Case(nn.Module):\n    def any_requires_grad(self, xs) -> bool:\n        return any(t.requires_grad for t in xs)\n\n"
            "    def forward(self, x, feats):\n        if self.any_requires_grad(feats):\n            x = x * 2\n        return x",
            "def prepare(x, mask):\n    if mask is not None and mask.ndim == 4:\n        return True, mask, None\n"
            "    return False, mask, x.shape[1]\n\n\nclass Case(nn.Module):\n    def forward(self, x, mask=None):\n"
            "        early, mask, length = prepare(x, mask)\n        if early:\n            return x\n"
            "        if length > 2:\n            x = x + 1\n        return x",
            "def width(x):\n    return x.shape[-1]\n\n\nclass Case(nn.Module):\n    def forward(self, x):\n"
            "        if width(x) > 3:\n            x = x * 2\n        return x",
            "torch: y = x.float() if torch.jit.is_scripting() else x",
            "paddle: from paddle.nn.layer.layers import in_declarative_mode\ny = x.shape[:-1] if in_declarative_mode() else x.shape",
        ),
    ),
    Rule(
        code="AG302",
        name="tensor-while",
        family=CONTROL_FLOW,
        severity=Severity.ERROR,
        message="`while` on a tensor value runs on the host",
        what="Finds `while` loops whose condition is a tensor.",
        why=_FLOW_WHY + " The trip count is frozen at capture.",
        example="while (err > tol).any():\n    x = step(x)",
        instead="for _ in range(self.max_iters):  # a fixed number of iterations\n    x = step(x)",
        check=_while,
        node_types=(ast.While,),
        invalid=("while x.sum() > 0:\n    x = x - 1",),
        valid=("n = 0\nwhile n < x.shape[0]:\n    n += 1",),
    ),
    Rule(
        code="AG303",
        name="tensor-assert",
        family=CONTROL_FLOW,
        severity=Severity.ERROR,
        message="`assert` on a tensor value runs on the host",
        what="Finds `assert` statements that test tensor values.",
        why=_FLOW_WHY + " The check runs once, at capture, and never again.",
        example="assert (ids < vocab).all()",
        instead="# check inputs before the graphed layer, or keep the check out of forward",
        check=_assert,
        node_types=(ast.Assert,),
        invalid=("assert (x >= 0).all()",),
        valid=("assert x.ndim == 2", "assert x.shape[-1] % 2 == 0"),
    ),
    Rule(
        code="AG304",
        name="tensor-bool-op",
        family=CONTROL_FLOW,
        severity=Severity.ERROR,
        message="`{detail}` converts a tensor to a Python bool",
        what="Finds tensors used as operands of `and`, `or` and `not` outside conditions.",
        why=_FLOW_WHY,
        example="keep = mask_a and mask_b",
        instead="keep = paddle.logical_and(mask_a, mask_b)  # or mask_a & mask_b",
        check=_bool_operands,
        node_types=(ast.BoolOp, ast.UnaryOp),
        invalid=("y = (x > 0) and x", "y = not x.any()"),
        valid=("y = (x > 0) & (x < 1)", "z = mask if mask is not None else x"),
    ),
    Rule(
        code="AG305",
        name="tensor-loop-count",
        family=CONTROL_FLOW,
        severity=Severity.ERROR,
        message="`range()` of a tensor takes its trip count from the device",
        what="Finds `range(t)` with a tensor bound.",
        why=_FLOW_WHY + " The loop runs the count seen at capture on every replay.",
        example="for _ in range(num_steps_tensor):\n    x = self.step(x)",
        instead="for _ in range(self.num_steps):  # a host int fixed at construction\n    x = self.step(x)",
        builtins=("range",),
        guard=_range_of_tensor,
        invalid=(
            "for _ in range(x.sum()):\n    x = x * 2",
            "from builtins import range as steps\nfor _ in steps(x.sum()):\n    x = x * 2",
        ),
        valid=(
            "for i in range(x.shape[0]):\n    x = x * 2",
            "from builtins import range as steps\nfor _ in steps(x.shape[0]):\n    x = x * 2",
        ),
    ),
)
