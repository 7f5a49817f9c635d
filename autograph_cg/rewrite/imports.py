"""Where the runtime import goes, how it is added, and how undo takes exactly it away again.

The import joins the first block of third-party/first-party imports at the position isort would give it
(after plain `import x` lines, among `from` lines by module name) when the block is already sorted, else at
its end. Without such a block it starts a new one after the standard-library imports, `from __future__`
imports or the module docstring. Top-level statements only: never inside `if TYPE_CHECKING:` or `try:`.
Undo inverts the placement from the shape alone (see `remove_import`), and the safety check verifies that.

The file's top-level statements are read from Python's own parse (`source.Statement`): what is an import line,
which imports it holds, which statements have blank lines or comments above them. libcst parses only the
statements whose text holds the wrapper's name or the runtime's, to read what they bind or use, and the new import
is text put between statements, with the file's line break.
"""

from __future__ import annotations

import ast
import sys
from bisect import bisect_right
from collections.abc import Collection, Sequence
from dataclasses import replace

import libcst as cst

from autograph_cg.rewrite.shape import IMPORT_LINE, MARKER, RUNTIME_MODULE, WRAPPER, ast_is_runtime_import
from autograph_cg.rewrite.source import LINE_BREAK, Source, Statement, find_all

_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}


class ImportConflict(Exception):
    """`CUDAGraphedLayer` already names something else in this module; wrapping would call the wrong thing."""


def _dotted(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _category(node: ast.stmt) -> str:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return "local"
        module = node.module or ""
    else:
        module = node.names[0].name  # type: ignore[attr-defined]
    return "stdlib" if module.split(".")[0] in _STDLIB else "third"


def _sort_key(node: ast.stmt) -> tuple[int, str]:
    """isort's default order inside a section: plain imports first, then `from` imports, by module name."""
    if isinstance(node, ast.ImportFrom):
        return (1, (node.module or "").lower())
    return (0, node.names[0].name.lower())  # type: ignore[attr-defined]


def _bindings(stmt: cst.CSTNode) -> list[tuple[str, str]]:
    """(name, what binds it) for the names one top-level statement binds, nested blocks included."""
    if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
        return [(stmt.name.value, "a definition")]
    found: list[tuple[str, str]] = []
    for node in find_all(stmt, (cst.ImportFrom, cst.Import, cst.AssignTarget, cst.AnnAssign)):
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


def has_runtime_import(source: Source) -> bool:
    """True when the wrapper name already refers to our runtime; raises ImportConflict when it refers elsewhere."""
    if WRAPPER not in source.text and RUNTIME_MODULE not in source.text:
        return False
    ours = False
    for statement in source.statements:
        if WRAPPER not in statement.text and RUNTIME_MODULE not in statement.text:
            continue
        node = statement.nodes[0]
        if len(statement.nodes) == 1 and isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            found = [(node.name, "a definition")]  # what a definition binds is its name: no need to parse it
        else:
            found = [b for stmt in source.parse(statement).body for b in _bindings(stmt)]
        for name, origin in found:
            if name == "*" and origin == RUNTIME_MODULE:
                ours = True
            elif name == WRAPPER:
                if origin != f"{RUNTIME_MODULE}.{WRAPPER}":
                    raise ImportConflict(f"{WRAPPER} is already bound to {origin} in this module")
                ours = True
    return ours


def _is_docstring(source: Source, statement: Statement) -> bool:
    """A lone string literal (libcst's SimpleString or ConcatenatedString; one f-string alone is not one)."""
    if len(statement.nodes) != 1 or not isinstance(statement.nodes[0], ast.Expr):
        return False
    value = statement.nodes[0].value
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (str, bytes))
    if not isinstance(value, ast.JoinedStr):
        return False
    node = source.parse(statement).body[0]  # `f"a"` or `"a" f"b"`: only libcst tells them apart
    return isinstance(node, cst.SimpleStatementLine) and isinstance(node.body[0].value, cst.ConcatenatedString)  # type: ignore[attr-defined]


def _groups(body: Sequence[Statement]) -> list[tuple[int, int]]:
    """[start, end) index ranges of runs of import lines with no blank line or comment between them."""
    groups: list[tuple[int, int]] = []
    for i, statement in enumerate(body):
        if not statement.imports:
            continue
        if groups and groups[-1][1] == i and not statement.lead:
            groups[-1] = (groups[-1][0], i + 1)
        else:
            groups.append((i, i + 1))
    return groups


def _placement(source: Source) -> tuple[int, str]:
    """(index to insert at, how): "start" or "inside" of a block, or "section": a new block after `index - 1`."""
    body = source.statements
    groups = _groups(body)
    cats = [[_category(n) for i in range(a, b) for n in body[i].nodes] for a, b in groups]
    for (start, end), kinds in zip(groups, cats):
        if "third" in kinds:
            keys = [_sort_key(body[i].nodes[0]) for i in range(start, end)]
            at = bisect_right(keys, (1, RUNTIME_MODULE.lower())) if keys == sorted(keys) else len(keys)
            return start + at, "start" if at == 0 else "inside"
    first_local = next((g for g, kinds in zip(groups, cats) if "local" in kinds), None)
    std = [g for g, kinds in zip(groups, cats) if set(kinds) <= {"stdlib"} and (first_local is None or g[0] < first_local[0])]
    if std:
        return std[-1][1], "section"
    if body and _is_docstring(source, body[0]):
        return 1, "section"
    return 0, "inside"


def _first_use(source: Source, texts: Sequence[str], users: Collection[int] = ()) -> int:
    """Index of the first top-level statement that uses the wrapper name (in its text as edited; `users` are known
    to): the import must come before it."""
    for i, (statement, text) in enumerate(zip(source.statements, texts)):
        if i in users:
            return i
        if not statement.imports and WRAPPER in text:
            if any(n.value == WRAPPER for stmt in source.parse(replace(statement, text=text)).body for n in find_all(stmt, cst.Name)):
                return i
    return len(texts)


def add_import(source: Source, texts: Sequence[str], users: Collection[int]) -> list[str]:
    """The statements' texts with the marked runtime import inserted before the first statement that uses the
    wrapper (`users`: statements known to, the ones just edited). Callers check `has_runtime_import` first."""
    body = list(texts)
    index, how = _placement(source)
    use = _first_use(source, texts, users)
    if use < index:
        index, how = use, "before"
    new = IMPORT_LINE.replace("\n", source.newline)
    nxt = source.statements[index] if index < len(body) else None
    if how == "start" and nxt is not None:
        # First line of a block: take over the block's leading blank lines and comments.
        lead, rest = nxt.parts()
        new = lead + new
        body[index] = rest
    elif how == "section" and not (nxt is not None and nxt.imports and not nxt.lead):
        new = source.newline + new
    body.insert(index, new)  # before a statement (one uses the wrapper), so after a line break
    return body


def _is_marked_import(statement: Statement) -> bool:
    """rewrite's own import line: the one import, of the wrapper alone, with the marker as its comment."""
    if len(statement.nodes) != 1 or not ast_is_runtime_import(statement.nodes[0]):
        return False
    node = statement.nodes[0]
    lines = LINE_BREAK.split(statement.text)
    last = lines[statement.lead + (node.end_lineno or node.lineno) - node.lineno]
    after = last.encode("utf-8")[node.end_col_offset or 0 :].decode("utf-8")
    return after.lstrip(" \t\f") == MARKER


def remove_import(source: Source, texts: Sequence[str]) -> tuple[list[str], bool]:
    """Drop the marked import once nothing uses the wrapper name; its blank lines go the way they came."""
    body = list(texts)
    index = next((i for i, s in enumerate(source.statements) if _is_marked_import(s)), None)
    if index is None or _first_use(source, texts) < len(body):
        return body, False
    marked = source.statements[index]
    body.pop(index)
    nxt = source.statements[index + 1] if index + 1 < len(source.statements) else None
    if marked.lead and nxt is not None and nxt.imports and not nxt.lead:
        body[index] = marked.parts()[0] + body[index]
    return body, True
