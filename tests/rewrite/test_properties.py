"""Properties over generated modules: undo(rewrite(x)) == x byte-for-byte, and rewrite(rewrite(x)) == rewrite(x).

Modules are assembled from the things that move an inserted import around or that a rewrite must keep:
header comments, docstrings, `__future__`, import blocks of each kind in any order, TYPE_CHECKING and
try/except imports, code between imports, module-level sites, pragmas, tabs, CRLF and a BOM.
"""

from __future__ import annotations

import ast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograph_cg.rewrite import WrapSettings, rewrite_source, undo_source

from .sites import sites_for

IMPORTS = [
    "import os",
    "import sys",
    "from typing import Any",
    "import paddle",
    "import numpy as np",
    "import zlib_ext.nn as znn",
    "from paddle import nn",
    "from torch import nn as tnn",
    "from autograph_cg import runtime",
    "from .mlp import MLP",
    "from . import layers",
    "from __future__ import annotations",
]
SEPARATORS = ["", "\n", "# section\n", "\n# section\n\n"]
SITES = [
    "self.a = MLP(1)",
    "self.b = (MLP(2))  # width",
    "self.c = nn.LayerList([MLP(i) for i in range(3)])",
    "self.d = MLP(\n{i}    4,  # inner\n{i})",
    "self.e = MLP(5)  # autograph-cg: skip",
    "self.f = [MLP(6) if k else nn.ReLU() for k in (0, 1)]",
]


@st.composite
def modules(draw: st.DrawFn) -> bytes:
    parts: list[str] = []
    if draw(st.booleans()):
        parts.append("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n")
    if draw(st.booleans()):
        parts.append('"""Module docstring."""\n')
    for _ in range(draw(st.integers(0, 3))):
        parts.append(draw(st.sampled_from(SEPARATORS)))
        block = draw(st.lists(st.sampled_from(IMPORTS), min_size=1, max_size=4))
        parts.append("".join(line + "\n" for line in block))
    if draw(st.booleans()):
        parts.append("\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import paddle\n")
    if draw(st.booleans()):
        parts.append("try:\n    import paddle\nexcept ImportError:\n    paddle = None\n")
    if draw(st.booleans()):
        parts.append("top = MLP(0)\n")
    if draw(st.booleans()):
        parts.append("import torch\n")
    indent = draw(st.sampled_from(["    ", "\t"]))
    body = draw(st.lists(st.sampled_from(SITES), min_size=1, max_size=4))
    parts.append(f"\n\nclass Net(nn.Layer):\n{indent}def __init__(self):\n")
    parts.extend(f"{indent * 2}{line.format(i=indent * 2)}\n" for line in body)
    text = "".join(parts)
    if "from __future__" in text:  # only legal first; keep it where Python accepts it
        text = text.replace("from __future__ import annotations\n", "")
        if draw(st.booleans()):
            text = "from __future__ import annotations\n" + text
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    data = text.encode()
    return b"\xef\xbb\xbf" + data if draw(st.booleans()) else data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.sampled_from([None, 0, 7]))
def test_undo_inverts_rewrite_and_rewrite_is_idempotent(data: bytes, steps: int | None) -> None:
    ast.parse(data)  # the generator only makes valid modules
    wrap = WrapSettings(num_warmup_steps=steps)
    sites = sites_for(data, {"MLP"})
    edit = rewrite_source(data, sites, wrap)
    assert edit.changed + edit.kept == len(sites)
    assert edit.changed == edit.new.count(b"CUDAGraphedLayer(MLP(")
    assert undo_source(edit.new).new == data
    assert rewrite_source(edit.new, sites_for(edit.new, {"MLP"}), wrap).new == edit.new
    assert edit.new.startswith(b"\xef\xbb\xbf") == data.startswith(b"\xef\xbb\xbf")
    assert edit.new.count(b"\r\n") - data.count(b"\r\n") in (0, 1, 2)
    assert (b"\r\n" in data) or (b"\r" not in edit.new)
