"""Lint a snippet in memory: the same index and package passes the CLI runs, without files."""

from __future__ import annotations

import textwrap

from autograph_cg.analysis.eligibility import Package
from autograph_cg.analysis.index import index_source
from autograph_cg.findings import Finding

HEADERS = {
    "paddle": "import numpy as np\nimport paddle\nimport paddle.nn as nn\nimport paddle.nn.functional as F\n",
    "torch": "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n",
}


def case_source(case: str, framework: str) -> str:
    """A rule case as a module: whole modules keep their text, forward bodies go into a layer."""
    header = HEADERS[framework]
    if case.startswith("class ") or "\nclass " in case:
        return header + case
    body = textwrap.indent(case, " " * 8)
    return header + f"\n\nclass Case(nn.{'Layer' if framework == 'paddle' else 'Module'}):\n    def forward(self, x, mask):\n{body}\n"


def split_case(case: str) -> tuple[tuple[str, ...], str]:
    """`"torch: body"` restricts a case to one framework."""
    for framework in ("paddle", "torch"):
        if case.startswith(framework + ": "):
            return (framework,), case[len(framework) + 2 :]
    return ("paddle", "torch"), case


def lint_text(text: str, module: str = "case") -> list[Finding]:
    facts = index_source(f"{module}.py", module, False, text)
    package = Package([facts], keep=lambda code: True)
    package.compute_all()
    assert not package.internal_errors(), package.internal_errors()  # a contained crash must not pass as clean
    return package.reachable_findings()
