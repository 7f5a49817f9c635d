"""AG9xx: what the analyzer cannot see into. Strictness (`unknown` in the config) decides what it means.

Not reported unless selected (`--select AG9`): they explain `unknown` verdicts, which `plan` shows anyway.
"""

from __future__ import annotations

import ast
from typing import Iterator

from autograph_cg.findings import Severity
from autograph_cg.rules.base import Rule, RuleContext, UNKNOWN



def _cross_file(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Reported by the eligibility pass, which sees the whole package; no per-node check."""
    return iter(())


RULES = (
    Rule(
        code="AG901",
        name="unresolved-call",
        family=UNKNOWN,
        severity=Severity.WARNING,
        message="cannot resolve `{detail}`, which receives tensors",
        what="Finds calls with tensor arguments whose target the analyzer cannot follow: callables passed as "
        "arguments or stored on `self` from constructor arguments, functions of other packages, dynamic "
        "`getattr`.",
        why="What the call does on the device is unknown, so the layer's verdict is `unknown` (with the default "
        "strictness the plan does not wrap it).",
        example="self.act = act_fn  # in __init__, from an argument\ny = self.act(x)",
        instead="self.act = nn.GELU()  # a layer the analyzer can see, or give the argument a default class",
        check=_cross_file,
        hook="cross-file",
        default=False,
        invalid=("fn = getattr(self, 'f')\ny = fn(x)",),
        valid=("y = F.gelu(x)",),
    ),
    Rule(
        code="AG902",
        name="unknown-layer",
        family=UNKNOWN,
        severity=Severity.WARNING,
        message="cannot see into layer `{detail}`: not built from a class of the package or the reviewed allowlist",
        what="Finds sublayers built from classes that are neither defined in the analyzed package nor on the "
        "reviewed list of capturable framework layers, and sublayers built by factory functions.",
        why="Their forward cannot be checked, so the parent's verdict is `unknown`.",
        example="self.loss = nn.CTCLoss()",
        instead="# analyze the package that defines it too, or mark the parent `# autograph-cg: skip`",
        check=_cross_file,
        hook="cross-file",
        default=False,
        invalid=(
            "class M(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.loss = nn.CTCLoss()\n"
            "    def forward(self, x):\n        return self.loss(x)\n",
        ),
        valid=(
            "class M(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
            "    def forward(self, x):\n        return self.fc(x)\n",
        ),
    ),
)
