"""What an expression of the summary language holds, and what indexing or iterating a value gives.

`_eval` reads each tag of `summaries.Expr` (a name, a constant, an attribute, a call, a container, a closure, a
guarded value...), handing names, attributes and calls to their own parts; subscripts by exact keys (strings,
package functions) read only what is stored under them, and package classes with a `__getitem__` run it.
"""

from __future__ import annotations

from typing import Any

from autograph_cg.analysis.resolver.sites import Ctx
from autograph_cg.analysis.resolver.summaries import LAMBDA, MODULE_SCOPE, Expr
from autograph_cg.analysis.resolver.values import EMPTY, HOST, TENSOR, Atom, Value, instances, listing, mapping, union, unknown


class Expressions:
    """The `Solver`'s evaluation of expressions and of what containers hold."""

    def _eval(self, expr: Expr, ctx: Ctx) -> Value:
        tag = expr[0]
        if tag == "n":
            return self._lookup(expr[1], ctx)
        if tag == "c":
            return frozenset({("C", expr[1])})
        if tag == "s":
            return union(self._node(("attr", a[1], expr[1])) if a[0] == "I" else frozenset({a}) for a in self._self(ctx))
        if tag == "call":
            return self._call(expr, ctx)
        if tag == "a":
            return self._attribute_of(self._eval(expr[1], ctx), expr[2])
        if tag == "i":
            base = self._eval(expr[1], ctx)
            return self._index(base, expr, ctx) if len(expr) > 2 else self._items(base)
        if tag == "key":  # `table["gelu"]`: the subscript by a literal
            return self._index(self._eval(expr[1], ctx), ("i", expr[1], ("c", expr[2])), ctx)
        if tag == "u":
            return union(self._eval(e, ctx) for e in expr[1])
        if tag == "l":
            return frozenset({listing(self._spread(list(expr[1]), ctx))})
        if tag == "d":
            pairs: set[tuple[Any, Atom]] = set()
            for key, value in expr[1]:
                keys = self._keys(key[1], ctx) if isinstance(key, tuple) else (key,)
                for atom in self._eval(value, ctx):
                    if isinstance(key, tuple):
                        pairs.update((k, atom) for k in keys)
                    elif key == "**" and atom[0] == "K":
                        pairs |= atom[1]
                    else:
                        pairs.add((key, atom))
            return frozenset({mapping(pairs)})
        if tag == "g":
            return self._node(("global", expr[1]))
        if tag == "t":
            return TENSOR
        if tag == "h":
            return HOST
        if tag == "self":
            return self._self(ctx)
        if tag == "fn":
            return frozenset({_closure(f"{ctx[0]}.{expr[1]}", ctx)})
        if tag == "not":
            inner = self._eval(expr[1], ctx)
            if inner and all(a[0] == "C" for a in inner):
                return frozenset({("C", not a[1]) for a in inner})
            return HOST
        if tag == "sup":
            return self._super(expr[1], ctx)
        if tag == "if":  # flows only where its branch may run
            holds, fails = self._condition(expr[1], ctx)
            runs = fails if expr[2] else holds
            if runs and self.branches is not None:
                truth = self.branches.truth(expr[1], ctx[0], ctx[1])
                runs = truth is None or truth != expr[2]
            return self._eval(expr[3], ctx) if runs else EMPTY
        if tag == "*":
            return self._items(self._eval(expr[1], ctx))
        if tag == "in":  # what a closure stores into a name of the function it is written in: read in the closure
            if ctx[2] is not None and not self._called_in(expr[1], ctx):
                return EMPTY
            return self._eval(expr[2], (ctx[0], expr[1], ("in", ctx) if ctx[2] is not None else None))
        if tag == "arg":  # the first version of a parameter a module-level function rebinds: what its callers pass
            summary = self.scope(ctx[0], ctx[1])
            return self._parameter(ctx, summary, expr[1]) if summary is not None else EMPTY
        if tag == "named":  # `setattr(self, name, value)`: the value
            return self._eval(expr[2], ctx)
        if tag == "ann":  # `config: LlamaConfig` in a class body: an instance of the package class it names
            return frozenset(a for a in instances(self._eval(expr[1], ctx), self.package.classes.__contains__) if a[0] == "I")
        if tag == "?":
            return frozenset({expr})
        return unknown(f"an expression the resolver does not read ({tag})")

    def _index(self, base: Value, expr: Expr, ctx: Ctx) -> Value:
        """`table[key]`: an object of a package class with a `__getitem__` runs it for this key (`ACT2FN[config.hidden_act]`,
        a mapping class that builds the class it holds under the key); a dict indexed by known strings gives only what
        they index; anything else what it holds."""
        assert self._sites is not None
        out: set[Atom] = set()
        rest: set[Atom] = set()
        for atom in base:
            owner = self._sites.method_owner(atom[1], "__getitem__") if atom[0] == "I" and atom[1] in self.package.classes else None
            if owner is None:
                rest.add(atom)
                continue
            call = self._getitem_calls.setdefault(expr, ("call", ("a", expr[1], "__getitem__"), (expr[2],), ()))
            out |= self._returns((self.package.classes[owner][0].module, f"{self.package.classes[owner][1].name}.__getitem__"), call, ctx)
        keys = [self._key(a) for a in self._eval(expr[2], ctx)]
        # No key yet (a cycle still filling it in) reads nothing: values only grow, so every entry read then would stay.
        if None not in keys:
            return frozenset(out) | union(self._items(frozenset(rest), k) for k in keys)
        return frozenset(out) | self._items(frozenset(rest))

    def _key(self, atom: Atom) -> Any:
        """The dict key that `atom` is exactly, or None: a string, or a package function (a key compared by identity:
        a registry keyed by the functions it dispatches for, `TABLE.setdefault(fn, {})`). A package function has one
        qualified name, so a lookup by it meets every store under it; an outside object may go by several. Only a
        module's own functions: a function of a class body stands for what reading it gives, which the resolver does
        not follow (`config._attn_implementation`, a property, reads as its getter; a method read on an instance is
        bound anew), so a key read there is not that function and reads every entry."""
        if atom[0] == "C" and isinstance(atom[1], str):
            return atom[1]
        if atom[0] == "G" and atom[1] not in self.package.classes:
            scope = self._function_scope(atom[1])
            if scope is not None and scope[1] != MODULE_SCOPE and "." not in scope[1]:
                return atom
        return None

    def _keys(self, expr: Expr, ctx: Ctx) -> tuple[Any, ...]:
        """The keys a store under the key `expr` may use: exact ones, or None (any key) when one is not exact or none
        is known yet (what is stored must not be lost)."""
        keys = tuple(self._key(a) for a in self._eval(expr, ctx))
        return keys if keys and None not in keys else (None,)

    def _items(self, value: Value, key: Any = None) -> Value:
        """What iterating or indexing `value` gives; `key`: an exact dict key (`_key`), so only what is stored under it."""
        out: set[Atom] = set()
        for atom in value:
            kind = atom[0]
            if kind == "L":
                out |= atom[1]
            elif kind == "K":
                out |= {a for k, a in atom[1] if key is None or k == key or k is None}
            elif kind == "I" and atom[1] in self.package.classes:
                out |= self._instance_items(atom[1])
            elif kind in ("G", "I"):  # containers nest one level here: an object met one unpacking early is itself
                out.add(atom)
            elif kind == "mapping-of":
                out |= self._items(self._node(("mapping", atom[1])), key)
            elif kind in ("C", "H"):
                out.add(("H",))
            elif kind in ("T", "?"):
                out.add(atom)
        return frozenset(out)

    def _instance_items(self, cls: str) -> Value:
        assert self._sites is not None
        getitem = self._sites.method_owner(cls, "__getitem__")
        if getitem is not None:
            module, facts = self.package.classes[getitem]
            return self._node(("ret", (module.module, f"{facts.name}.__getitem__", None)))
        if self._is_mapping(cls):
            return self._node(("mapping", cls))
        return frozenset({("I", cls)})  # a layer met where its items were asked for: see `_items`

    def _mapping_items(self, cls: str) -> Value:
        """What a dict-like package class holds, as one dict: what its constructor was given anywhere, under their keys
        where they are known (`ClassInstantier(ACT2CLS)`)."""
        pairs: set[tuple[Any, Atom]] = set()
        for call, ctx, _ in self._sites_of(cls):
            for arg in call[2]:
                for atom in self._eval(arg[1] if arg[0] == "*" else arg, ctx):
                    pairs |= atom[1] if atom[0] == "K" else {(None, a) for a in self._items(frozenset({atom}))}
            for key, value in call[3]:
                atoms = self._eval(value, ctx)
                pairs |= {(key, a) for a in atoms} if key is not None else {p for a in atoms if a[0] == "K" for p in a[1]}
        return frozenset({mapping(pairs)})


def _closure(qual: str, ctx: Ctx) -> Atom:
    """A nested function made in `ctx`: one made in a run of the function it is written in for one call carries that
    run (`("G", qual, run)`), so calling it reads the names it closes over as that run bound them (`wrap(kernel)`
    returning `wrapper`, which calls `kernel`). Lambdas are judged on their own, without it."""
    site = ctx[2]
    if site is None or not isinstance(site[0], int) or LAMBDA in qual or ".<locals>." in ctx[1]:
        return ("G", qual)
    return ("G", qual, ctx)
