"""A file split into statements by Python's parser must be split as libcst splits it: each statement's text, its
leading lines, and a class body's statements parsed alone being the very nodes libcst makes of them in the file.

libcst is the oracle: rewrite edits a statement parsed alone and puts its text back, so a statement that took a
comment libcst gives its neighbour would be edited with the wrong lines around it.
"""

from __future__ import annotations

import hypothesmith
import libcst as cst
import pytest
from hypothesis import assume, given

from autograph_cg.rewrite.source import Source, Statement, load
from tests.reliability.generate import example_settings

CASES = {
    "header, docstring and imports": '#!/usr/bin/env python\n# header\n\n# more\n"""Doc."""\nimport os\n# between\nimport sys\n',
    "indented comments end a block": "class A:\n    x = 1\n    # trailing\n\n# col 0\ndef f():\n    pass\n        # deeper\nx = 1\n",
    "a blank line, then a comment of the block": "class A:\n    x = 1\n\n    # c\ny = 2\n",
    "a comment less indented than the block": "class A:\n    x = 1\n  # c2\ny = 2\n",
    "a col-0 comment between the block's comments": "class A:\n    x = 1\n# c0\n    # c4\ny = 2\n",
    "nested blocks": "class A:\n    def f(self):\n        pass\n        # c8\n    # c4\n# c0\ny = 2\n",
    "blank lines only": "class A:\n    x = 1\n\n\ny = 2\n",
    "semicolons": "x = 1; y = 2\nz = 3\n",
    "if, elif and else": "if a:\n    x = 1\n    # c\nelif b:\n    y = 2\n    # d\nelse:\n    w = 1\n  # e\nz = 3\n",
    "else holding an if": "if a:\n    x = 1\nelse:\n    if b:\n        y = 2\n    # in else\nz = 3\n",
    "try, except, finally": "try:\n    import q\nexcept ImportError:\n    q = None\n    # fb\nfinally:\n    pass\n    # fin\nimport z\n",
    "a block on its own line": "if x: pass\n    # not the block's\ny = 1\n",
    "decorators and comments between them": "@a\n# between\n@b(1,\n   2)\nclass A:\n    @staticmethod\n    # note\n    def f():\n        pass\n",
    "class members with comments": 'class A(\n    B,  # base\n):  # header\n\n    # about x\n    x = 1\n    """Doc."""\n\n    def f(self):\n        return 1\n        # end of f\n\n    # between methods\n    @property\n    def g(self): return 2\n    # end of class\n# after\n',
    "tabs": "class A:\n\tdef f(self):\n\t\tpass\n\t# tab comment\n    # spaces\nx = 1\n",
    "crlf": "import os\r\n\r\nclass A:\r\n    x = 1\r\n    # c\r\n",
    "no trailing newline": "class A:\n    x = 1\n    # c",
    "footer": "x = 1\n\n# the end\n\n",
    "match": "match x:\n    case 1:\n        pass\n        # c\n    case _:\n        y = 2\n    # m\nz = 1\n",
    "characters str.splitlines() breaks at, not Python": "x = 1\n\x0c\n# a \u2028 b\nclass A:\n    y = '\x0b\x1c'\n    # \x85\nz = 2\n",
}


def _agree(source: Source, module: cst.Module) -> None:
    """Texts, leading lines and class bodies as libcst has them."""
    assert len(source.statements) == len(module.body)
    pieces = ["".join(module.code_for_node(h) for h in module.header), *(module.code_for_node(s) for s in module.body)]
    pieces.append("".join(module.code_for_node(f) for f in module.footer))
    if not module.has_trailing_newline:  # libcst reads a file with a line break added, and leaves it out again
        last = max(i for i, piece in enumerate(pieces) if piece or i == 0)
        pieces[last] = pieces[last][: -len(module.default_newline)] if pieces[last] else ""
    assert (source.header, [s.text for s in source.statements], source.footer) == (pieces[0], pieces[1:-1], pieces[-1])
    assert [s.lead for s in source.statements] == [len(s.leading_lines) for s in module.body]
    for statement, node in zip(source.statements, module.body):
        _blocks_agree(source, statement, node)


_ONE_BLOCK = (cst.ClassDef, cst.FunctionDef, cst.With, cst.For, cst.While, cst.If)


def _blocks_agree(source: Source, statement: Statement, node: cst.CSTNode) -> None:
    """A statement with one indented block splits into the statements libcst has in that block, each parsed alone
    being the node libcst makes of it in the file (but for how its blocks record their indentation); and so on
    down."""
    body = source.body(statement)
    one_block = isinstance(node, _ONE_BLOCK) and isinstance(node.body, cst.IndentedBlock) and not getattr(node, "orelse", None)
    assert (body is not None) == one_block
    if body is None:
        return
    assert body.head + "".join(m.text for m in body.members) + body.tail == statement.text
    assert len(body.members) == len(node.body.body)  # type: ignore[attr-defined]
    for member, theirs in zip(body.members, node.body.body):  # type: ignore[attr-defined]
        alone = source.parse(member).body[0]
        assert isinstance(alone, cst.ClassDef)
        assert _plain(alone.body.body[0]).deep_equals(_plain(theirs))  # type: ignore[union-attr]
        _blocks_agree(source, member, theirs)


class _Indents(cst.CSTTransformer):
    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(indent=None)


def _plain(node: cst.CSTNode) -> cst.CSTNode:
    """A node without its blocks' own indentation strings: libcst keeps a block's relative indentation only where it
    differs from the module's first one, and a piece parsed alone has another first indentation than its file."""
    return node.visit(_Indents())


@pytest.mark.parametrize("case", sorted(CASES))
def test_statements_are_split_as_libcst_splits_them(case: str) -> None:
    data = CASES[case].encode()
    _agree(load(data), cst.parse_module(data))


def test_code_puts_the_same_texts_back_exactly() -> None:
    for text in CASES.values():
        data = b"\xef\xbb\xbf" + text.encode()  # a byte-order mark comes back too
        source = load(data)
        assert source.code([s.text for s in source.statements]) == data


@given(hypothesmith.from_grammar() | hypothesmith.from_node())
@example_settings(30)
def test_generated_programs_are_split_as_libcst_splits_them(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    try:
        module = cst.parse_module(data)
        source = load(data)
    except Exception:  # what libcst or Python cannot read, rewrite never edits
        assume(False)
        return
    assume(module.bytes == data)
    _agree(source, module)


def test_a_block_is_split_once_for_the_edit_the_check_and_undo() -> None:
    source = load(b"class A:\n    x = 1\n\n    def f(self):\n        return 1\n")
    statement = source.statements[0]
    body = source.body(statement)
    assert body is not None and [m.text.strip() for m in body.members] == ["x = 1", "def f(self):\n        return 1"]
    assert source.body(statement) is body
