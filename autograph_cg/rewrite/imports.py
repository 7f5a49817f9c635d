"""Where the runtime import goes, how it is added, and how undo takes exactly it away again.

The import joins the first block of third-party/first-party imports at the position isort would give it
(after plain `import x` lines, among `from` lines by module name) when the block is already sorted, else at
its end. Without such a block it starts a new one after the standard-library imports, `from __future__`
imports or the module docstring. Top-level statements only: never inside `if TYPE_CHECKING:` or `try:`.
Undo inverts the placement from the shape alone (see `remove_import`), and the safety check verifies that.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from autograph_cg.rewrite.shape import IMPORT_LINE, MARKER, RUNTIME_MODULE, WRAPPER

_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}


class ImportConflict(Exception):
    """`CUDAGraphedLayer` already names something else in this module; wrapping would call the wrong thing."""


def _dotted(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _imports(stmt: cst.CSTNode) -> list[cst.Import | cst.ImportFrom] | None:
    """The import statements of a line made only of imports, else None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return None
    if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
        return list(stmt.body)  # type: ignore[arg-type]
    return None


def _category(node: cst.Import | cst.ImportFrom) -> str:
    if isinstance(node, cst.ImportFrom):
        if node.relative:
            return "local"
        module = _dotted(node.module)
    else:
        module = _dotted(node.names[0].name)
    return "stdlib" if module.split(".")[0] in _STDLIB else "third"


def _sort_key(node: cst.Import | cst.ImportFrom) -> tuple[int, str]:
    """isort's default order inside a section: plain imports first, then `from` imports, by module name."""
    if isinstance(node, cst.ImportFrom):
        return (1, _dotted(node.module).lower())
    return (0, _dotted(node.names[0].name).lower())


def _bindings(stmt: cst.CSTNode) -> list[tuple[str, str]]:
    """(name, what binds it) for the names one top-level statement binds, nested blocks included."""
    if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
        return [(stmt.name.value, "a definition")]
    found: list[tuple[str, str]] = []
    for node in m.findall(stmt, m.ImportFrom() | m.Import() | m.AssignTarget() | m.AnnAssign()):
        if isinstance(node, cst.ImportFrom):
            origin = "." * len(node.relative) + _dotted(node.module)
            if isinstance(node.names, cst.ImportStar):
                found.append(("*", origin))
            else:
                found.extend((a.evaluated_alias or a.evaluated_name, f"{origin}.{a.evaluated_name}") for a in node.names)
        elif isinstance(node, cst.Import):
            found.extend((a.evaluated_alias or "", f"import {a.evaluated_name}") for a in node.names if a.asname)
        elif isinstance(node.target, cst.Name):
            found.append((node.target.value, "an assignment"))
    return found


def has_runtime_import(module: cst.Module, text: str) -> bool:
    """True when the wrapper name already refers to our runtime; raises ImportConflict when it refers elsewhere."""
    if WRAPPER not in text and RUNTIME_MODULE not in text:
        return False
    ours = False
    for stmt in module.body:
        code = module.code_for_node(stmt)
        if WRAPPER not in code and RUNTIME_MODULE not in code:
            continue
        for name, origin in _bindings(stmt):
            if name == "*" and origin == RUNTIME_MODULE:
                ours = True
            elif name == WRAPPER:
                if origin != f"{RUNTIME_MODULE}.{WRAPPER}":
                    raise ImportConflict(f"{WRAPPER} is already bound to {origin} in this module")
                ours = True
    return ours


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _groups(body: Sequence[cst.BaseStatement]) -> list[tuple[int, int]]:
    """[start, end) index ranges of runs of import lines with no blank line or comment between them."""
    groups: list[tuple[int, int]] = []
    for i, stmt in enumerate(body):
        if _imports(stmt) is None:
            continue
        if groups and groups[-1][1] == i and not stmt.leading_lines:  # type: ignore[union-attr]
            groups[-1] = (groups[-1][0], i + 1)
        else:
            groups.append((i, i + 1))
    return groups


def _placement(body: Sequence[cst.BaseStatement]) -> tuple[int, str]:
    """(index to insert at, how): "start" or "inside" of a block, or "section": a new block after `index - 1`."""
    groups = _groups(body)
    cats = [[_category(n) for i in range(a, b) for n in _imports(body[i]) or ()] for a, b in groups]
    for (start, end), kinds in zip(groups, cats):
        if "third" in kinds:
            keys = [_sort_key((_imports(body[i]) or [])[0]) for i in range(start, end)]
            at = bisect_right(keys, (1, RUNTIME_MODULE.lower())) if keys == sorted(keys) else len(keys)
            return start + at, "start" if at == 0 else "inside"
    first_local = next((g for g, kinds in zip(groups, cats) if "local" in kinds), None)
    std = [g for g, kinds in zip(groups, cats) if set(kinds) <= {"stdlib"} and (first_local is None or g[0] < first_local[0])]
    if std:
        return std[-1][1], "section"
    if body and _is_docstring(body[0]):
        return 1, "section"
    return 0, "inside"


def _first_use(module: cst.Module) -> int:
    """Index of the first top-level statement that uses the wrapper name: the import must come before it."""
    for i, stmt in enumerate(module.body):
        if _imports(stmt) is None and WRAPPER in module.code_for_node(stmt) and m.findall(stmt, m.Name(WRAPPER)):
            return i
    return len(module.body)


def add_import(module: cst.Module) -> cst.Module:
    """The module with the marked runtime import inserted (callers check `has_runtime_import` first)."""
    body = list(module.body)
    index, how = _placement(body)
    use = _first_use(module)
    if use < index:
        index, how = use, "before"
    new = cst.parse_statement(IMPORT_LINE)
    assert isinstance(new, cst.SimpleStatementLine)
    nxt = body[index] if index < len(body) else None
    nxt_is_import = nxt is not None and _imports(nxt) is not None
    if how == "start":
        # First line of a block: take over the block's leading blank lines and comments.
        new = new.with_changes(leading_lines=nxt.leading_lines)
        body[index] = nxt.with_changes(leading_lines=())
    elif how == "section" and not (nxt_is_import and not nxt.leading_lines):
        new = new.with_changes(leading_lines=(cst.EmptyLine(),))
    body.insert(index, new)
    return module.with_changes(body=body)


def _is_marked_import(stmt: cst.CSTNode) -> bool:
    if _imports(stmt) is None or len(stmt.body) != 1:  # type: ignore[union-attr]
        return False
    node = stmt.body[0]  # type: ignore[union-attr]
    comment = stmt.trailing_whitespace.comment  # type: ignore[union-attr]
    return (
        isinstance(node, cst.ImportFrom)
        and not node.relative
        and _dotted(node.module) == RUNTIME_MODULE
        and not isinstance(node.names, cst.ImportStar)
        and [(a.evaluated_name, a.asname) for a in node.names] == [(WRAPPER, None)]
        and comment is not None
        and comment.value == MARKER
    )


def remove_import(module: cst.Module) -> tuple[cst.Module, bool]:
    """Drop the marked import once nothing uses the wrapper name; its blank lines go the way they came."""
    body = list(module.body)
    index = next((i for i, s in enumerate(body) if _is_marked_import(s)), None)
    if index is None or _first_use(module) < len(body):
        return module, False
    marked = body.pop(index)
    nxt = body[index] if index < len(body) else None
    if marked.leading_lines and nxt is not None and _imports(nxt) is not None and not nxt.leading_lines:
        body[index] = nxt.with_changes(leading_lines=marked.leading_lines)
    return module.with_changes(body=body), True
