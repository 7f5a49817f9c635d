"""The libcst edits: wrap the planned constructor calls, or take rewrite's wrappers off again.

Only the top-level statements that hold a site (or, for undo, the wrapper's name) are parsed by libcst, each
alone (`source.Source.parse`), edited there and given back as new text; the rest of the file is never parsed,
positioned or printed by libcst. Sites are found by exact position: libcst's `PositionProvider` range of a call
(parentheses excluded) equals the plan's span shifted to 0-based columns.
`# autograph-cg: skip` on the statement, on an enclosing class or on the class being constructed keeps
a site as it is, in both directions.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from autograph_cg.analysis import nodes
from autograph_cg.analysis.plan import WrapSite
from autograph_cg.analysis.suppressions import Suppressions, scan
from autograph_cg.rewrite.shape import WRAPPER, WrapSettings, build_wrapper, cst_guard, cst_wrapped_call, unwrap
from autograph_cg.rewrite.source import Source, Statement

Key = tuple[int, int, int, int]
Positions = Mapping[cst.CSTNode, CodeRange]


def site_key(site: WrapSite) -> Key:
    s = site.span
    return (s.line, s.col - 1, s.end_line, s.end_col - 1)


def _last_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


@dataclass
class Counts:
    changed: int = 0  # wrappers added (rewrite) or removed (undo)
    kept: int = 0  # left alone because of `# autograph-cg: skip` or comments inside a wrapper
    already: int = 0  # planned site already wrapped in the source
    updated: int = 0  # wrapped already, with another guard: the plan's guard written
    missing: list[WrapSite] = field(default_factory=list)  # planned site with no call at its span


@dataclass(frozen=True)
class _Context:
    marks: Suppressions
    skipped_classes: frozenset[str]  # classes of this file under the pragma, by name


def _context(source: Source) -> _Context:
    if "autograph-cg:" not in source.text:
        return _Context(Suppressions(), frozenset())
    marks = scan(list(source.lines))  # its lines as split: a rewritten file always holds the import's marker
    if not marks.skips:  # `ignore` marks only (or the marker of rewrite's import): nothing is kept as it is
        return _Context(marks, frozenset())
    classes = set()
    for node in nodes.walk(source.tree):
        if isinstance(node, ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            # The decorators, the `class` line and the rest of the header, up to the first body statement.
            if any(marks.skipped(n) for n in range(first, max(node.body[0].lineno, node.lineno + 1))):
                classes.add(node.name)
    return _Context(marks, frozenset(classes))


class _Scoped(cst.CSTTransformer):
    """Tracks whether the current node sits under a skip pragma (its statement or an enclosing class)."""

    def __init__(self, positions: Positions | None, offset: int, context: _Context) -> None:
        super().__init__()
        self.positions = positions
        self.offset = offset  # lines above the one-statement module
        self.context = context
        self.depth = 0  # how many enclosing scopes carry the pragma
        self.counts = Counts()
        self.header: cst.ClassDef | None = None  # the `class _:` a nested statement was parsed under

    def enter(self, classes: tuple[str, ...], header: cst.ClassDef | None) -> None:
        """Edit a statement that sits in `classes` (some may carry the pragma), parsed under `header` if nested."""
        self.depth = sum(c in self.context.skipped_classes for c in classes)
        self.header = header

    def _marked(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.ClassDef):
            return node.name.value in self.context.skipped_classes
        if self.positions is None or not self.context.marks.skips:
            return False
        r = self.positions[node]
        return any(self.context.marks.skipped(n + self.offset) for n in range(r.start.line, r.end.line + 1))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth += node is not self.header and self._marked(node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self.depth -= original_node is not self.header and self._marked(original_node)
        return updated_node

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.depth += self._marked(node)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        self.depth -= self._marked(original_node)
        return updated_node

    def skipped(self, constructed: str) -> bool:
        return self.depth > 0 or constructed in self.context.skipped_classes


class _Wrap(_Scoped):
    def __init__(
        self,
        positions: Positions,
        offset: int,
        context: _Context,
        todo: Mapping[Key, WrapSite],
        seen: set[Key],
        settings: WrapSettings,
    ) -> None:
        super().__init__(positions, offset, context)
        self.call_positions: Positions = positions  # always resolved here: sites are found by position
        self.todo = todo
        self.seen = seen  # shared by the statements of one file, to find sites that match no call
        self.settings = settings
        self.inside_wrapper: set[int] = set()
        self.keys = sorted(todo)

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Nodes whose range holds no site's range hold no site: their children are left unvisited (and unrebuilt)."""
        descend = super().on_visit(node)
        r = self.call_positions.get(node)
        if not descend or r is None:
            return descend
        start, end = (r.start.line + self.offset, r.start.column), (r.end.line + self.offset, r.end.column)
        for key in self.keys[bisect_left(self.keys, start) :]:  # the sites that start in the node, in order
            if key[:2] > end:
                return False
            if key[2:] <= end:
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        inner = cst_wrapped_call(node)
        if inner is not None:
            self.inside_wrapper.add(id(inner))

    def _key(self, node: cst.Call) -> Key:
        r = self.call_positions[node]
        return (r.start.line + self.offset, r.start.column, r.end.line + self.offset, r.end.column)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        site = self.todo.get(self._key(original_node))
        if site is None:
            inner = cst_wrapped_call(original_node)  # a wrapper: its call's site says whether its guard changes
            site = self.todo.get(self._key(inner)) if inner is not None else None
            if site is None:
                return updated_node
            if not site.update or self.skipped(site.wrapped_class.rsplit(".", 1)[-1]):
                self.counts.already += 1
                return updated_node
            self.counts.updated += 1
            return cst_guard(updated_node, site.guard)
        self.seen.add(self._key(original_node))
        if id(original_node) in self.inside_wrapper:
            return updated_node  # its wrapper is counted when it is left
        if self.skipped(site.wrapped_class.rsplit(".", 1)[-1]):
            self.counts.kept += 1
            return updated_node
        self.counts.changed += 1
        return build_wrapper(updated_node, self.settings, site.guard, site.wrapped_class)


class _Unwrap(_Scoped):
    """Descends only into the nodes that hold a call of the wrapper's name (`_holding`, read at the module): libcst
    rebuilds every node it visits, and nothing else of the statement can change."""

    holding: frozenset[int] = frozenset()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            self.holding = _holding(node)
        return super().on_visit(node) and id(node) in self.holding

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        inner = cst_wrapped_call(updated_node)
        if inner is None:
            return updated_node
        if self.skipped(_last_name(inner.func)) or _has_comment(updated_node, inner):
            self.counts.kept += 1
            return updated_node
        self.counts.changed += 1
        return unwrap(updated_node, inner)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """A node's children read from its fields, not in the order of the text: a libcst visit rebuilds each node it
    passes, five times the cost."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in fields(node))
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from (item for item in value if isinstance(item, cst.CSTNode))


def _holding(root: cst.CSTNode) -> frozenset[int]:
    """The ids of the nodes that are, or hold, a call of the wrapper's name: where undo can change something."""
    found: set[int] = set()
    _collect_holding(root, found)
    return frozenset(found)


def _collect_holding(node: cst.CSTNode, found: set[int]) -> bool:
    hit = isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == WRAPPER
    for child in _children(node):
        hit = _collect_holding(child, found) or hit
    if hit:
        found.add(id(node))
    return hit


def _has_comment(node: cst.CSTNode, outside: cst.CSTNode) -> bool:
    """Whether a comment sits in `node` but not in its descendant `outside` (a wrapper's own comments)."""
    return any(isinstance(child, cst.Comment) or _has_comment(child, outside) for child in _children(node) if child is not outside)


#: Whether a piece of a file has work for an edit: (its text, its first line, its last line).
Wanted = Callable[[str, int, int], bool]


def _edit_statements(
    source: Source, wanted: Wanted, make: Callable[[Positions | None, int], _Scoped], need_positions: bool
) -> tuple[list[str], Counts]:
    """Edit the statements that have work, each alone: the innermost that hold all the work of their block's
    statement (whose header and trailing comments have none). The texts of all top-level statements, in order."""
    total = Counts()
    return [_edit_within(source, st, wanted, make, need_positions, total) for st in source.statements], total


def _edit_within(
    source: Source, statement: Statement, wanted: Wanted, make: Callable[[Positions | None, int], _Scoped], need_positions: bool, total: Counts
) -> str:
    """A statement's new text: edited whole, or through the statements of its block. A function of the module, not a
    closure that calls itself: such a closure is a reference cycle, and would keep the file's syntax tree for the
    cyclic collector to find (most of a rewrite's collector time)."""
    if not wanted(statement.text, statement.line, statement.end):
        return statement.text
    body = source.body(statement)
    if body is None or wanted(body.head, statement.line, body.members[0].line - 1) or wanted(body.tail, body.members[-1].end + 1, statement.end):
        return _edit(source, statement, make, need_positions, total)
    inner = "".join(_edit_within(source, m, wanted, make, need_positions, total) for m in body.members)
    return body.head + inner + body.tail


def _edit(source: Source, statement: Statement, make: Callable[[Positions | None, int], _Scoped], need_positions: bool, total: Counts) -> str:
    """One statement parsed alone, edited, and its new text (its own text when nothing changed)."""
    single = source.parse(statement)
    positions = MetadataWrapper(single, unsafe_skip_copy=True).resolve(PositionProvider) if need_positions else None
    transformer = make(positions, source.offset(statement))
    header = single.body[0] if statement.nested else None
    transformer.enter(statement.classes, header if isinstance(header, cst.ClassDef) else None)
    edited = single.visit(transformer)
    c = transformer.counts
    total.changed += c.changed
    total.kept += c.kept
    total.already += c.already
    total.updated += c.updated
    return source.text_of(statement, edited) if c.changed or c.updated else statement.text


def wrap_sites(source: Source, sites: Sequence[WrapSite], settings: WrapSettings) -> tuple[list[str], Counts]:
    """Wrap each site's call: the texts of the file's statements, those holding sites edited."""
    context = _context(source)
    lines = sorted({s.span.line for s in sites})
    todo: dict[Key, WrapSite] = {site_key(s): s for s in sites}
    seen: set[Key] = set()

    def make(positions: Positions | None, offset: int) -> _Scoped:
        assert positions is not None
        return _Wrap(positions, offset, context, todo, seen, settings)

    texts, counts = _edit_statements(source, lambda text, first, last: any(first <= n <= last for n in lines), make, need_positions=True)
    counts.missing = [s for k, s in todo.items() if k not in seen]
    return texts, counts


def unwrap_all(source: Source) -> tuple[list[str], Counts]:
    """Take off every wrapper of rewrite's shape that no pragma protects (positions only when pragmas exist)."""
    context = _context(source)
    return _edit_statements(
        source,
        lambda text, first, last: WRAPPER in text,
        lambda positions, offset: _Unwrap(positions, offset, context),
        need_positions=bool(context.marks.skips),
    )
