"""Hypothesis strategies for whole model modules, Paddle or PyTorch, clean or with one hazard from the rule catalogue.

A module has leaf layers (framework sublayers only), a block holding them in LayerList/ModuleList and
Sequential containers built with comprehensions (nested ones too), and a top model; around that it draws
what a rewrite must keep and the analyzer must see through: header and coding comments, docstrings with
string prefixes, decorators (on classes and on forward), `# autograph-cg: skip` pragmas, comment lines at any indentation, trailing comments, multi-line, parenthesized,
backslash-continued and semicolon-joined assignments, odd spacing, non-ASCII text, tabs or spaces, CRLF,
a BOM or a Latin-1 declaration, and no newline at the end.

Leaves hold framework sublayers only: package layers inside the items of a Sequential that gets wrapped
whole meet a known re-plan bug (the strict xfails in test_corpus_safety.py); extend the leaves once it is fixed.

`Generated.expected` holds the findings the analyzer must report, as (code, line); empty for clean code.
"""

from __future__ import annotations

import os
import textwrap
from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from autograph_cg.api import Options
from autograph_cg.config import Config
from autograph_cg.rules.registry import ALL_RULES
from tests.analysis.helpers import case_source, lint_text, split_case

FRAMEWORKS = {
    "paddle": {
        "base": "nn.Layer",
        "list": "nn.LayerList",
        "seq": "nn.Sequential",
        "imports": [
            ["import paddle", "import paddle.nn as nn", "import paddle.nn.functional as F"],
            ["import paddle", "from paddle import nn", "from paddle.nn import functional as F"],
        ],
        "leaves": ["nn.Linear(d, d)", "nn.LayerNorm(d)", "nn.Dropout(0.1)", "nn.GELU()"],
        "no_grad": "@paddle.no_grad()",
        "ops": [
            "x = paddle.tanh(x)",
            "x = F.relu(x) * 2.0 + 1.0",
            "x = x.reshape([x.shape[0], -1])",
            "x = paddle.concat([x, x], axis=-1)[..., : x.shape[-1]]",
            "x = paddle.where(x > 0, x, paddle.zeros_like(x))",
            "q, k = paddle.split(x, 2, axis=-1)\nx = paddle.concat([q * k, k], axis=-1)",
            "x = paddle.cast(x, 'float32') + paddle.arange(x.shape[-1]).astype('float32')",
        ],
    },
    "torch": {
        "base": "nn.Module",
        "list": "nn.ModuleList",
        "seq": "nn.Sequential",
        "imports": [
            ["import torch", "import torch.nn as nn", "import torch.nn.functional as F"],
            ["import torch", "from torch import nn", "from torch.nn import functional as F"],
        ],
        "leaves": ["nn.Linear(d, d)", "nn.LayerNorm(d)", "nn.Dropout(0.1)", "nn.GELU()"],
        "no_grad": "@torch.no_grad()",
        "ops": [
            "x = torch.tanh(x)",
            "x = F.relu(x) * 2.0 + 1.0",
            "x = x.reshape(x.shape[0], -1)",
            "x = torch.cat([x, x], dim=-1)[..., : x.shape[-1]]",
            "x = torch.where(x > 0, x, torch.zeros_like(x)).masked_fill(x < -1, 0.0)",
            "q, k = x.chunk(2, dim=-1)\nx = torch.cat([q * k, k], dim=-1)",
            "with torch.no_grad():\n    x = x.float() + torch.arange(x.shape[-1], device=x.device)",
        ],
    },
}
# Host-only statements that must never be reported inside forward.
HOST = [
    "if self.training:\n    x = x * 1.0",
    "if mask is not None:\n    x = x * mask",
    "n = x.shape[0]\nif n > 1:\n    x = x + 0.5",
    "tag = r'\\d+' + u'é' + f\"{x.ndim}\"",
    "if x.ndim == 3:\n    x = x[:, 0]\nx = x[..., None].flatten(1)",
    "x = x if self.training else x * (x.shape[-1] ** -0.5)",
    "out = {'a': x, 'b': [x, x]}\nx = out['a'] + sum(out['b'])",
]
LEAF_HOST = ["for i in range(len(self.extra)):\n    x = x + i", "x = self.scale(x)"]  # a leaf's own attributes
EXAMPLES: Counter[str] = Counter()  # examples run per test, printed by conftest
EVERY_RULE = Options(config=Config(select=("ALL",)), jobs=1, use_cache=False)  # the rule-case harness keeps every rule too


def example_settings(default: int) -> settings:
    """Hypothesis settings of a property test: `default` examples in CI, AUTOGRAPH_CG_PROPERTY_EXAMPLES for a longer search."""
    count = int(os.environ.get("AUTOGRAPH_CG_PROPERTY_EXAMPLES", str(default)))
    # filter_too_much: hypothesmith's node strategy discards the trees it cannot unparse into valid code, at times
    # most of a run's draws; the examples that do come through are the test's, and the run reports how many.
    checks = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    return settings(max_examples=count, deadline=None, suppress_health_check=checks)
LATIN1 = "éüßàç£"
UNICODE = LATIN1 + "中文ÅΩ🙂"


@dataclass(frozen=True)
class Generated:
    data: bytes
    framework: str
    expected: frozenset[tuple[str, int]]  # (code, line) of the findings the analyzer must report
    hazard: str  # "" for clean code, else the rule code injected
    target: str  # the class whose forward holds the hazard; "" for clean code and whole-class hazards


@dataclass(frozen=True)
class Hazard:
    code: str
    body: str
    whole_class: bool  # a module-level class rather than forward statements
    offsets: tuple[tuple[str, int], ...]  # findings of the case alone, relative to its first line


def _offsets(body: str, framework: str, whole_class: bool) -> tuple[tuple[str, int], ...]:
    """What the case reports on its own, as lines relative to its first line (the rule-case harness's layout)."""
    source = case_source(body, framework)
    first = body.splitlines()[0]
    start = source.index(first if whole_class else textwrap.indent(first, " " * 8))
    base = source[:start].count("\n") + 1
    return tuple(sorted((f.code, f.line - base) for f in lint_text(source)))


def hazards(framework: str) -> list[Hazard]:
    """Every invalid case of every rule that applies to `framework`."""
    out = []
    for rule in ALL_RULES:
        for case in rule.invalid:
            frameworks, body = split_case(case)
            if framework in frameworks and framework in rule.frameworks:
                whole = body.startswith("class ") or "\nclass " in body
                out.append(Hazard(rule.code, body, whole, _offsets(body, framework, whole)))
    return out


HAZARDS = {fw: hazards(fw) for fw in FRAMEWORKS}


class Writer:
    """Lines at indentation levels; rendered with the drawn indentation unit."""

    def __init__(self, draw: st.DrawFn, unit: str, charset: str) -> None:
        self.draw = draw
        self.unit = unit
        self.charset = charset
        self.lines: list[str] = []

    def line(self, level: int, text: str = "") -> int:
        """Add one line (or several, for a block with 4-space relative indentation); returns the first's number."""
        first = len(self.lines) + 1
        for raw in text.split("\n"):
            stripped = raw.lstrip(" ")
            depth = (len(raw) - len(stripped)) // 4
            self.lines.append(self.unit * (level + depth) + stripped if stripped else "")
        return first

    def noise(self, level: int) -> None:
        """Maybe a comment (at this or any indentation) or a blank line with trailing whitespace."""
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            self.line(level, f"# note {self.text()}")
        elif kind == 1:
            self.lines.append(self.unit * self.draw(st.integers(0, 3)) + f"# {self.text()}")
        elif kind == 2:
            self.lines.append(" " * self.draw(st.integers(0, 3)))

    def text(self) -> str:
        return self.draw(st.text(st.sampled_from("abc xyz" + self.charset), max_size=6))

    def assign(self, level: int, target: str, call: str) -> None:
        """`target = call` in one of the layouts a rewrite must keep intact."""
        layout = self.draw(st.integers(0, 8))
        name, _, args = call.partition("(")
        args = args[:-1]
        if layout == 1:
            self.line(level, f"{target} = ({call})")
        elif layout == 2 and args:
            self.line(level, f"{target} = {name}(")
            for i, arg in enumerate(args.split(", ")):
                self.line(level + 1, f"{arg},{'  # ' + self.text() if i == 0 else ''}")
            self.line(level, ")")
        elif layout == 3:
            self.line(level, f"self.k{len(self.lines)} = 1; {target} = {call}")
        elif layout == 4:
            self.line(level, f"{target} = \\")
            self.line(level + 1, call)
        elif layout == 5:
            self.line(level, f"{target}   =   {name}( {args} )" if args else f"{target} = {name}( )")
        elif layout == 6:
            self.line(level, f"{target} = {call}  # {self.text()}")
        elif layout == 7:
            self.line(level, f"{target} = {call}  # autograph-cg: skip")
        else:
            self.line(level, f"{target} = {call}")


@st.composite
def modules(draw: st.DrawFn, framework: str, hazardous: bool) -> Generated:
    """One module as bytes, with the findings it must produce."""
    spec = FRAMEWORKS[framework]
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]))
    w = Writer(draw, draw(st.sampled_from(["    ", "  ", "\t"])), LATIN1 if encoding == "latin-1" else UNICODE)
    if encoding == "latin-1":
        w.line(0, "# -*- coding: latin-1 -*-")
    elif draw(st.booleans()):
        w.line(0, "#!/usr/bin/env python\n# -*- coding: utf-8 -*-")
    if draw(st.booleans()):
        prefix = draw(st.sampled_from(["", "r", "u", "R"]))
        w.line(0, f'{prefix}"""Model {w.text()}.\n\nMore {w.text()}.\n"""')
    if draw(st.booleans()):
        w.line(0, "from __future__ import annotations")
    for name in ["import numpy as np", *draw(st.sampled_from(spec["imports"]))]:
        w.line(0, name)
    decorated = draw(st.booleans())
    if decorated:
        w.line(0, "\n\ndef register(cls):\n    return cls")

    hazard = draw(st.sampled_from(HAZARDS[framework])) if hazardous else None
    classes = ["Leaf0", "Leaf1", "Block", "Net"]
    target = draw(st.sampled_from(classes)) if hazard and not hazard.whole_class else ""
    expected: set[tuple[str, int]] = set()

    def forward(cls: str, calls: list[str]) -> None:
        if decorated and draw(st.booleans()):
            w.line(1, spec["no_grad"])
        w.line(1, "def forward(self, x, mask=None):")
        for _ in range(draw(st.integers(0, 2))):
            w.line(2, draw(st.sampled_from(spec["ops"] + HOST + (LEAF_HOST if cls.startswith("Leaf") else []))))
            w.noise(2)
        if cls == target:
            first = w.line(2, hazard.body)
            expected.update((code, first + off) for code, off in hazard.offsets)
        for call in calls:
            w.line(2, call)
            w.noise(2)
        w.line(2, "return x")

    leaf_layers = {}
    for leaf in ("Leaf0", "Leaf1"):
        w.line(0, "\n")
        if decorated and draw(st.booleans()):
            w.line(0, "@register")
        w.line(0, f"class {leaf}({spec['base']}):")
        if draw(st.booleans()):
            w.line(1, f'{draw(st.sampled_from(["", "r", "u"]))}"""{leaf} {w.text()}."""\n')
        w.line(1, f"def __init__(self, d, name={draw(st.sampled_from(['', 'u', 'r']))}'leaf'):")
        w.line(2, "super().__init__()")
        attrs = draw(st.lists(st.sampled_from(range(len(spec["leaves"]))), min_size=1, max_size=3, unique=True))
        for i in attrs:
            w.noise(2)
            w.assign(2, f"self.l{i}", spec["leaves"][i])
        w.line(2, f'self.extra = [1, 2]; self.tag = f"{{name}}_{{d}}"; self.raw = {draw(st.sampled_from(["b", "rb", "Rb"]))}"\\x00"')
        leaf_layers[leaf] = attrs
        w.line(0, "")
        w.line(1, "@staticmethod\ndef scale(v):\n    return v * 2")
        if draw(st.booleans()):
            w.line(0, "")
            w.line(1, "@property\ndef width(self):\n    return len(self.extra)")
        w.line(0, "")
        forward(leaf, [f"x = self.l{i}(x)" for i in attrs])

    containers = {
        "layers": (f"{spec['list']}([Leaf0(d) for _ in range(n)])", "for layer in self.layers:\n    x = layer(x, mask)"),
        "seq": (f"{spec['seq']}(*[Leaf1(d, name=f'seq{{i}}') for i in range(n)])", "x = self.seq(x)"),
        "pair": (f"{spec['seq']}(Leaf0(d), nn.ReLU())", "x = self.pair(x)"),
        "grid": (f"{spec['list']}([{spec['list']}([Leaf0(d) for _ in range(2)]) for _ in range(n)])", "x = self.grid[0][1](x)"),
        "mixed": (f"{spec['list']}([Leaf0(d) if i % 2 else Leaf1(d) for i in range(n)])", "x = self.mixed[0](x, mask)"),
    }
    chosen = draw(st.lists(st.sampled_from(sorted(containers)), min_size=1, max_size=4, unique=True))
    w.line(0, "\n")
    w.line(0, f"class Block({spec['base']}):")
    w.line(1, "def __init__(self, d, n=2):")
    w.line(2, "super().__init__()")
    for name in chosen:
        w.noise(2)
        w.assign(2, f"self.{name}", containers[name][0])
    w.line(0, "")
    forward("Block", [containers[name][1] for name in chosen])

    w.line(0, "\n")
    w.line(0, f"class Net({spec['base']}):")
    w.line(1, "def __init__(self, d):")
    w.line(2, "super().__init__()")
    w.assign(2, "self.block", "Block(d)")
    w.assign(2, "self.head", draw(st.sampled_from(["Leaf0(d)", "Leaf1(d)"])))
    w.line(0, "")
    forward("Net", ["x = self.block(x, mask)", "x = self.head(x)"])
    if hazard and hazard.whole_class:
        w.line(0, "\n")
        first = w.line(0, hazard.body.rstrip("\n"))
        expected.update((code, first + off) for code, off in hazard.offsets)
    if draw(st.booleans()):
        w.line(0, "\n")
        w.assign(0, "model", "Net(8)")

    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(w.lines) + (newline if draw(st.integers(0, 4)) else "")
    data = text.encode(encoding)
    return Generated(data, framework, frozenset(expected), hazard.code if hazard else "", target)
