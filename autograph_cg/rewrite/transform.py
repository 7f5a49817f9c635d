"""The libcst edits: wrap the planned constructor calls, or take rewrite's wrappers off again.

Sites are found by exact position: libcst's `PositionProvider` range of a call (parentheses excluded) equals
the plan's span shifted to 0-based columns. `# autograph-cg: skip` on the statement, on an enclosing class or
on the class being constructed keeps a site as it is, in both directions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from autograph_cg.analysis.plan import WrapSite
from autograph_cg.analysis.suppressions import Suppressions, scan
from autograph_cg.rewrite.shape import WrapSettings, build_wrapper, cst_wrapped_call, unwrap

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the tokenizer's line breaks, unlike str.splitlines()

Key = tuple[int, int, int, int]
Positions = Mapping[cst.CSTNode, CodeRange]


def site_key(site: WrapSite) -> Key:
    s = site.span
    return (s.line, s.col - 1, s.end_line, s.end_col - 1)


def _key(r: CodeRange) -> Key:
    return (r.start.line, r.start.column, r.end.line, r.end.column)


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
    missing: list[WrapSite] = field(default_factory=list)  # planned site with no call at its span


def class_skipped(node: cst.ClassDef, line: int, marks: Suppressions) -> bool:
    """The pragma on the `class` line, its header's trailing comment, or a decorator line above it."""
    first = line - len(node.decorators)
    if any(marks.skipped(n) for n in range(first, line + 1)):
        return True
    header = node.body.header if isinstance(node.body, cst.IndentedBlock) else node.body.trailing_whitespace
    return header.comment is not None and bool(scan([header.comment.value]).skips)


class _Scoped(cst.CSTTransformer):
    """Tracks whether the current node sits under a skip pragma (its statement or an enclosing class)."""

    def __init__(self, positions: Positions | None, marks: Suppressions) -> None:
        super().__init__()
        self.positions = positions
        self.marks = marks
        self.skipped_classes: set[str] = set()
        if positions is not None and marks.skips:
            self.skipped_classes = {
                n.name.value for n in positions if isinstance(n, cst.ClassDef) and class_skipped(n, positions[n].start.line, marks)
            }
        self.depth = 0  # how many enclosing scopes carry the pragma
        self.counts = Counts()

    def _marked(self, node: cst.CSTNode) -> bool:
        if self.positions is None or not self.marks.skips:
            return False
        if isinstance(node, cst.ClassDef):
            return node.name.value in self.skipped_classes
        r = self.positions[node]
        return any(self.marks.skipped(n) for n in range(r.start.line, r.end.line + 1))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth += self._marked(node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self.depth -= self._marked(original_node)
        return updated_node

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.depth += self._marked(node)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        self.depth -= self._marked(original_node)
        return updated_node

    def skipped(self, constructed: str) -> bool:
        return self.depth > 0 or constructed in self.skipped_classes


class _Wrap(_Scoped):
    def __init__(self, positions: Positions, marks: Suppressions, sites: Sequence[WrapSite], settings: WrapSettings) -> None:
        super().__init__(positions, marks)
        self.call_positions: Positions = positions  # always resolved here: sites are found by position
        self.todo = {site_key(s): s for s in sites}
        self.settings = settings
        self.inside_wrapper: set[int] = set()
        self.seen: set[Key] = set()

    def visit_Call(self, node: cst.Call) -> None:
        inner = cst_wrapped_call(node)
        if inner is not None:
            self.inside_wrapper.add(id(inner))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        key = _key(self.call_positions[original_node])
        site = self.todo.get(key)
        if site is None:
            return updated_node
        self.seen.add(key)
        if id(original_node) in self.inside_wrapper:
            self.counts.already += 1
            return updated_node
        if self.skipped(site.wrapped_class.rsplit(".", 1)[-1]):
            self.counts.kept += 1
            return updated_node
        self.counts.changed += 1
        return build_wrapper(updated_node, self.settings)


class _Unwrap(_Scoped):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        inner = cst_wrapped_call(updated_node)
        if inner is None:
            return updated_node
        if self.skipped(_last_name(inner.func)) or len(m.findall(updated_node, m.Comment())) != len(
            m.findall(inner, m.Comment())
        ):
            self.counts.kept += 1
            return updated_node
        self.counts.changed += 1
        return unwrap(updated_node, inner)


def _marks(text: str) -> Suppressions:
    return scan(_LINE_BREAK.split(text)) if "autograph-cg:" in text else Suppressions()


def wrap_sites(module: cst.Module, text: str, sites: Sequence[WrapSite], settings: WrapSettings) -> tuple[cst.Module, Counts]:
    """Wrap each site's call; `text` is the decoded source, for the pragmas."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    transformer = _Wrap(wrapper.resolve(PositionProvider), _marks(text), sites, settings)
    result = wrapper.module.visit(transformer)
    transformer.counts.missing = [s for k, s in transformer.todo.items() if k not in transformer.seen]
    return result, transformer.counts


def unwrap_all(module: cst.Module, text: str) -> tuple[cst.Module, Counts]:
    """Take off every wrapper of rewrite's shape that no pragma protects (positions only when pragmas exist)."""
    marks = _marks(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider) if marks.skips else None
    transformer = _Unwrap(positions, marks)
    return module.visit(transformer), transformer.counts
