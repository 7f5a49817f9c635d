"""AG2xx: the output's shape depends on tensor values, so it cannot be fixed at capture."""

from __future__ import annotations

import ast
from typing import Iterator

from autograph_cg.findings import Severity
from autograph_cg.analysis.kinds import BOOL_TENSOR
from autograph_cg.rules.base import DYNAMIC_SHAPE, Passes, Rule, RuleContext
from autograph_cg.rules.matchers import argument, is_method_form, keyword, spreads


_SHAPE_WHY = (
    "A graph replays fixed-size kernels into fixed buffers. An op whose output size depends on the data must "
    "copy that size to the host to allocate the output (a sync that capture refuses), and a replay could not "
    "change the size anyway."
)


def _where_one_argument(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    if is_method_form(ctx, call):
        return False
    return len(call.args) + len(call.keywords) == 1


def _one_argument_passed(name: str, passes: Passes) -> bool:
    """`where` reached as a value and called with one argument, or with a spread that may be one."""
    return len(passes) == 1 or spreads(passes)


def _tensor_repeats(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    if keyword(call, "output_size") is not None:
        return False
    repeats = argument(call, 0 if is_method_form(ctx, call) else 1, "repeats")
    return repeats is not None and ctx.is_tensor(repeats)


def _mask_index(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.Subscript)
    if not isinstance(node.ctx, ast.Load) or not ctx.is_tensor(node.value):
        return
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if ctx.kind(part) == BOOL_TENSOR:
            yield part, ast.unparse(part)


RULES = (
    Rule(
        code="AG201",
        name="dynamic-shape-nonzero",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="`{detail}` returns as many rows as there are non-zero elements",
        what="Finds `nonzero` and `argwhere`.",
        why=_SHAPE_WHY,
        example="idx = paddle.nonzero(probs > p)\nfirst = idx[0]",
        instead="first = paddle.argmax((probs > p).astype('int32'), axis=-1)  # fixed shape",
        known_problems="`torch.nonzero_static(x, size=n)` has a fixed shape and is not flagged.",
        ops=("nonzero", "argwhere"),
        invalid=(
            "idx = (x > 0).nonzero()",
            "torch: idx = torch.nonzero(x)",
            "paddle: idx = paddle.nonzero(x)",
            "torch: find = torch.nonzero\nidx = find(x)",
            "paddle: find = getattr(paddle, 'nonzero')\nidx = find(x)",
            "torch: class Case(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.find = torch.argwhere\n"
            "    def forward(self, x):\n        return self.find(x)\n",
        ),
        valid=("torch: idx = torch.nonzero_static(x, size=4)", "idx = x.argmax(-1)"),
    ),
    Rule(
        code="AG202",
        name="dynamic-shape-where",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="`{detail}` with only a condition returns the indices of true elements",
        what="Finds `where(condition)` with one argument (the `nonzero` form).",
        why=_SHAPE_WHY,
        example="rows = paddle.where(mask)",
        instead="y = paddle.where(mask, x, paddle.zeros_like(x))  # three-argument form keeps the shape",
        ops=("where",),
        guard=_where_one_argument,
        on_value=_one_argument_passed,
        invalid=(
            "paddle: rows = paddle.where(x > 0)",
            "torch: rows = torch.where(x > 0)",
            "torch: from torch import where as pick\nrows = pick(x > 0)",
            "paddle: import paddle as pd\nrows = pd.where(x > 0)",
            "torch: pick = torch.where\nrows = pick(x > 0)",
            "paddle: pick = paddle.where\nrows = pick(*[x > 0])",
        ),
        valid=(
            "paddle: y = paddle.where(x > 0, x, 0.0)",
            "torch: y = torch.where(x > 0, x, 0.0)",
            "torch: from torch import where as pick\ny = pick(x > 0, x, 0.0)",
            "torch: pick = torch.where\ny = pick(x > 0, x, 0.0)",
            "paddle: pick = paddle.where\ny = pick(x > 0, x, 0.0)",
        ),
    ),
    Rule(
        code="AG203",
        name="dynamic-shape-masked-select",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="`{detail}` returns one element per true mask entry",
        what="Finds `masked_select`.",
        why=_SHAPE_WHY,
        example="kept = paddle.masked_select(x, mask)",
        instead="kept = x * mask.astype(x.dtype)  # or masked_fill; reduce with sums and counts",
        ops=("masked_select",),
        invalid=("y = x.masked_select(x > 0)",),
        valid=("torch: y = x.masked_fill(x > 0, 0.0)",),
    ),
    Rule(
        code="AG204",
        name="dynamic-shape-bool-mask-index",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="indexing with boolean mask `{detail}` returns a data-dependent number of elements",
        what="Finds `x[mask]` where `mask` is a boolean tensor (a comparison of tensors).",
        why=_SHAPE_WHY,
        example="active = hidden[token_mask]",
        instead="active = hidden * token_mask.unsqueeze(-1)  # keep all rows, zero the inactive ones",
        check=_mask_index,
        node_types=(ast.Subscript,),
        invalid=("y = x[x > 0]", "m = x > 0\ny = x[m]"),
        valid=("y = x[0]", "y = x[:, : x.shape[1] // 2]"),
    ),
    Rule(
        code="AG205",
        name="dynamic-shape-unique",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="`{detail}` returns as many elements as there are distinct values",
        what="Finds `unique` and `unique_consecutive`.",
        why=_SHAPE_WHY,
        example="experts = paddle.unique(expert_ids)",
        instead="counts = F.one_hot(expert_ids, num_experts).sum(0)  # fixed size: one slot per possible value",
        ops=("unique", "unique_consecutive"),
        invalid=("u = x.unique()", "torch: distinct = torch.unique\nu = distinct(x)"),
        valid=("u = x.sort()",),
    ),
    Rule(
        code="AG206",
        name="dynamic-shape-bincount",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="`{detail}` sizes its output from the data",
        what="Finds `bincount`, `histc` and `histogram`.",
        why=_SHAPE_WHY + " Even with `minlength`, the length grows with the largest value.",
        example="load = paddle.bincount(expert_ids)",
        instead="load = F.one_hot(expert_ids, num_experts).sum(0)",
        ops=("bincount", "histc", "histogram"),
        invalid=("torch: c = torch.bincount(x)", "paddle: c = paddle.bincount(x)"),
        valid=("torch: c = torch.nn.functional.one_hot(x, 8).sum(0)",),
    ),
    Rule(
        code="AG207",
        name="dynamic-shape-repeat-interleave",
        family=DYNAMIC_SHAPE,
        severity=Severity.ERROR,
        message="`{detail}` with tensor repeats sizes its output from the data",
        what="Finds `repeat_interleave` whose repeats are a tensor and no `output_size` is given.",
        why=_SHAPE_WHY,
        example="expanded = paddle.repeat_interleave(x, counts, axis=0)",
        instead="expanded = torch.repeat_interleave(x, counts, dim=0, output_size=total)  # total: a host int",
        ops=("repeat_interleave",),
        guard=_tensor_repeats,
        invalid=("torch: y = torch.repeat_interleave(x, x.long(), dim=0)",),
        valid=("torch: y = torch.repeat_interleave(x, 2, dim=0)", "torch: y = torch.repeat_interleave(x, x.long(), dim=0, output_size=8)"),
    ),
)
