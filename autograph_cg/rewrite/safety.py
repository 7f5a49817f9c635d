"""Black-style safe mode: refuse a file we cannot reproduce exactly, and refuse an edit that changes more than it should.

A statement libcst is to edit must come back from libcst byte for byte (`source.Source.parse`; libcst is not
lossless on every file). `check_equivalent` compares Python ASTs after taking off every wrapper of rewrite's
shape and every top-level runtime import: they must be equal, and the number of wrappers and imports taken off
must differ by exactly the intended amount.
"""

from __future__ import annotations

import ast
from typing import Any

from autograph_cg.rewrite.shape import ast_is_runtime_import, ast_wrapped_call
from autograph_cg.rewrite.source import Source, Statement, Unsafe


def _shape(node: Any, wrappers: list[int]) -> Any:
    """`node` as comparable data (fields, not positions), rewrite's wrappers taken off and counted in `wrappers`."""
    if isinstance(node, list):
        return [_shape(item, wrappers) for item in node]
    if not isinstance(node, ast.AST):
        return node
    if isinstance(node, ast.Call):
        inner = ast_wrapped_call(node)
        if inner is not None:
            wrappers[0] += 1
            return _shape(inner, wrappers)
    if isinstance(node, ast.Constant):  # 1, 1.0 and True are equal as values, not as code
        return ("Constant", type(node.value), node.value, node.kind)
    return (type(node).__name__, *(_shape(getattr(node, name, None), wrappers) for name in node._fields))


def check_equivalent(old: Source, new: Source, wrappers: int, imports: int) -> None:
    """Raise Unsafe unless `new` is `old` plus `wrappers` wrappers and `imports` runtime imports (negative: minus).

    Both are read from their own parse of the whole file. Statements are paired in order, top-level runtime imports
    set aside; a pair with the same text holds the same code and is not compared further, and two classes with the
    same header and trailing comments are compared statement by statement of their bodies."""
    sides: list[list[Statement]] = []
    counted = []
    for source in (old, new):
        kept = [st for st in source.statements if not (len(st.nodes) == 1 and ast_is_runtime_import(st.nodes[0]))]
        loose = [n for st in kept for n in st.nodes if ast_is_runtime_import(n)]  # one of several on its line
        sides.append(kept)
        counted.append(len(source.statements) - len(kept) + len(loose))
    old_w, new_w = [0], [0]
    if not _same(old, sides[0], new, sides[1], old_w, new_w):
        raise Unsafe("unsafe", "the rewritten source differs from the original beyond the wrappers and the import")
    if (new_w[0] - old_w[0], counted[1] - counted[0]) != (wrappers, imports):
        raise Unsafe(
            "unsafe",
            f"expected {wrappers:+d} wrappers and {imports:+d} imports, found {new_w[0] - old_w[0]:+d} and {counted[1] - counted[0]:+d}",
        )


def _same(old: Source, olds: list[Statement], new: Source, news: list[Statement], old_w: list[int], new_w: list[int]) -> bool:
    """Whether two runs of statements hold the same code once wrappers are taken off (counted) and runtime imports
    of a line of several left out."""
    if len(olds) != len(news):
        return False
    for a, b in zip(olds, news):
        if a.text == b.text:
            continue
        body_a, body_b = old.body(a), new.body(b)
        if body_a is not None and body_b is not None and (body_a.head, body_a.tail) == (body_b.head, body_b.tail):
            if not _same(old, list(body_a.members), new, list(body_b.members), old_w, new_w):
                return False
            continue
        nodes_a = [n for n in a.nodes if a.nested or not ast_is_runtime_import(n)]
        nodes_b = [n for n in b.nodes if b.nested or not ast_is_runtime_import(n)]
        if _shape(nodes_a, old_w) != _shape(nodes_b, new_w):
            return False
    return True
