"""Black-style safe mode: refuse a file we cannot reproduce exactly, and refuse an edit that changes more than it should.

`load` decodes, parses with Python and with libcst, and requires libcst to give back the very same bytes
(libcst is not lossless on every file). `check_equivalent` compares Python ASTs after taking off every
wrapper of rewrite's shape and every runtime import: they must be equal, and the number of wrappers and
imports taken off must differ by exactly the intended amount.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from autograph_cg.rewrite.shape import ast_is_runtime_import, ast_wrapped_call
from autograph_cg.sources import decode, parse


class Unsafe(Exception):
    """Why a file is left untouched: a short kind for the summary and a one-line message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Loaded:
    module: cst.Module
    text: str
    tree: ast.Module


def load(data: bytes) -> Loaded:
    """Decode and parse `data`; raise Unsafe when it cannot be rewritten byte-for-byte."""
    try:
        text = decode(data)
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise Unsafe("undecodable", f"cannot decode: {exc}") from None
    try:
        tree = parse(data)
    except (SyntaxError, ValueError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise Unsafe("syntax-error", f"syntax error: {where}{getattr(exc, 'msg', exc)}") from None
    try:
        module = cst.parse_module(data)
        exact = module.bytes == data
    except (cst.ParserSyntaxError, RecursionError, ValueError) as exc:
        raise Unsafe("not-reproducible", f"libcst cannot parse it: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if not exact:
        raise Unsafe("not-reproducible", "libcst cannot reproduce it byte-for-byte")
    return Loaded(module, text, tree)


class _Strip(ast.NodeTransformer):
    def __init__(self) -> None:
        self.wrappers = 0
        self.imports = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        inner = ast_wrapped_call(node)
        if inner is None:
            return node
        self.wrappers += 1
        return inner

    def visit_Module(self, node: ast.Module) -> ast.AST:
        self.generic_visit(node)
        kept = [s for s in node.body if not ast_is_runtime_import(s)]
        self.imports += len(node.body) - len(kept)
        node.body = kept
        return node


def _stripped(tree: ast.Module) -> tuple[str, int, int]:
    strip = _Strip()
    dump = ast.dump(strip.visit(tree))
    return dump, strip.wrappers, strip.imports


def check_equivalent(old: ast.Module, new_data: bytes, wrappers: int, imports: int) -> None:
    """Raise Unsafe unless `new_data` is `old` plus `wrappers` wrappers and `imports` runtime imports (negative: minus).

    `old` is stripped in place: pass a tree nothing else needs afterwards.
    """
    try:
        new = parse(new_data)
    except (SyntaxError, ValueError) as exc:
        raise Unsafe("unsafe", f"the rewritten source does not parse: {exc}") from None
    old_dump, old_w, old_i = _stripped(old)
    new_dump, new_w, new_i = _stripped(new)
    if old_dump != new_dump:
        raise Unsafe("unsafe", "the rewritten source differs from the original beyond the wrappers and the import")
    if (new_w - old_w, new_i - old_i) != (wrappers, imports):
        raise Unsafe(
            "unsafe",
            f"expected {wrappers:+d} wrappers and {imports:+d} imports, found {new_w - old_w:+d} and {new_i - old_i:+d}"
        )
