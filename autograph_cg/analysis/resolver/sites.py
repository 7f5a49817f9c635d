"""Which calls may run a package function, method or constructor: the call sites that bind its parameters.

Calls whose callee is a name of the package (`Block(...)`, `timm.layers.create_conv2d(...)`) are indexed once,
by what they name; `self.method(...)` and `super().method(...)` by the method's name, matched through the
caller's class; calls whose callee is itself a value (`block_fn(...)`, `model_cls(**kwargs)`) are registered
by the solver once it has solved their callees.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol

from autograph_cg.analysis.facts import ClassFacts, ModuleFacts
from autograph_cg.analysis.resolver.summaries import MODULE_SCOPE, Expr, ScopeSummary

#: (module, scope name, what the scope runs for): None for any run; (call id, the caller's Ctx, implicit parameters)
#: for one call; ("in", the enclosing function's Ctx) for a closure walked in one of its runs; ("self", class) for a
#: method inherited by `class`, running on an instance of it (any call)
Ctx = tuple[str, str, Any]
Site = tuple[Expr, Ctx, int]  # the call, where it sits, how many leading parameters it binds implicitly
SITE_DEPTH = 2  # how many calls deep a function is solved for its call site (its return value, its verdict)
MAX_RUNS = 256  # calls of one function beyond which a call through its parameter is solved once for all of them


def site_depth(ctx: Ctx | None) -> int:
    """How many calls deep `ctx` runs for one call site (a closure's run counts as one)."""
    depth = 0
    while ctx is not None and ctx[2] is not None and ctx[2][0] != "self":
        depth += 1
        ctx = ctx[2][1]
    return depth


class PackageView(Protocol):
    """What the resolver needs of the package: its facts, re-export resolution and class linearization."""

    modules: dict[str, ModuleFacts]
    classes: dict[str, tuple[ModuleFacts, ClassFacts]]

    def resolve(self, qual: str) -> str | None: ...
    def mro(self, qual: str) -> list[str]: ...
    def is_layer(self, qual: str) -> bool: ...


class CallSites:
    def __init__(self, package: PackageView, index: "CallSites | None" = None) -> None:
        """`index`: call sites of the same package to share the index of calls by name with (the calls through
        values each registers are its own)."""
        self.package = package
        self.dynamic: dict[str, list[tuple[Expr, Ctx]]] = {}
        self._cache: dict[str, list[Site]] = {}
        self._init_runners: dict[str, list[str]] | None = None
        if index is not None:
            self.static, self.self_calls, self.super_calls = index.static, index.self_calls, index.super_calls
            self.dynamic_sites, self.callees, self._by_owner = index.dynamic_sites, index.callees, index._by_owner
            self.calls, self._ids = index.calls, index._ids
            return
        # the calls that contexts of runs for one call (`Ctx`) name, by a number given per distinct call: the
        # same in every process, so solved values keyed by contexts can be kept across runs
        self.calls: list[Expr] = []
        self._ids: dict[Expr, int] = {}
        self.static: dict[str, list[tuple[Expr, Ctx]]] = {}
        self.self_calls: dict[str, list[tuple[Expr, Ctx]]] = {}
        self.super_calls: dict[str, list[tuple[Expr, Ctx]]] = {}
        self.dynamic_sites: list[tuple[Expr, Ctx]] = []  # callee is a value: registered once solved
        self.callees: dict[tuple[str, str], set[str]] = {}  # (module, scope) -> what its calls name in the package
        self._by_owner: dict[tuple[str, bool], dict[str | None, list[tuple[Expr, Ctx]]]] = {}
        for module, facts in package.modules.items():
            for summary in facts.scopes.values():
                ctx = (module, summary.name, None)
                for call in summary.calls:
                    self._index(call, ctx, summary, facts)

    def __getstate__(self) -> dict:
        """Kept across runs without the package, whose facts the next run reads afresh; what is derived from both
        (call sites by callee, the classes whose construction runs an `__init__`) is derived again."""
        return {**self.__dict__, "package": None, "_cache": {}, "_init_runners": None}

    def reindex(self, modules: set[str]) -> tuple[set[str], set[str]]:
        """Index the calls of `modules` again (their summaries changed), each list in the order a fresh index gives
        it. Returns the names whose calls by name changed, and the method names whose `self.`/`super().` calls did;
        calls through values are found again by the solver (`Solver.rediscover`)."""
        tables = (self.static, self.self_calls, self.super_calls)
        before = [{name: list(found) for name, found in table.items() if any(ctx[0] in modules for _, ctx in found)} for table in tables]
        for table, old in zip(tables, before):
            for name in old:
                table[name] = [entry for entry in table[name] if entry[1][0] not in modules]
        self.dynamic_sites[:] = [entry for entry in self.dynamic_sites if entry[1][0] not in modules]
        for key in [k for k in self.callees if k[0] in modules]:
            del self.callees[key]
        sizes = [{name: len(found) for name, found in table.items()} for table in tables]
        for module in modules:
            facts = self.package.modules[module]
            for summary in facts.scopes.values():
                ctx = (module, summary.name, None)
                for call in summary.calls:
                    self._index(call, ctx, summary, facts)
        position = _Positions(self.package)
        changed: list[set[str]] = []
        for table, old, size in zip(tables, before, sizes):
            found = set()
            for name in old.keys() | {n for n, entries in table.items() if len(entries) != size.get(n, 0)}:
                table[name].sort(key=position)
                if table[name] != old.get(name, []):
                    found.add(name)
            changed.append(found)
        self.dynamic_sites.sort(key=position)
        self._cache.clear()
        self._by_owner.clear()
        return changed[0], changed[1] | changed[2]

    def call_id(self, call: Expr) -> int:
        """The number of `call` in contexts: equal calls get one number (they bind their callee alike)."""
        found = self._ids.get(call)
        if found is None:
            found = self._ids[call] = len(self.calls)
            self.calls.append(call)
        return found

    def register(self, found: dict[str, list[tuple[Expr, Ctx]]]) -> set[str]:
        """Calls through values, by what their callee was solved to. Returns the names whose call sites (`of`,
        `of_class`) that changed: a function, a class, and the `__init__` its construction runs."""
        changed = {qual for qual in found.keys() | self.dynamic.keys() if found.get(qual) != self.dynamic.get(qual)}
        if not changed:
            return changed
        self.dynamic = found
        self._cache.clear()
        for cls in [c for c in changed if c in self.package.classes]:
            runs = self.method_owner(cls, "__init__")
            if runs is not None:
                changed.add(f"{runs}.__init__")
        return changed

    def of(self, qual: str, summary: ScopeSummary) -> list[Site]:
        """Every call that may run the function or method `qual`."""
        found = self._cache.get(qual)
        if found is None:
            found = self._cache[qual] = list(self._find(qual, summary))
        return found

    def of_class(self, cls: str) -> list[tuple[Expr, Ctx]]:
        """Every call that constructs `cls` itself."""
        return [*self.static.get(cls, ()), *self.dynamic.get(cls, ())]

    def _find(self, qual: str, summary: ScopeSummary) -> Iterator[Site]:
        skip = summary.implicit
        owner, _, attr = qual.rpartition(".")
        is_method = summary.method != "" and owner in self.package.classes
        if is_method and attr == "__init__":
            for cls in self.constructed_through(owner):  # `Cls(...)` runs the __init__ it inherits
                for call, ctx in self.of_class(cls):
                    yield call, ctx, 1
        else:
            for call, ctx in self.of_class(qual):
                yield call, ctx, skip if is_method else 0
        if not is_method:
            return
        for call, ctx in self._reaching(attr, False).get(owner, ()):  # self.attr(...) in a class whose attr is this one
            yield call, ctx, skip
        for call, ctx in self._reaching(attr, True).get(owner, ()):  # super().attr(...) that reaches this one
            yield call, ctx, skip

    def _reaching(self, attr: str, through_super: bool) -> dict[str | None, list[tuple[Expr, Ctx]]]:
        """`self.attr(...)` (or `super().attr(...)`) calls by the class whose method they run: found once per name."""
        found = self._by_owner.get((attr, through_super))
        if found is None:
            found = self._by_owner[(attr, through_super)] = {}
            for call, ctx in (self.super_calls if through_super else self.self_calls).get(attr, ()):
                caller = owner_class(ctx[0], ctx[1], self.package)
                if caller:
                    runs = self.method_owner(caller, attr, after=caller if through_super else None)
                    found.setdefault(runs, []).append((call, ctx))
        return found

    def constructed_through(self, owner: str) -> list[str]:
        """Classes whose construction runs `owner.__init__`: itself and subclasses that do not define one."""
        if self._init_runners is None:
            self._init_runners = {}
            for qual in self.package.classes:
                for cls in self.package.mro(qual):
                    if self.package.classes[cls][1].has_init:
                        self._init_runners.setdefault(cls, []).append(qual)
                        break
        return self._init_runners.get(owner, [])

    def method_owner(self, cls: str, name: str, after: str | None = None) -> str | None:
        """The class of `cls`'s MRO (after `after`, for super()) that defines method `name`."""
        order = self.package.mro(cls)
        if after is not None:
            order = order[order.index(after) + 1 :] if after in order else []
        for owner in order:
            if defines(self.package.classes[owner][1], name):
                return owner
        return None

    def _index(self, call: Expr, ctx: Ctx, summary: ScopeSummary, facts: ModuleFacts) -> None:
        callee = call[1]
        tag = callee[0]
        if tag == "s":
            self.self_calls.setdefault(callee[1], []).append((call, ctx))
            return
        if tag == "sup":
            self.super_calls.setdefault(callee[1], []).append((call, ctx))
            return
        qual = None
        if tag == "g":
            qual = callee[1]
        elif tag == "n" and not self._local(callee[1], summary, facts):
            qual = _static_name(facts, callee[1])
        elif tag == "a" and callee[1][0] == "n" and not self._local(callee[1][1], summary, facts):
            base = _static_name(facts, callee[1][1])
            qual = f"{base}.{callee[2]}" if base else None
        if qual is not None:
            resolved = self.package.resolve(qual)
            if resolved is not None:
                self.static.setdefault(resolved, []).append((call, ctx))
                self.callees.setdefault((ctx[0], ctx[1]), set()).add(resolved)
                return
        if tag in ("n", "i", "call", "fn") or (tag == "a" and callee[2][:1].isupper()):
            self.dynamic_sites.append((call, ctx))
        elif tag == "a" and callee[1][0] not in ("t", "h") and summary.name.rsplit(".", 1)[-1] == "__init__":
            self.dynamic_sites.append((call, ctx))  # `block_cnf.block(cnf, norm_layer)`: what construction builds through an attribute

    def _local(self, name: str, summary: ScopeSummary, facts: ModuleFacts) -> bool:
        """Whether `name` is bound in the function or one that encloses it (not a module-level name)."""
        current: ScopeSummary | None = summary
        while current is not None and current.name != MODULE_SCOPE:
            if name in current.locals or name in current.params or name in (current.vararg, current.kwarg):
                return True
            current = facts.scopes.get(current.parent) if current.parent else None
        return False


class _Positions:
    """Where a fresh index puts a call: modules in the package's order, then summaries, then calls in each."""

    def __init__(self, package: PackageView) -> None:
        self.package = package
        self.modules = {name: i for i, name in enumerate(package.modules)}
        self.scopes: dict[str, dict[str, int]] = {}

    def __call__(self, entry: tuple[Expr, Ctx]) -> tuple[int, int, int]:
        call, (module, scope, _) = entry
        order = self.scopes.get(module)
        if order is None:
            order = self.scopes[module] = {name: i for i, name in enumerate(self.package.modules[module].scopes)}
        return self.modules[module], order[scope], self.package.modules[module].scopes[scope].calls.index(call)


def _static_name(facts: ModuleFacts, name: str) -> str | None:
    if name in facts.classes or name in facts.functions:
        return f"{facts.module}.{name}"
    return facts.imports.get(name)


def defines(facts: ClassFacts, name: str) -> bool:
    """`methods` holds what forward may call; `__init__` is known apart."""
    return name in facts.methods or (name == "__init__" and facts.has_init)


def owner_class(module: str, scope_name: str, package: PackageView) -> str | None:
    """The class a method scope (`Class.method`, `Class.method.<locals>.f`) belongs to."""
    qual = f"{module}.{scope_name.split('.', 1)[0]}"
    return qual if qual in package.classes else None
