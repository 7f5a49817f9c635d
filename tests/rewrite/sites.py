"""Hand-made plan sites for the rewriter's tests: the calls to given class names, spanned as the analyzer spans them."""

from __future__ import annotations

import ast
import io
import tokenize

from autograph_cg.analysis.plan import WrapSite
from autograph_cg.findings import Span


def _char_col(line: bytes, byte_col: int) -> int:
    """1-based character column from Python's UTF-8 byte offset."""
    return len(line[:byte_col].decode("utf-8")) + 1


def sites_for(source: bytes | str, names: set[str], path: str = "m.py") -> list[WrapSite]:
    """One site per call whose callee ends in one of `names` (e.g. {"MLP", "Sequential"})."""
    data = source.encode() if isinstance(source, str) else source
    tree = ast.parse(data)
    text = data.decode(tokenize.detect_encoding(io.BytesIO(data).readline)[0])
    lines = [ln.encode() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in names:
            span = Span(
                node.lineno,
                _char_col(lines[node.lineno - 1], node.col_offset),
                node.end_lineno or node.lineno,
                _char_col(lines[(node.end_lineno or node.lineno) - 1], node.end_col_offset or 0),
            )
            out.append(WrapSite(path, span, f"pkg.{name}", "pkg.Net", "self.x"))
    return sorted(out, key=lambda s: (s.span.line, s.span.col))
