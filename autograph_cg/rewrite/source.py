"""A source file as its statements, split by Python's own parser; libcst sees only what is edited.

A planned site sits in a few statements of a few methods (the classes that hold transformers' sites are a fifth
of the lines of its touched files, their methods that hold one a sixth of that), and undo has work only where the
wrapper's name is. So a file is split with `ast` (C speed) into its top-level statements, and the body of a
statement with one indented block (a class, a function, a `for` or `with`...) into its statements, each keeping
its exact text; libcst parses one of them alone when it is to be edited (a nested one under a one-line `class _:`
header, which takes any indentation), and its new text is put back between the bytes left as they were. libcst
must reproduce each piece it parses byte for byte, as it had to reproduce the whole file before.

The split is libcst's own: a statement's text starts with the blank lines and comments above it (its
`leading_lines`), and a compound statement keeps the comments its last block ends with, up to the last one that
starts with that block's indentation (libcst's block footer). What comes before the first top-level statement
is the module's header, what follows the last one its footer; a block's statement keeps its header lines before
its body's first statement and its own footer after the last.
"""

from __future__ import annotations

import ast
import codecs
import functools
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Sequence, TypeVar

import libcst as cst

from autograph_cg.rewrite.results import Unsafe
from autograph_cg.sources import LINE_BREAK, decode, encoding_of, lines_of, parse

_INDENT = re.compile(r"[ \t\f]+")
_ONE_BLOCK = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.If)
_Node = TypeVar("_Node", bound=cst.CSTNode)


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of the module or of a top-level class's body: `a = 1; b = 2` is one statement of two nodes."""

    text: str  # its exact text: leading blank and comment lines, its own lines, its block's trailing comments
    line: int  # the file's line its text starts on (1-based)
    end: int  # the file's line its text ends on
    lead: int  # how many blank or comment lines lead its text (libcst's `leading_lines`)
    nodes: tuple[ast.stmt, ...]
    classes: tuple[str, ...] = ()  # the classes it sits in, outermost first
    nested: bool = False  # in a block: parsed alone under a one-line class header

    @property
    def imports(self) -> bool:
        """A line of imports only (`import a`, `from b import c`, or several of them joined by `;`)."""
        return all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in self.nodes)

    @property
    def last(self) -> int:
        """The last line of its code (its block's trailing comments apart)."""
        return self.nodes[-1].end_lineno or self.nodes[-1].lineno

    def parts(self) -> tuple[str, str]:
        """(its leading blank and comment lines, the rest)."""
        cut = 0
        for _ in range(self.lead):
            cut = LINE_BREAK.search(self.text, cut).end()  # type: ignore[union-attr]
        return self.text[:cut], self.text[cut:]


@dataclass(frozen=True, slots=True)
class Body:
    """A statement with one indented block, split: `head + join(member texts) + tail` is its text."""

    head: str  # its leading lines, decorators and header
    members: tuple[Statement, ...]
    tail: str  # its block's trailing comments


@dataclass(frozen=True)
class Source:
    """A file's bytes, text, syntax tree and top-level statements; `code` puts statements back into bytes."""

    data: bytes
    text: str
    tree: ast.Module
    header: str  # blank and comment lines above the first statement
    statements: tuple[Statement, ...]
    footer: str  # blank and comment lines below the last statement
    newline: str  # the file's first line break: what libcst writes where it adds a line
    lines: tuple[str, ...]  # the file's lines, each with its line break
    _bodies: dict[Statement, Body | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def parse(self, statement: Statement) -> cst.Module:
        """A statement alone as a libcst module (a nested one under `class _:`), or Unsafe when libcst cannot give
        back its exact text."""
        where = statement.line + statement.lead
        try:
            module, exact = _parse(self._alone(statement), self.newline)
        except (cst.ParserSyntaxError, RecursionError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise Unsafe("not-reproducible", f"libcst cannot parse the statement at line {where}: {first}") from None
        if not exact:
            raise Unsafe("not-reproducible", f"libcst cannot reproduce the statement at line {where} byte-for-byte")
        return module

    def offset(self, statement: Statement) -> int:
        """What to add to a line of `parse(statement)` to get the file's line."""
        return statement.line - 1 - statement.nested

    def text_of(self, statement: Statement, module: cst.Module) -> str:
        """The statement's text from an edit of `parse(statement)`."""
        code = module.code
        if statement.nested:
            if not code.startswith(self._header):
                raise Unsafe("unsafe", f"the edit of the statement at line {statement.line + statement.lead} changed the header it was parsed under")
            code = code[len(self._header) :]
        return code

    @property
    def _header(self) -> str:
        return f"class _:{self.newline}"

    def _alone(self, statement: Statement) -> str:
        return self._header + statement.text if statement.nested else statement.text

    def body(self, statement: Statement) -> Body | None:
        """A statement with one indented block (class, function, `with`, `for` or `while` without `else`, `if`
        without `else`) split into its header, its block's statements and its trailing comments; None for another
        statement, or a block that sits on its header's line. Split once: the edit, the AST check and undo of the
        same file descend through the same blocks."""
        if statement not in self._bodies:
            self._bodies[statement] = self._split(statement)
        return self._bodies[statement]

    def _split(self, statement: Statement) -> Body | None:
        node = statement.nodes[0]
        if len(statement.nodes) != 1 or not isinstance(node, _ONE_BLOCK) or getattr(node, "orelse", None):
            return None
        if _indent(node.body[0], self.lines) is None:
            return None
        lines = self.lines
        start = _first_line(node.body[0]) - 1
        while start > node.lineno and _blank_or_comment(lines[start - 1]) and not _continues(lines[start - 2]):
            start -= 1  # the lines between the header and the first statement lead that statement
        classes = (*statement.classes, node.name) if isinstance(node, ast.ClassDef) else statement.classes
        members, end = _block(lines, node.body, start, classes)
        return Body("".join(lines[statement.line - 1 : start]), tuple(members), "".join(lines[end : statement.end]))

    def code(self, texts: Sequence[str]) -> bytes:
        """The file with `texts` for its statements, in its encoding (a byte-order mark kept)."""
        body = self.header + "".join(texts) + self.footer
        bom = codecs.BOM_UTF8 if self.data.startswith(codecs.BOM_UTF8) else b""
        return bom + body.encode(encoding_of(self.data))


@functools.lru_cache(maxsize=64)
def _parse(text: str, newline: str) -> tuple[cst.Module, bool]:
    """libcst's module of a statement's text, and whether it prints back exactly. Kept for the next few asks (libcst
    nodes do not change): what has the wrapper's name is parsed to read it, then to undo it."""
    module = cst.parse_module(text, config=cst.PartialParserConfig(default_newline=newline))
    return module, module.code == text


class _Collect(cst.CSTVisitor):
    def __init__(self, kinds: type | tuple[type, ...]) -> None:
        super().__init__()
        self.kinds = kinds
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.kinds):
            self.found.append(node)
        return True


def find_all(node: cst.CSTNode, kinds: type[_Node] | tuple[type[_Node], ...]) -> list[_Node]:
    """The nodes of `kinds` in `node` (itself included), in the order of the text: what `libcst.matchers.findall`
    finds with matchers of node types alone, without importing the matchers (0.3 s, most of libcst's import)."""
    collect = _Collect(kinds)
    node.visit(collect)
    return collect.found  # type: ignore[return-value]  # all of `kinds`


def load(data: bytes) -> Source:
    """Decode, parse and split `data`; raise Unsafe when it cannot be read as Python."""
    try:
        text = decode(data)
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise Unsafe("undecodable", f"cannot decode: {exc}") from None
    try:
        tree = parse(data)
    except (SyntaxError, ValueError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise Unsafe("syntax-error", f"syntax error: {where}{getattr(exc, 'msg', exc)}") from None
    lines = tuple(lines_of(text, keepends=True))
    newline = next((m.group() for m in LINE_BREAK.finditer(text)), "\n")
    if not tree.body:
        return Source(data, text, tree, text, (), "", newline, lines)
    start = _first_line(tree.body[0]) - 1
    statements, end = _block(lines, tree.body, start, None)
    return Source(data, text, tree, "".join(lines[:start]), tuple(statements), "".join(lines[end:]), newline, lines)


def _block(lines: Sequence[str], nodes: list[ast.stmt], start: int, classes: tuple[str, ...] | None) -> tuple[list[Statement], int]:
    """The statements of one block whose text starts at line index `start`, and the index after the last one.
    `classes`: the classes the block is in; None for the module's own block."""
    groups: list[list[ast.stmt]] = []
    for node in nodes:
        if groups and _first_line(node) <= (groups[-1][-1].end_lineno or 0):
            groups[-1].append(node)  # `a = 1; b = 2`
        else:
            groups.append([node])
    statements = []
    done = start
    for group in groups:
        first = _first_line(group[0])
        end = _block_end(group[-1], lines)
        statements.append(Statement("".join(lines[done:end]), done + 1, end, first - 1 - done, tuple(group), classes or (), classes is not None))
        done = end
    return statements, done


def _first_line(node: ast.stmt) -> int:
    """A statement's first line: its first decorator's, for a decorated definition."""
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _blank_or_comment(line: str) -> bool:
    bare = line.lstrip(" \t\f")
    return not bare.strip() or bare.startswith("#")


def _indent(node: ast.stmt, lines: Sequence[str]) -> str | None:
    """The indentation of the line a block's first statement starts, or None when it shares a logical line with
    the statement's header (`if x: pass`, or after a backslash)."""
    head = lines[node.lineno - 1].encode("utf-8")[: node.col_offset].decode("utf-8", "replace")
    if not _INDENT.fullmatch(head) or node.lineno > 1 and _continues(lines[node.lineno - 2]):
        return None
    return head


def _continues(line: str) -> bool:
    """Whether a line ends in a backslash that joins the next line to it (not one in a comment)."""
    if not line.rstrip("\r\n").endswith("\\"):
        return False
    try:
        list(tokenize.generate_tokens(io.StringIO(line.rstrip("\r\n") + "\n").readline))
    except tokenize.TokenError:
        return True  # the statement goes on
    return False


def _last_block(node: ast.stmt) -> list[ast.stmt] | None:
    """The statements of the block a compound statement ends with (None for a simple statement)."""
    if isinstance(node, ast.If):
        tail = node.orelse
        if len(tail) == 1 and isinstance(tail[0], ast.If) and tail[0].col_offset == node.col_offset:
            return _last_block(tail[0])  # `elif`
        return tail or node.body
    if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        return node.finalbody or node.orelse or node.handlers[-1].body  # type: ignore[attr-defined]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return node.orelse or node.body
    body = getattr(node, "body", None)
    return body if isinstance(body, list) else None


def _block_end(node: ast.stmt, lines: Sequence[str]) -> int:
    """The line index after a statement's text: after its last line, or, for a compound statement, after the last of
    the blank and comment lines below it that starts with its last block's indentation (libcst's block footer)."""
    end = node.end_lineno or node.lineno
    while end < len(lines) and _continues(lines[end - 1]):
        end += 1  # `x = 1 \` goes on to the next line
    if isinstance(node, ast.Match):  # its outermost block is that of its cases, each `case` on a line of its own
        line = lines[node.cases[0].pattern.lineno - 1]
        head: str | None = line[: len(line) - len(line.lstrip(" \t\f"))] or None
    else:
        block = _last_block(node)
        head = _indent(block[0], lines) if block else None
    if head is None:
        return end
    last = end
    for index in range(end, len(lines)):
        if not _blank_or_comment(lines[index]):
            break  # code: the next statement
        if lines[index].startswith(head):
            last = index + 1
    return last
