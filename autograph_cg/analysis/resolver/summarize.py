"""Syntax tree → scope summaries: one pass over the statements of each body, expressions only where values flow.

Framework calls are cut short (a tensor, or an instance of the framework class) except containers, whose
items matter; operators and comparisons are host or tensor values, never followed.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis import nodes
from autograph_cg.analysis.devices import on_cuda
from autograph_cg.analysis.scope import ModuleScope, dotted_name, statement_calls
from autograph_cg.analysis.resolver.summaries import DYNAMIC, HOST, ITEMS, MODULE_SCOPE, SELF, TENSOR, Expr, ScopeSummary, lambda_scope, unknown

#: Calls whose arguments the solver reads (they pass values through) but which bind no package parameter.
#: What rewrite wraps sites in: a wrapped layer runs the layer it wraps.
RUNTIME_WRAPPER = "autograph_cg.runtime.CUDAGraphedLayer"
PASS_THROUGH = frozenset(
    {
        "functools.partial", "copy.deepcopy", "copy.copy", "collections.OrderedDict", "typing.cast",
        "itertools.repeat", "itertools.chain", "builtins.dict", "builtins.list", "builtins.tuple", "builtins.set",
        "builtins.frozenset", "builtins.sorted", "builtins.reversed", "builtins.zip", "builtins.enumerate",
        "builtins.iter", "builtins.next", "builtins.getattr", "builtins.filter", "builtins.map",
        "dataclasses.replace", "dataclasses.field", RUNTIME_WRAPPER,
    }
)  # fmt: skip
_BUILTINS = frozenset(name.rsplit(".", 1)[1] for name in PASS_THROUGH if name.startswith("builtins."))
_HOST_BUILTINS = frozenset(fw.HOST_BUILTINS) - _BUILTINS
_MAX_CONST = 64
_ADDERS = frozenset({"append", "add", "insert"})
_EXTENDERS = frozenset({"extend", "update"})
_REGISTER_LAYER = frozenset({"add_module", "add_sublayer", "register_module"})
#: The registration whose value is the layer registered.
_REGISTER_RETURNS = "add_sublayer"
_REGISTER_TENSOR = frozenset({"register_buffer", "register_parameter", "create_parameter"})

Qualify = Callable[[str], "str | None"]
_ORDER = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}


class _Scope:
    """A summary being built."""

    __slots__ = (
        "name", "parent", "self_name", "params", "locals", "returned", "self_attrs", "calls", "nested", "conditions",
        "globals", "global_writes", "lambdas", "outer", "current", "top",
    )  # fmt: skip

    def __init__(
        self, name: str, parent: str | None, self_name: str | None, params: frozenset[str] | None = None, lambdas: bool = True,
        outer: _Scope | None = None,
    ) -> None:
        self.name = name
        self.outer = outer  # the function a closure is written in, being read (its names are bound so far)
        self.lambdas = lambdas  # its lambdas are functions of their own (a scope that has a summary): else unknown
        self.parent = parent
        self.self_name = self_name
        self.params = params  # None: no function's scope (a module, a class body, an expression on its own)
        self.locals: dict[str, list[Expr]] = {}
        self.returned: dict[str, list[Expr]] = {}  # under the one key "": add() keeps the branch conditions
        self.self_attrs: dict[str, list[Expr]] = {}
        self.calls: list[Expr] = []
        self.nested: list[ScopeSummary] = []
        self.conditions: list[tuple[Expr, bool]] = []  # the `if` tests the statement being read sits under
        self.globals: set[str] = set()  # names a `global` statement makes module-level here
        self.global_writes: dict[str, list[Expr]] = {}
        self.current: dict[str, str] = {}  # a name read in versions (`_versioned`) -> the local its version is kept in
        self.top = False  # the statement being read is one of the function's own (under no test, in no loop)

    def add(self, table: dict[str, list[Expr]], key: str, value: Expr) -> None:
        value = self.conditioned(value)
        values = table.setdefault(key, [])
        if value not in values:
            values.append(value)

    def bind(self, name: str, value: Expr) -> None:
        """A local binding of `name`: what the name may hold anywhere, and in the version being read."""
        self.add(self.locals, name, value)
        version = self.current.get(name)
        if version is not None:
            self.add(self.locals, version, value)

    def rebind(self, target: ast.expr) -> None:
        """A plain assignment to a versioned name among the function's own statements starts its next version: what
        the function reads after it is what that assignment (and any binding after it) gives, not what came before."""
        for node in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else (target,)):
            if isinstance(node, ast.Name) and node.id in self.current:
                name = node.id
                self.current[name] = f"{name}#{int(self.current[name].rpartition('#')[2]) + 1}"
                self.locals[self.current[name]] = []

    def conditioned(self, value: Expr) -> Expr:
        """`value` as it flows from the statement being read: only when its branches run."""
        for condition, negated in reversed(self.conditions):
            value = ("if", condition, negated, value)
        return value

    def binds(self, name: str) -> bool:
        """Whether `name` is this function's own (a parameter, or assigned so far): else a store into what it holds
        goes where it is bound, an enclosing function or the module."""
        return self.params is None or name in self.locals or name in self.params


class Summarizer:
    """Builds summaries for one module. `qualify` resolves a module-level name through imports and definitions."""

    def __init__(self, scope: ModuleScope) -> None:
        self.module = scope.module
        self.qualify: Qualify = scope.qualify_name
        self.import_bindings = scope.import_bindings
        self.walrus = ":=" in scope.text  # no `(x := v)` to bind in most files: their tests are not walked for one
        self.lambdas: dict[str, ast.Lambda] = {}  # each lambda summarized, by its scope name (the walk reads them)

    def _qualify_expr(self, node: ast.expr) -> str | None:
        return dotted_name(node, self.qualify)

    # ----- entry points -------------------------------------------------------------------------------------------
    def module_scope(self, body: list[ast.stmt]) -> list[ScopeSummary]:
        """Module-level names: imports are left to the facts, definitions to their own summaries; then the
        summaries of the lambdas written there."""
        scope = _Scope(MODULE_SCOPE, None, None)
        self._statements(body, scope, module_level=True)
        return [self._finish(scope, None), *scope.nested]

    def expression(self, node: ast.expr, self_name: str | None, scope: str = "") -> Expr:
        """One expression on its own (a sublayer site's call), read as in a method whose instance is `self_name`;
        `scope`: the summarized scope it is written in, whose lambdas it names (else they are unknown)."""
        return self._expr(node, _Scope(scope, None, self_name, lambdas=bool(scope)))

    def condition(self, node: ast.expr, self_name: str | None) -> Expr:
        """An `if` test as a truth to evaluate: ("and"|"or", (e, ...)), ("not", e), ("is", e, negated) for a
        `None` check, ("eq", e, value, negated) or ("cmp", e, ">"|">="|"<"|"<=", number) against a constant,
        ("isa", e, types) for `isinstance(e, types)`, or any value (its truthiness)."""
        if isinstance(node, ast.BoolOp):
            return ("and" if isinstance(node.op, ast.And) else "or", tuple(self.condition(v, self_name) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ("not", self.condition(node.operand, self_name))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                return ("is", self.expression(node.left, self_name), isinstance(op, ast.IsNot))
            if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
                return ("eq", self.expression(node.left, self_name), right.value, isinstance(op, ast.NotEq))
            if type(op) in _ORDER and isinstance(right, ast.Constant) and isinstance(right.value, (int, float)):
                return ("cmp", self.expression(node.left, self_name), _ORDER[type(op)], right.value)
            return HOST
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
            and self.qualify("isinstance") is None and len(node.args) == 2 and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):  # fmt: skip
            return ("isa", self.expression(node.args[0], self_name), self.expression(node.args[1], self_name))
        return self.expression(node, self_name)

    def class_body(self, node: ast.ClassDef) -> dict[str, tuple[Expr, ...]]:
        """Class attributes (`expansion = 4`, `act_layer = nn.GELU`), as the class's own names."""
        scope = _Scope(f"{node.name}.<body>", None, None, lambdas=False)
        for statement in node.body:
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._statement(statement, scope, module_level=True)
            if (
                isinstance(statement, ast.AnnAssign) and statement.value is None and isinstance(statement.target, ast.Name)
                and isinstance(statement.annotation, (ast.Name, ast.Attribute))
            ):  # fmt: skip
                scope.locals[statement.target.id].append(("ann", self._expr(statement.annotation, scope)))
        return {k: tuple(v) for k, v in scope.locals.items()}

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, owner: bool, parent: str | None = None, outer: _Scope | None = None
    ) -> list[ScopeSummary]:
        """The summary of `node` (named `name` in its module), then those of the functions nested in it."""
        method = ""
        if owner:
            decorators = {getattr(d, "id", getattr(d, "attr", "")) for d in node.decorator_list}
            method = "static" if "staticmethod" in decorators else "class" if "classmethod" in decorators else "method"
        args = node.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        self_name = positional[0] if method == "method" and positional else None
        every = positional + [a.arg for a in args.kwonlyargs] + [a.arg for a in (args.vararg, args.kwarg) if a]
        scope = _Scope(name, parent, self_name, frozenset(every), outer=outer)
        if not owner and parent is None:
            for versioned in _versioned(node, every):
                scope.current[versioned] = f"{versioned}#0"
                scope.locals[f"{versioned}#0"] = [("arg", versioned)] if versioned in every else []
        self._statements(node.body, scope, module_level=False, top=True)
        return [self._finish(scope, node, method), *scope.nested]

    # ----- statements ----------------------------------------------------------------------------------------------
    def _finish(self, scope: _Scope, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None, method: str = "") -> ScopeSummary:
        if node is None:
            return ScopeSummary(
                scope.name,
                locals={k: tuple(v) for k, v in scope.locals.items()},
                calls=tuple(scope.calls),
            )
        args = node.args
        positional = [a for a in args.posonlyargs + args.args]
        defaults: dict[str, Expr] = {}
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            defaults[arg.arg] = self._expr(default, scope)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                defaults[arg.arg] = self._expr(default, scope)
        annotations = {
            a.arg: ("n", a.annotation.id) if isinstance(a.annotation, ast.Name) else self._expr(a.annotation, scope)
            for a in positional + args.kwonlyargs
            if isinstance(a.annotation, (ast.Name, ast.Attribute))
        }
        return ScopeSummary(
            name=scope.name,
            parent=scope.parent,
            params=tuple(a.arg for a in positional + args.kwonlyargs),
            positional=len(positional),
            defaults=defaults,
            annotations=annotations,
            vararg=args.vararg.arg if args.vararg else None,
            kwarg=args.kwarg.arg if args.kwarg else None,
            method=method,
            locals={k: tuple(v) for k, v in scope.locals.items()},
            returns=tuple(scope.returned.get("", ())),
            self_attrs={k: tuple(v) for k, v in scope.self_attrs.items()},
            global_writes={k: tuple(v) for k, v in scope.global_writes.items()},
            calls=tuple(scope.calls),
        )

    def _statements(self, body: list[ast.stmt], scope: _Scope, module_level: bool, top: bool = False) -> None:
        for statement in body:
            scope.top = top
            try:
                self._statement(statement, scope, module_level)
            except RecursionError:  # an expression nested deeper than the summary follows: it tells nothing
                continue

    def _statement(self, node: ast.stmt, scope: _Scope, module_level: bool) -> None:
        kind = type(node)
        if kind is ast.Assign:
            value = self._expr(node.value, scope)  # type: ignore[attr-defined]
            for target in node.targets:  # type: ignore[attr-defined]
                if scope.top:
                    scope.rebind(target)
                self._bind(target, value, scope)
        elif kind is ast.AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                value = self._expr(node.value, scope)  # type: ignore[attr-defined]
                if scope.top:
                    scope.rebind(node.target)  # type: ignore[attr-defined]
                self._bind(node.target, value, scope)  # type: ignore[attr-defined]
            elif module_level and isinstance(node.target, ast.Name):  # type: ignore[attr-defined]
                scope.locals.setdefault(node.target.id, [])  # a declared field (a dataclass's): its constructor sets it
        elif kind is ast.AugAssign:
            self._bind(node.target, self._expr(node.value, scope), scope)  # type: ignore[attr-defined]
        elif kind is ast.Expr:
            for call in statement_calls(node.value):  # type: ignore[attr-defined]
                self._call_statement(call, scope)
        elif kind is ast.Return:
            value = self._expr(node.value, scope) if node.value is not None else ("c", None)  # type: ignore[attr-defined]
            scope.add(scope.returned, "", value)
        elif kind is ast.For or kind is ast.AsyncFor:
            self._bind(node.target, ("i", self._expr(node.iter, scope)), scope)  # type: ignore[attr-defined]
            self._statements(node.body, scope, module_level)  # type: ignore[attr-defined]
            self._statements(node.orelse, scope, module_level)  # type: ignore[attr-defined]
        elif kind is ast.If:
            self._named(node.test, scope)  # type: ignore[attr-defined]
            runs = on_cuda(node.test, self._qualify_expr)  # type: ignore[attr-defined]
            condition = self.condition(node.test, scope.self_name) if runs is None else None  # type: ignore[attr-defined]
            if runs is not False:
                self._branch(node.body, condition, False, scope, module_level)  # type: ignore[attr-defined]
            if runs is not True:
                self._branch(node.orelse, condition, True, scope, module_level)  # type: ignore[attr-defined]
        elif kind is ast.While:
            self._named(node.test, scope)  # type: ignore[attr-defined]
            self._statements(node.body, scope, module_level)  # type: ignore[attr-defined]
            self._statements(node.orelse, scope, module_level)  # type: ignore[attr-defined]
        elif kind is ast.Global:
            scope.globals.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.With or kind is ast.AsyncWith:
            for item in node.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, unknown("a context manager's value"), scope)
            self._statements(node.body, scope, module_level)  # type: ignore[attr-defined]
        elif kind is ast.Try or kind.__name__ == "TryStar":
            self._statements(node.body, scope, module_level)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    scope.bind(handler.name, HOST)
                self._statements(handler.body, scope, module_level)
            self._statements(node.orelse, scope, module_level)  # type: ignore[attr-defined]
            self._statements(node.finalbody, scope, module_level)  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            if not module_level:
                for local, qual in self.import_bindings(node):  # type: ignore[arg-type]
                    scope.bind(local, ("g", qual))
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            if not module_level:
                nested = f"{scope.name}.<locals>.{node.name}"  # type: ignore[attr-defined]
                scope.bind(node.name, ("fn", nested))  # type: ignore[attr-defined]
                scope.nested.extend(self.function(node, nested, owner=False, parent=scope.name, outer=scope))  # type: ignore[arg-type]
            else:
                self._decorated(node, scope)  # type: ignore[arg-type]
        elif kind is ast.ClassDef:
            if not module_level:
                scope.bind(node.name, unknown("a class defined in a function"))  # type: ignore[attr-defined]
            else:
                self._decorated(node, scope)  # type: ignore[arg-type]
        elif kind is ast.Match:
            for case in node.cases:  # type: ignore[attr-defined]
                self._statements(case.body, scope, module_level)

    def _decorated(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, scope: _Scope) -> None:
        """`@register("name")` over a module-level definition calls the decorator with it, innermost first: a registry
        that decorators fill holds what they are given."""
        value: Expr = ("n", node.name)
        for decorator in reversed(node.decorator_list):
            value = ("call", self._expr(decorator, scope), (value,), ())
            scope.calls.append(value)

    def _named(self, node: ast.expr, scope: _Scope) -> None:
        """`(x := value)` inside a test or a comparison binds x in the function, like an assignment."""
        if not self.walrus:
            return
        for inner in nodes.walk(node):
            if isinstance(inner, ast.NamedExpr):
                self._bind(inner.target, self._expr(inner.value, scope), scope)

    def _branch(self, body: list[ast.stmt], condition: Expr | None, negated: bool, scope: _Scope, module_level: bool) -> None:
        if condition is not None:
            scope.conditions.append((condition, negated))
        try:
            self._statements(body, scope, module_level)
        finally:
            if condition is not None:
                scope.conditions.pop()

    def _bind(self, target: ast.expr, value: Expr, scope: _Scope) -> None:
        kind = type(target)
        if kind is ast.Name:
            if target.id in scope.globals:  # type: ignore[attr-defined]
                scope.add(scope.global_writes, target.id, value)  # type: ignore[attr-defined]
            else:
                scope.bind(target.id, value)  # type: ignore[attr-defined]
        elif kind is ast.Tuple or kind is ast.List:
            item = ("i", value)
            for element in target.elts:  # type: ignore[attr-defined]
                self._bind(element.value if isinstance(element, ast.Starred) else element, item, scope)
        elif kind is ast.Attribute:
            owner = target.value  # type: ignore[attr-defined]
            if isinstance(owner, ast.Name):
                self._store_attr(owner.id, target.attr, value, scope)  # type: ignore[attr-defined]
        elif kind is ast.Subscript:
            index = target.slice  # type: ignore[attr-defined]
            key = _key(index) if isinstance(index, ast.Constant) else None if isinstance(index, ast.Slice) else ("=", self._expr(index, scope))
            self._store_into(target.value, ("d", ((key, value),)), scope)  # type: ignore[attr-defined]
        elif kind is ast.Starred:
            self._bind(target.value, value, scope)  # type: ignore[attr-defined]

    def _store_into(self, container: ast.expr, value: Expr, scope: _Scope) -> None:
        """`x.append(v)`, `x[k] = v`, `self.x.extend(vs)`: the container may now hold `value`'s items
        (`self.append(v)`: a container layer's own items)."""
        if _names_self(container, scope):
            scope.add(scope.self_attrs, ITEMS, value)
        elif isinstance(container, ast.Name):
            self._store_name(container.id, value, scope, set())
        elif isinstance(container, ast.Attribute) and isinstance(container.value, ast.Name):
            self._store_attr(container.value.id, container.attr, value, scope)

    def _store_name(self, name: str, value: Expr, scope: _Scope, seen: set[str]) -> None:
        """What `name` holds gains `value`, where the name is bound: here, else in the function a closure is written
        in (read in the closure's scope: `("in", closure, value)`), else in the module (a function filling a module's
        registry). A container bound here to a part of another (`registry = table.setdefault(key, {})`, `table[key]`,
        `table.get(key)`) is that one's too: the other holds what it gains."""
        if scope.binds(name):
            scope.bind(name, value)
            if scope.params is None or name in seen:
                return
            seen.add(name)
            for bound in list(scope.locals[name]):
                part = _part_of(bound)
                if part is None:
                    continue
                base, key = part
                if base[0] == "n":
                    self._store_name(base[1], ("d", ((key, value),)), scope, seen)
                elif base[0] == "s" and scope.self_name is not None:
                    self._store_attr(scope.self_name, base[1], ("d", ((key, value),)), scope)
        elif scope.outer is not None:
            self._store_name(name, ("in", scope.name, scope.conditioned(value)), scope.outer, seen)
        else:
            scope.add(scope.global_writes, name, value)

    def _store_attr(self, owner: str, attr: str, value: Expr, scope: _Scope) -> None:
        """`self.attr = value` (or a store into it) of the method's own `self`, or of the method a closure is written in."""
        if owner == scope.self_name:
            scope.add(scope.self_attrs, attr, value)
        elif not scope.binds(owner) and scope.outer is not None:
            self._store_attr(owner, attr, ("in", scope.name, scope.conditioned(value)), scope.outer)

    def _call_statement(self, call: ast.Call, scope: _Scope, added: Expr | None = None) -> None:
        """`added`: the second argument, already read (a registration whose value is used, see `_call`)."""
        func = call.func
        if isinstance(func, ast.Attribute) and _names_self(func.value, scope) and func.attr in _REGISTER_LAYER and not call.args and len(call.keywords) == 2:  # type: ignore[attr-defined]
            named = {k.arg: k.value for k in call.keywords}  # `self.add_sublayer(name="conv", sublayer=...)`
            layer = named.get("sublayer", named.get("module"))
            if "name" in named and layer is not None:
                call = ast.copy_location(ast.Call(func=func, args=[named["name"], layer], keywords=[]), call)
        if isinstance(func, ast.Attribute) and call.args:
            method = func.attr
            owner = func.value
            if method in _ADDERS:
                self._store_into(owner, ("l", (self._expr(call.args[-1], scope),)), scope)
                return
            if method in _EXTENDERS:
                self._store_into(owner, self._expr(call.args[-1], scope), scope)
                return
            if method in _REGISTER_LAYER and len(call.args) >= 2 and not _names_self(owner, scope):
                # `self.blocks.add_module(str(i), block)`, `stage.add_sublayer(name, b)`: one of that container's items
                self._store_into(owner, ("l", (added or self._expr(call.args[1], scope),)), scope)
                return
            if _names_self(owner, scope):
                name = call.args[0]
                literal = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
                if method in _REGISTER_LAYER and len(call.args) >= 2 and literal is not None:
                    scope.add(scope.self_attrs, literal, added or self._expr(call.args[1], scope))
                    return
                if method in _REGISTER_LAYER and (len(call.args) >= 2 or isinstance(name, ast.Starred)):
                    # a computed name (`add_module(f"layer{i}", m)`, `add_module(*pair)`): one of the layer's items,
                    # and what an attribute no code names may hold (`self.layer1` in forward)
                    layer = ("i", self._expr(name.value, scope)) if isinstance(name, ast.Starred) else added or self._expr(call.args[1], scope)
                    scope.add(scope.self_attrs, ITEMS, ("l", (layer,)))
                    scope.add(scope.self_attrs, DYNAMIC, layer)
                    return
                if literal is not None and method in _REGISTER_TENSOR:
                    scope.add(scope.self_attrs, literal, TENSOR)
                    return
        if _is_super_init(func) and call.args:
            # `super().__init__(*layers)` of a Sequential or ModuleList subclass: what it holds (read only for those)
            expr = self._expr(call, scope)
            if expr[0] == "call":
                scope.add(scope.self_attrs, ITEMS, ("l", expr[2]))
            return
        if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) == 3:
            owner, name, value = call.args
            if _names_self(owner, scope):
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    scope.add(scope.self_attrs, name.value, self._expr(value, scope))
                else:  # under a computed name: the name is solved where the attribute is read
                    scope.add(scope.self_attrs, DYNAMIC, ("named", self._expr(name, scope), self._expr(value, scope)))
                return
        self._expr(call, scope)

    # ----- expressions -----------------------------------------------------------------------------------------------
    def _expr(self, node: ast.expr, scope: _Scope) -> Expr:
        kind = type(node)
        if kind is ast.Name:
            return SELF if node.id == scope.self_name else ("n", scope.current.get(node.id, node.id))  # type: ignore[attr-defined]
        if kind is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            if value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= _MAX_CONST):
                return ("c", value)
            return HOST
        if kind is ast.Attribute:
            base = node.value  # type: ignore[attr-defined]
            if _names_self(base, scope):
                return ("s", node.attr)  # type: ignore[attr-defined]
            return ("a", self._expr(base, scope), node.attr)  # type: ignore[attr-defined]
        if kind is ast.Call:
            return self._call(node, scope)  # type: ignore[arg-type]
        if kind is ast.Subscript:
            base = self._expr(node.value, scope)  # type: ignore[attr-defined]
            key = node.slice  # type: ignore[attr-defined]
            if isinstance(key, ast.Slice):
                return base  # a slice of a container is the same kind of container
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return ("key", base, key.value)  # `d["norm_layer"]`: what that key holds
            return ("i", base, self._expr(key, scope))  # `table[name]`: the name may be a known string
        if kind is ast.IfExp:
            self._named(node.test, scope)  # type: ignore[attr-defined]
            return ("u", (self._expr(node.body, scope), self._expr(node.orelse, scope)))  # type: ignore[attr-defined]
        if kind is ast.BoolOp:
            return ("u", tuple(self._expr(v, scope) for v in node.values))  # type: ignore[attr-defined]
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            return ("l", tuple(self._element(e, scope) for e in node.elts))  # type: ignore[attr-defined]
        if kind is ast.Dict:
            return (
                "d",
                tuple(
                    (_key(k), self._expr(v, scope))
                    for k, v in zip(node.keys, node.values)  # type: ignore[attr-defined]
                ),
            )
        if kind is ast.ListComp or kind is ast.GeneratorExp or kind is ast.SetComp:
            self._comprehensions(node.generators, scope)  # type: ignore[attr-defined]
            return ("l", (self._expr(node.elt, scope),))  # type: ignore[attr-defined]
        if kind is ast.DictComp:
            self._comprehensions(node.generators, scope)  # type: ignore[attr-defined]
            return ("d", ((None, self._expr(node.value, scope)),))  # type: ignore[attr-defined]
        if kind is ast.BinOp:
            if isinstance(node.op, (ast.Add, ast.Mult)):  # type: ignore[attr-defined]
                return ("u", (self._expr(node.left, scope), self._expr(node.right, scope)))  # type: ignore[attr-defined]
            return HOST
        if kind is ast.UnaryOp:
            if isinstance(node.op, ast.Not):  # type: ignore[attr-defined]
                return ("not", self._expr(node.operand, scope))  # type: ignore[attr-defined]
            operand = node.operand  # type: ignore[attr-defined]
            if isinstance(operand, ast.Constant) and isinstance(operand.value, (int, float)) and isinstance(node.op, ast.USub):  # type: ignore[attr-defined]
                return ("c", -operand.value)
            return HOST
        if kind is ast.NamedExpr:
            value = self._expr(node.value, scope)  # type: ignore[attr-defined]
            self._bind(node.target, value, scope)  # type: ignore[attr-defined]
            return value
        if kind is ast.Starred:
            return ("i", self._expr(node.value, scope))  # type: ignore[attr-defined]
        if kind is ast.Lambda:
            return self._lambda(node, scope) if scope.lambdas else unknown("a lambda")  # type: ignore[arg-type]
        if kind is ast.Compare or kind is ast.JoinedStr:
            self._named(node, scope)
            return HOST
        return unknown(f"a {kind.__name__} expression")

    def _lambda(self, node: ast.Lambda, scope: _Scope) -> Expr:
        """A lambda is a function whose body is what it returns: summarized as a closure of `scope`."""
        name = lambda_scope(scope.name, node.lineno, node.col_offset)
        self.lambdas[name] = node
        args = node.args
        every = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs] + [a.arg for a in (args.vararg, args.kwarg) if a]
        inner = _Scope(name, scope.name if scope.name != MODULE_SCOPE else None, None, frozenset(every), outer=scope if scope.params is not None else None)
        inner.returned[""] = [self._expr(node.body, inner)]
        scope.nested.extend([self._finish(inner, node), *inner.nested])
        return ("fn", name)

    def _element(self, node: ast.expr, scope: _Scope) -> Expr:
        if isinstance(node, ast.Starred):
            return ("*", self._expr(node.value, scope))
        return self._expr(node, scope)

    def _comprehensions(self, generators: list[ast.comprehension], scope: _Scope) -> None:
        for generator in generators:
            self._bind(generator.target, ("i", self._expr(generator.iter, scope)), scope)

    def _call(self, node: ast.Call, scope: _Scope) -> Expr:
        func = node.func
        if (
            isinstance(func, ast.Attribute) and func.attr == _REGISTER_RETURNS and len(node.args) == 2 and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):  # fmt: skip
            added = self._expr(node.args[1], scope)  # `block = self.add_sublayer(name, Block())`: registered, and the
            self._call_statement(node, scope, added)  # value is the layer given (Paddle's returns it; torch's
            return added  # `add_module` returns None, so its value is never used)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            inner = func.value.func
            if isinstance(inner, ast.Name) and inner.id == "super":
                callee: Expr = ("sup", func.attr)
                return self._record(callee, node, scope)
        qual = self._framework_or_known(func, scope)
        if qual is not None:
            short = qual.rsplit(".", 1)[-1]
            if fw.is_framework(qual):
                if fw.layer_kind(qual) == "container":
                    return ("call", ("g", qual), self._arguments(node, scope), self._keywords(node, scope))
                if short[:1].isupper():
                    return ("call", ("g", qual), (), ())
                return HOST if fw.returns_host(qual) else TENSOR  # `torch.jit.is_scripting()`: a flag
            if qual in PASS_THROUGH:
                args, keywords = self._arguments(node, scope), self._keywords(node, scope)
                if qual == "functools.partial" and args and args[0][0] != "*":  # what it binds binds f's parameters
                    scope.calls.append(("call", args[0], args[1:], keywords))  # as a call of f would (a call site)
                return ("call", ("g", qual), args, keywords)
            if qual.startswith("builtins.") and short in _HOST_BUILTINS:
                return HOST
        return self._record(self._expr(func, scope), node, scope)

    def _record(self, callee: Expr, node: ast.Call, scope: _Scope) -> Expr:
        call = ("call", callee, self._arguments(node, scope), self._keywords(node, scope))
        scope.calls.append(call)
        return call

    def _arguments(self, node: ast.Call, scope: _Scope) -> tuple[Expr, ...]:
        return tuple(self._element(a, scope) for a in node.args)

    def _keywords(self, node: ast.Call, scope: _Scope) -> tuple[tuple[str | None, Expr], ...]:
        return tuple((k.arg, self._expr(k.value, scope)) for k in node.keywords)

    def _framework_or_known(self, func: ast.expr, scope: _Scope) -> str | None:
        """The qualified name of a callee written as a module-level dotted name that no local shadows."""
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id in scope.locals or func.id in (scope.params or ()):
            return None
        base = self.qualify(func.id)
        if base is None:
            if not parts and func.id in _BUILTINS | _HOST_BUILTINS:
                return "builtins." + func.id
            return None
        return ".".join([base, *reversed(parts)]) if parts else base


def _versioned(node: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> list[str]:
    """The names a module-level function rebinds by plain assignments among its own statements (a parameter assigned
    there, or a name assigned there twice), each read in versions: `backbone = backbone.features` then `backbone =
    Getter(backbone)` reads the features, not the getter, where the getter is built. Not a name that a function, lambda
    or class nested in it names (it may store into the name later, or read it later), nor a `global` or `nonlocal` one.
    Elsewhere the order of statements is ignored, as before: every binding counts wherever the name is read."""
    assigned: dict[str, int] = {}
    for statement in node.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value is not None else []
        for target in targets:
            for name in target.elts if isinstance(target, (ast.Tuple, ast.List)) else (target,):
                if isinstance(name, ast.Name):
                    assigned[name.id] = assigned.get(name.id, 0) + 1
    found = {name for name, count in assigned.items() if count > 1 or name in params}
    if not found:
        return []
    for inner in nodes.walk(node):
        if inner is node:
            continue
        if isinstance(inner, (ast.Global, ast.Nonlocal)):
            found -= set(inner.names)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            found -= {n.id for n in nodes.walk(inner) if isinstance(n, ast.Name)}
    return sorted(found)


def _part_of(bound: Expr) -> tuple[Expr, Any] | None:
    """The container that a value bound to a name is a part of (`table[key]`, `table.setdefault(key, {})`), if any,
    and the key it is under: a literal string, an expression solved for the run (`("=", e)`), or None."""
    while bound[0] == "if":
        bound = bound[3]
    if bound[0] == "key":
        return bound[1], bound[2]
    if bound[0] == "i" and len(bound) > 2:
        return bound[1], ("=", bound[2])
    if bound[0] == "call" and bound[1][0] == "a" and bound[1][2] in ("setdefault", "get"):
        args = bound[2]
        return bound[1][1], ("=", args[0]) if args and args[0][0] != "*" else None
    return None


def _key(node: ast.expr | None) -> str | None:
    if node is None:
        return "**"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_super_init(func: ast.expr) -> bool:
    """`super().__init__` (with or without arguments to super)."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )


def _names_self(node: ast.expr, scope: _Scope) -> bool:
    """`self`: the method's own first parameter."""
    return isinstance(node, ast.Name) and node.id == scope.self_name
