"""What a call gives: an instance of the class called, what a package function returns for this call, or what a
library call or a container or string method makes of its arguments.

A package function's return is solved with its parameters bound to this call's arguments (two calls deep, so
shared helpers do not mix what different callers pass), a recursive call reading the run it is made in.
"""

from __future__ import annotations

from typing import Any

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.resolver.sites import SITE_DEPTH, Ctx, site_depth
from autograph_cg.analysis.resolver.summarize import PASS_THROUGH, RUNTIME_WRAPPER
from autograph_cg.analysis.resolver.summaries import Expr, returns_closures
from autograph_cg.analysis.resolver.values import EMPTY, HOST, HOST_CALLED, Atom, Value, listing, mapping, union, unknown


class Calls:
    """The `Solver`'s reading of calls."""

    def _call(self, expr: Expr, ctx: Ctx) -> Value:
        built = self.auto_build(expr, ctx)  # transformers' `AutoModel.from_config(config)`: see `registries`
        if built is not None:
            return built
        callee = self._eval(expr[1], ctx)
        out: set[Atom] = set()
        package = self.package
        for atom in callee:
            kind = atom[0]
            if kind == "G":
                qual = atom[1]
                if qual in package.classes:
                    out.add(("I", qual))
                elif qual in PASS_THROUGH:
                    out |= self._pass_through(qual, expr, ctx)
                elif (scope := self._function_scope(qual)) is not None:
                    out |= self._returns(scope, expr, ctx)
                elif fw.is_framework(qual):
                    if fw.layer_kind(qual) == "container":
                        out.add(listing(self._members(expr, ctx)))
                    elif qual.rsplit(".", 1)[-1][:1].isupper():
                        out.add(("I", qual))
                    else:
                        out.add(("T",))
                elif fw.is_host(qual):
                    out.add(("H",))
                elif qual.rsplit(".", 1)[-1][:1].isupper():
                    out.add(("I", qual))
                else:
                    out.add(("?", f"the result of `{qual}()`"))
            elif kind == "?":
                out.add(atom)
            elif kind == "container-method":
                out |= self._container_method(atom[1], atom[2], expr, ctx)
            elif kind == "str-method":
                out |= self._string_method(atom[1], atom[2], expr, ctx)
            elif kind == "returns-self":
                out.add(atom[1])
            elif kind == "mapping-of":  # `super().__getitem__(key)` of a dict subclass: what it was built with
                out |= union(self._container_method(d, atom[2], expr, ctx) for d in self._node(("mapping", atom[1])))
            elif kind == "I" and atom[1] in package.classes and (called := self._called(atom[1])) is not None:
                out |= self._returns(called, expr, ctx)  # an object whose class defines `__call__`: what that returns
            elif kind in ("T",) or (kind == "I" and atom[1] in package.classes):
                out.add(("T",))  # calling a layer: its forward's output
            elif kind == "H":  # a host value called (`arch.startswith("b")`, a string past the constants kept): what
                out.add(HOST_CALLED)  # comes out runs nothing a layer calls, but a test made of it is undecided
        return frozenset(out)

    def _returns(self, scope: tuple[str, str], expr: Expr, ctx: Ctx) -> Value:
        """What a package function returns at this call: solved with its parameters bound to this call's
        arguments, unless the calls nest too deep (then for any call)."""
        summary = self.scope(*scope)
        if summary is None:
            return unknown(f"{scope[1]} was not indexed")
        running = _running(ctx, scope)
        if running is not None:  # a recursive call returns what the run it is made in returns (its items nest in it)
            return self._node(("ret", running))
        depth = SITE_DEPTH + 1 if returns_closures(summary) else SITE_DEPTH  # a closure made there keeps the run
        run = self._run_for(expr, ctx, scope[0], scope[1], summary.implicit) if site_depth(ctx) < depth else None
        return self._node(("ret", run or (scope[0], scope[1], None)))

    def _container_method(self, container: Atom, method: str, expr: Expr, ctx: Ctx) -> Value:
        args = expr[2]
        if method in ("get", "pop", "setdefault", "__getitem__") and args and args[0][0] != "*":
            keys = [self._key(a) for a in self._eval(args[0], ctx)]  # `table.get(name)`: known keys, what they index
            if None not in keys:  # no key yet: nothing (see `_index`)
                items = union(self._items(frozenset({container}), k) for k in keys)
            else:
                items = self._items(frozenset({container}))
        else:
            items = self._items(frozenset({container}))
        if method == "__getitem__":
            return items
        if method in ("values", "copy", "children", "modules"):
            return frozenset({listing(items)})
        if method in ("items", "named_children"):  # (key, value) pairs: a dict's known keys are themselves, others host
            keys = (
                {("C", k) if isinstance(k, str) else k if isinstance(k, tuple) else ("H",) for k, _ in container[1]}
                if method == "items" and container[0] == "K" else {("H",)}
            )
            return frozenset({listing({listing(items | keys)})})
        default = self._eval(expr[2][1], ctx) if len(expr[2]) > 1 else EMPTY  # get / pop / setdefault
        return items | default

    def _string_method(self, text: str, method: str, expr: Expr, ctx: Ctx) -> Value:
        """`"Batch_Norm".replace("_", "").lower()`: computed when every argument is a known string."""
        values = [self._eval(a, ctx) for a in expr[2]]
        if expr[3] or not all(len(v) == 1 and next(iter(v))[0] == "C" and isinstance(next(iter(v))[1], str) for v in values):
            return HOST
        try:
            result = getattr(text, method)(*(next(iter(v))[1] for v in values))
        except (TypeError, ValueError):
            return HOST
        if isinstance(result, list):
            return frozenset({listing(("C", part) for part in result[:8])})
        return frozenset({("C", result)}) if isinstance(result, (str, bool)) else HOST

    def _members(self, expr: Expr, ctx: Ctx) -> Value:
        """The layers a framework container is built with: `Sequential(a, b)`, `ModuleList([...])`, `*blocks`."""
        out: set[Atom] = set()
        for arg in expr[2]:
            for atom in self._eval(arg[1] if arg[0] == "*" else arg, ctx):
                out |= self._items(frozenset({atom})) if atom[0] in ("L", "K") or arg[0] == "*" else {atom}
        for key, value in expr[3]:
            if key is not None:
                out |= self._eval(value, ctx)
        return frozenset(out)

    def _pass_through(self, qual: str, expr: Expr, ctx: Ctx) -> Value:
        """Library calls whose result is (made of) their arguments: partial, deepcopy, dict, list, zip, getattr..."""
        args = expr[2]
        if qual == "dataclasses.field":  # a dataclass field's default
            return union(self._eval(v, ctx) for k, v in expr[3] if k == "default")
        if not args and qual not in ("builtins.dict", "collections.OrderedDict"):
            return frozenset({listing(())})
        first = EMPTY if not args else self._eval(args[0][1], ctx) if args[0][0] == "*" else self._eval(args[0], ctx)
        if qual == "typing.cast":
            return self._eval(args[1], ctx) if len(args) > 1 else first
        if qual in ("functools.partial", "copy.deepcopy", "copy.copy", "builtins.iter", "dataclasses.replace", RUNTIME_WRAPPER):
            return first
        if qual == "builtins.next":
            return self._items(first)
        if qual == "builtins.getattr":
            names = self._eval(args[1], ctx) if len(args) > 1 else EMPTY  # `getattr(self, self.base_model_prefix)`
            if all(a[0] == "C" and isinstance(a[1], str) for a in names):  # no name yet: nothing (see `_index`)
                found = union(self._attribute_of(first, a[1]) for a in names)
            else:  # any attribute: of a framework module, any of its functions (`torch.nonzero` among them)
                found = unknown("getattr of a computed name")
            return found | (self._eval(args[2], ctx) if len(args) > 2 else EMPTY)
        if qual in ("builtins.dict", "collections.OrderedDict"):
            pairs: set[tuple[Any, Atom]] = set(self._literal_pairs(args[0], ctx)) if args else set()
            for atom in first if not pairs else ():
                if atom[0] == "K":
                    pairs |= atom[1]
                elif atom[0] == "L":  # dict([(k, v), ...]): the items of the pairs
                    pairs |= {(None, a) for a in self._items(self._items(frozenset({atom})))}
            for key, value in expr[3]:
                for atom in self._eval(value, ctx):
                    if key is None and atom[0] == "K":
                        pairs |= atom[1]
                    elif key is not None:
                        pairs.add((key, atom))
            return frozenset({mapping(pairs)})
        if qual == "builtins.map":
            return frozenset({listing(unknown("the results of map()"))})
        if qual == "builtins.enumerate":
            return frozenset({listing({listing(self._items(first) | {("H",)})})})
        every = self._spread([("*", a) for a in args], ctx)  # the items of each argument
        if qual == "builtins.zip":
            return frozenset({listing({listing(every)})})
        if qual == "itertools.chain":
            return frozenset({listing(every)})
        if qual == "itertools.repeat":
            return frozenset({listing(first)})
        return frozenset({listing(self._items(first))})  # list, tuple, set, sorted, reversed, filter

    def _literal_pairs(self, arg: Expr, ctx: Ctx) -> list[tuple[Any, Atom]]:
        """`OrderedDict([("llama", "LlamaModel"), ...])`: a dict built from a literal list of pairs with literal string
        keys keeps its keys (a table of names read as data); [] for anything else."""
        if arg[0] != "l" or not arg[1]:
            return []
        if not all(p[0] == "l" and len(p[1]) == 2 and p[1][0][0] == "c" and isinstance(p[1][0][1], str) for p in arg[1]):
            return []
        return [(p[1][0][1], atom) for p in arg[1] for atom in self._eval(p[1][1], ctx)]


def _running(ctx: Ctx | None, scope: tuple[str, str]) -> Ctx | None:
    """The run of function `scope` that context `ctx` is inside of (itself, or a caller up its chain of runs)."""
    while ctx is not None:
        if ctx[0] == scope[0] and ctx[1] == scope[1]:
            return ctx
        ctx = ctx[2][1] if ctx[2] is not None and ctx[2][0] != "self" else None
    return None
