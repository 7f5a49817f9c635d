"""Decorators that fill a forward's left-out keywords from the layer's config, read from their code (and the forward's
own fill of that shape, `fills_argument`).

`@merge_with_config_defaults` on a model's forward sets `use_cache` from `self.config.use_cache` when the caller
leaves it out (or passes None). A guard that needs the flag false can then be met by the layer's config as well as by
the call: the runtime reads `layer.config.use_cache` where the call passes nothing. The plan says so only where the
decorator's own code shows it: its wrapper writes into the call's arguments nothing but what the call passed for the
same name, the config's attribute of that name, or a false constant; a decorator read any other way may fill anything,
and a guard on its forward asks for a false value passed (`guards.strict`).
"""

from __future__ import annotations

import ast
from autograph_cg.analysis import nodes

_READS = frozenset({"get", "items", "keys", "values", "copy", "__contains__"})  # methods of the keywords that change nothing
_PURE = frozenset({"len", "list", "tuple", "isinstance", "bool", "str", "repr"})  # builtins that change no argument


def fills_from_config(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether decorator `node` (`def d(func): def wrapper(self, *args, **kwargs): ...; return wrapper`) writes into
    the call's arguments only the value passed for that name, `getattr(self.config, name, None)` or a false constant."""
    params = node.args.posonlyargs + node.args.args
    if len(params) != 1 or node.args.vararg or node.args.kwarg or node.args.kwonlyargs:
        return False
    inner = [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(inner) != 1:  # checked first: this runs on every module function the index reads
        return False
    wrapper = inner[0]
    own = {id(r) for r in nodes.walk(wrapper) if isinstance(r, ast.Return)}
    returns = [r for r in nodes.walk(node) if isinstance(r, ast.Return) and id(r) not in own]
    if not returns or not all(_is_name(r.value, wrapper.name) for r in returns):
        return False
    return _Wrapper(wrapper).fills_from_config()


def fills_argument(name: str, value: ast.expr | None) -> bool:
    """`value`, assigned to the argument `name`, is `name if name is not None else self.config.name` (or the same
    written the other way round): the forward's own fill from the layer's config, as the decorator above does it."""
    if not (isinstance(value, ast.IfExp) and isinstance(value.test, ast.Compare) and len(value.test.ops) == 1):
        return False
    test, op = value.test, value.test.ops[0]
    none = isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    if not (_is_name(test.left, name) and none and isinstance(op, (ast.Is, ast.IsNot))):
        return False
    kept, filled = (value.body, value.orelse) if isinstance(op, ast.IsNot) else (value.orelse, value.body)
    config = filled.value if isinstance(filled, ast.Attribute) else None
    return (
        _is_name(kept, name) and isinstance(filled, ast.Attribute) and filled.attr == name
        and isinstance(config, ast.Attribute) and config.attr == "config" and _is_name(config.value, "self")
    )  # fmt: skip


def _is_name(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _same(a: ast.expr, b: ast.expr) -> bool:
    """Two keys that are the same name, or equal string constants."""
    if isinstance(a, ast.Name) and isinstance(b, ast.Name):
        return a.id == b.id
    return isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and isinstance(a.value, str) and a.value == b.value


class _Wrapper:
    """The wrapper a decorator returns, read for its writes into `*args` and `**kwargs`."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        a = node.args
        self.node = node
        self.ok = len(a.posonlyargs + a.args) == 1 and a.vararg is not None and a.kwarg is not None and not a.kwonlyargs
        if not self.ok:
            return
        self.self_name, self.args, self.kwargs = (a.posonlyargs + a.args)[0].arg, a.vararg.arg, a.kwarg.arg
        self.bound: dict[str, list[ast.expr | None]] = {}  # name -> values assigned (None: bound otherwise)
        for inner in nodes.walk(node):
            if isinstance(inner, ast.Assign):
                for target in inner.targets:
                    self._bind(target, inner.value)
            elif isinstance(inner, (ast.AnnAssign, ast.AugAssign)):
                self._bind(inner.target, inner.value if isinstance(inner, ast.AnnAssign) else None)
            elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind(inner.target, None)
            elif isinstance(inner, (ast.With, ast.AsyncWith)):
                for item in inner.items:
                    if item.optional_vars is not None:
                        self._bind(item.optional_vars, None)
            elif isinstance(inner, ast.NamedExpr):
                self._bind(inner.target, inner.value)

    def _bind(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self.bound.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind(element, None)

    def fills_from_config(self) -> bool:
        if not self.ok:
            return False
        for inner in nodes.walk(self.node):
            if inner is not self.node and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False  # a closure could change the arguments later
            if isinstance(inner, (ast.Global, ast.Nonlocal)):
                return False
            if isinstance(inner, ast.Delete) and any(self._touches(t) for t in inner.targets):
                return False
            if isinstance(inner, ast.Call) and not self._call_keeps(inner):
                return False
            if isinstance(inner, ast.Assign) and not all(self._write_fills(t, inner.value) for t in inner.targets):
                return False
            if isinstance(inner, (ast.AugAssign, ast.AnnAssign)) and self._touches(inner.target):
                return False
            if isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)) and self._touches(inner.target):
                return False
        return True

    def _touches(self, target: ast.expr) -> bool:
        """Whether an assignment target is the arguments or a part of them."""
        return any(isinstance(n, ast.Name) and n.id in (self.args, self.kwargs) for n in nodes.walk(target))

    def _call_keeps(self, call: ast.Call) -> bool:
        """A call leaves the arguments as they are: it reads the keywords, or takes them spread (a copy)."""
        func = call.func
        if isinstance(func, ast.Attribute) and _is_name(func.value, self.kwargs):
            return func.attr in _READS
        if isinstance(func, ast.Name) and func.id in _PURE:
            return True
        given = [*(a for a in call.args if not isinstance(a, ast.Starred)), *(k.value for k in call.keywords if k.arg is not None)]
        return not any(_is_name(g, self.kwargs) or _is_name(g, self.args) for g in given)

    def _write_fills(self, target: ast.expr, value: ast.expr) -> bool:
        """`kwargs[key] = v`, `args[i] = v` (after `args = list(args)`), `args = tuple(args)`: what is written is
        sourced for that key; any other assignment must not touch the arguments."""
        if isinstance(target, ast.Name) and target.id == self.args:
            return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "tuple") \
                and len(value.args) == 1 and _is_name(value.args[0], self.args) and not value.keywords
        if isinstance(target, ast.Subscript) and _is_name(target.value, self.kwargs):
            return self._sourced(value, target.slice, set())
        if isinstance(target, ast.Subscript) and _is_name(target.value, self.args):
            key = self._key_of_index(target.slice)
            return key is not None and self._sourced(value, key, set())
        return not self._touches(target)

    def _key_of_index(self, index: ast.expr) -> ast.expr | None:
        """The name whose position `index` is: a local bound only to None or `<...>.co_varnames.index(key) - 1`."""
        if not isinstance(index, ast.Name):
            return None
        keys = []
        for value in self.bound.get(index.id, [None]):
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            if not (
                isinstance(value, ast.BinOp) and isinstance(value.op, ast.Sub)
                and isinstance(value.right, ast.Constant) and value.right.value == 1
                and isinstance(value.left, ast.Call) and isinstance(value.left.func, ast.Attribute)
                and value.left.func.attr == "index" and len(value.left.args) == 1
                and isinstance(value.left.func.value, ast.Attribute) and value.left.func.value.attr == "co_varnames"
            ):  # fmt: skip
                return None
            keys.append(value.left.args[0])
        return keys[0] if keys and all(_same(k, keys[0]) for k in keys) else None

    def _sourced(self, value: ast.expr | None, key: ast.expr, seen: set[str]) -> bool:
        """`value` is what the call passed for `key`, the config's attribute `key`, or a false constant."""
        if isinstance(value, ast.Constant):
            return not value.value
        if isinstance(value, ast.IfExp):
            return self._sourced(value.body, key, seen) and self._sourced(value.orelse, key, seen)
        if isinstance(value, ast.Subscript) and _is_name(value.value, self.kwargs):
            return _same(value.slice, key)
        if isinstance(value, ast.Subscript) and _is_name(value.value, self.args):
            index_key = self._key_of_index(value.slice)
            return index_key is not None and _same(index_key, key)
        if isinstance(value, ast.Call) and not value.keywords:
            func = value.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and _is_name(func.value, self.kwargs):
                return 1 <= len(value.args) <= 2 and _same(value.args[0], key) and all(self._sourced(d, key, seen) for d in value.args[1:])
            if _is_name(func, "getattr") and 2 <= len(value.args) <= 3:
                config = value.args[0]
                return (
                    isinstance(config, ast.Attribute) and config.attr == "config" and _is_name(config.value, self.self_name)
                    and _same(value.args[1], key) and all(self._sourced(d, key, seen) for d in value.args[2:])
                )  # fmt: skip
            return False
        if isinstance(value, ast.Name) and value.id not in seen and value.id not in (self.args, self.kwargs, self.self_name):
            assigned = self.bound.get(value.id)
            return bool(assigned) and all(self._sourced(v, key, seen | {value.id}) for v in assigned)
        return False
