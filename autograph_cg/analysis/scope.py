"""Module and class scopes: name resolution through imports, positions in characters, layer attributes."""

from __future__ import annotations

import ast
from typing import Callable

from autograph_cg.analysis import nodes
from autograph_cg.analysis.kinds import HOST, LAYER, UNKNOWN
from autograph_cg.analysis.suppressions import Suppressions
from autograph_cg.findings import Span
from autograph_cg.sources import lines_of


def statement_calls(value: ast.expr) -> list[ast.Call]:
    """The calls an expression statement makes for their effect: `f(x)`, and each of `f(x), g(y)` (a trailing
    comma, as in `self.add_module("norm", Norm()),`, makes the statement a tuple of its calls)."""
    if isinstance(value, ast.Call):
        return [value]
    if isinstance(value, ast.Tuple):
        return [e for e in value.elts if isinstance(e, ast.Call)]
    return []


def dotted_name(node: ast.expr, base_of: Callable[[str], str | None]) -> str | None:
    """`F.gelu` -> "paddle.nn.functional.gelu", given what the leading name stands for; None if unknown."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = base_of(node.id)
    if base is None:
        return None
    return ".".join([base, *reversed(parts)]) if parts else base


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    """`except ImportError`, `except (ImportError, ...)`, `except ModuleNotFoundError`, `except Exception`, bare."""
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(getattr(n, "id", getattr(n, "attr", "")) in ("ImportError", "ModuleNotFoundError", "Exception") for n in names)


class ModuleScope:
    """What one file knows about names at module level, and how to turn AST positions into editor positions."""

    def __init__(self, path: str, module: str, is_package: bool, text: str, tree: ast.Module) -> None:
        self.path = path
        self.module = module
        self.is_package = is_package
        self.text = text
        self._lines: list[str] | None = None
        self._ascii = text.isascii()
        self.imports: dict[str, str] = {}
        self.definitions: set[str] = set()  # module-level def/class names
        self.variables: set[str] = set()  # module-level assigned names
        self.star_imports: list[str] = []  # modules whose public names `from m import *` brings in
        self.optional_imports: list[str] = []  # imported in `try:` with an `except ImportError:` fallback
        self.framework: str | None = None
        self.suppressions = Suppressions()
        self.functions: dict[str, ast.FunctionDef] = {}  # module-level functions, by name
        self._redefined: set[str] = set()
        self.returns: dict[str, int | tuple[int, ...] | None] = {}  # what each returns, as far as asked (context.py)
        for statement in tree.body:
            self._scan(statement)

    def _scan(self, statement: ast.stmt) -> None:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names):
                self.star_imports.append(self.import_base(statement))
            for alias, qual in self.import_bindings(statement):
                self.imports[alias] = qual
                root = qual.split(".", 1)[0]
                if self.framework is None and root in ("paddle", "torch"):
                    self.framework = root
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.definitions.add(statement.name)
            if isinstance(statement, ast.FunctionDef):
                self._function(statement)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for node in nodes.walk(target):
                    if isinstance(node, ast.Name):
                        self.variables.add(node.id)
        elif isinstance(statement, (ast.If, ast.Try)):  # guarded imports: try/except ImportError, if TYPE_CHECKING
            optional = isinstance(statement, ast.Try) and any(_catches_import_error(h) for h in statement.handlers)
            for block in (statement.body, statement.orelse, getattr(statement, "finalbody", []), *[h.body for h in getattr(statement, "handlers", [])]):
                for inner in block:
                    self._scan(inner)
                    if optional and block is statement.body and isinstance(inner, (ast.Import, ast.ImportFrom)):
                        self.optional_imports.extend(qual for _, qual in self.import_bindings(inner))

    def _function(self, node: ast.FunctionDef) -> None:
        """A function defined once, undecorated: what calls of its name run (defined twice, say per version, neither)."""
        name = node.name
        if name in self.functions or name in self._redefined or node.decorator_list:
            self.functions.pop(name, None)
            self._redefined.add(name)
        else:
            self.functions[name] = node

    # ----- names ---------------------------------------------------------------------------------------------------
    def import_bindings(self, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
        bindings = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bindings.append((alias.asname, alias.name))
                else:
                    head = alias.name.split(".", 1)[0]
                    bindings.append((head, head))
            return bindings
        base = self.import_base(node)
        for alias in node.names:
            if alias.name == "*":
                continue
            bindings.append((alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name))
        return bindings

    def import_base(self, node: ast.ImportFrom) -> str:
        """The module `from X import ...` reads from, relative imports resolved against this module."""
        base = node.module or ""
        if node.level:
            package = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            keep = len(package) - (node.level - 1)
            prefix = ".".join(package[: max(keep, 0)])
            base = ".".join(p for p in (prefix, base) if p)
        return base

    def qualify_name(self, name: str) -> str | None:
        qual = self.imports.get(name)
        if qual is not None:
            return qual
        if name in self.definitions:
            return f"{self.module}.{name}"
        return None

    def global_kind(self, name: str) -> int:
        return UNKNOWN

    def is_global_variable(self, name: str) -> bool:
        return name in self.variables and name not in self.imports and name not in self.definitions

    # ----- text and positions ----------------------------------------------------------------------------------
    @property
    def lines(self) -> list[str]:
        """Lines as Python counts them: only \\n, \\r\\n and \\r end a line (not form feeds, unlike splitlines)."""
        if self._lines is None:
            self._lines = lines_of(self.text)
        return self._lines

    def line_text(self, line: int) -> str:
        lines = self.lines
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def _column(self, line: int, byte_col: int) -> int:
        if self._ascii:
            return byte_col + 1
        lines = self.lines
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if text.isascii():
            return byte_col + 1
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace")) + 1

    def span(self, node: ast.AST) -> Span:
        line = node.lineno  # type: ignore[attr-defined]
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        col = node.col_offset  # type: ignore[attr-defined]
        return Span(line, self._column(line, col), end_line, self._column(end_line, end_col if end_col is not None else col))

    def snippet(self, node: ast.AST) -> str:
        """A short rendering of a callee for messages: dotted names cheaply, anything else unparsed."""
        parts: list[str] = []
        current = node
        while isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        if isinstance(current, ast.Name):
            parts.append(current.id)
            return ".".join(reversed(parts))
        text = ast.unparse(node)
        return text if len(text) <= 60 else text[:57] + "..."


class ClassScope:
    """What `__init__` tells about `self.<attr>`: sublayers, parameters and buffers, host configuration."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname
        self.attr_kinds: dict[str, int] = {"training": HOST}
        self.host_methods: frozenset[str] = frozenset()  # its own methods annotated to return host values

    def attr_kind(self, attr: str) -> int:
        return self.attr_kinds.get(attr, UNKNOWN)

    def set(self, attr: str, kind: int) -> None:
        previous = self.attr_kinds.get(attr)
        if previous is None or previous == kind:
            self.attr_kinds[attr] = kind
        elif LAYER in (previous, kind):
            self.attr_kinds[attr] = LAYER
        else:
            self.attr_kinds[attr] = UNKNOWN
