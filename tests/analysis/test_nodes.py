"""`analysis.nodes` gives the nodes `ast` gives, in the same order (the index's facts depend on that order)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autograph_cg.analysis import nodes

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "autograph_cg" / "analysis").glob("*.py"))

ODD = '''
def f(a, /, b=1, *c, d, **e):
    global g
    x = {**e, "k": [y async for y in a if y]}
    match b:
        case {"k": v, **rest} if v: pass
        case Point(x=0) | [1, *_]: pass
    return lambda q=None: (yield from q) if q else f"{a!r:>{b}}"
'''


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_walk_and_children_follow_ast(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert [id(n) for n in nodes.walk(tree)] == [id(n) for n in ast.walk(tree)]
    for node in ast.walk(tree):
        assert [id(c) for c in nodes.children(node)] == [id(c) for c in ast.iter_child_nodes(node)]


def test_lists_of_names_and_missing_keys_are_no_nodes() -> None:
    """`global g` holds strings, `{**e}` a None key, a match a pattern's strings: none of them is a child."""
    tree = ast.parse(ODD)
    assert [id(n) for n in nodes.walk(tree)] == [id(n) for n in ast.walk(tree)]
    assert all(isinstance(n, ast.AST) for n in nodes.walk(tree))
