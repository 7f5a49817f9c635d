"""Where a name's value comes from: the scopes it is looked up in, module variables, imports and star imports.

A name is a local or parameter of the running function or of one enclosing it, else a name of its module (a class
or function defined there, a module variable, an import, what a star import brings, a submodule, a builtin). A
module variable also holds what functions store into it under `global`, solved per run of the function that writes.
"""

from __future__ import annotations

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.facts import ModuleFacts
from autograph_cg.analysis.resolver.binding import unseen_parameter
from autograph_cg.analysis.resolver.sites import MAX_RUNS, Ctx, owner_class
from autograph_cg.analysis.resolver.summarize import PASS_THROUGH
from autograph_cg.analysis.resolver.summaries import MODULE_SCOPE, Expr, ScopeSummary, returns_closures
from autograph_cg.analysis.resolver.values import EMPTY, Value, union, unknown

_BUILTIN_NAMES = frozenset(n.rsplit(".", 1)[1] for n in PASS_THROUGH if n.startswith("builtins.")) | fw.HOST_BUILTINS


class Names:
    """The `Solver`'s name lookup; parameters are `Binding`'s, what a name's expressions hold `Expressions`'."""

    def _lookup(self, name: str, ctx: Ctx) -> Value:
        module, scope_name, site = ctx
        facts = self.package.modules.get(module)
        while scope_name != MODULE_SCOPE and facts is not None:
            summary = self._summary(facts, scope_name)
            if summary is None:
                break
            if name in summary.locals or name in summary.params or name in (summary.vararg, summary.kwarg):
                runs_for = None
                inherited = site is not None and site[0] == "self"
                if name not in summary.locals and name != summary.self_name and scope_name == ctx[1] and summary.method == "method":
                    runs_for = site[1] if inherited else owner_class(module, scope_name, self.package)
                if inherited and name not in summary.locals and name != summary.self_name:
                    site = None  # a parameter of an inherited method is the same whatever class it runs for
                found = self._node(("var", (module, scope_name, site), name))
                unseen = unseen_parameter(name, summary) if runs_for is not None else None
                if runs_for is not None and (inherited or unseen in found):
                    # a class that declares what the method stores tells (`_declared`); run for a class that inherits
                    # it, that is all it holds: what calls made for other classes pass is theirs
                    declared = self._declared(runs_for, module, summary, name, 0)
                    if declared:
                        return declared if inherited else (found - {unseen}) | declared
                return found
            if summary.parent is None:
                break
            if site is not None and site[0] == "in":  # a closure walked inside one run of an enclosing function
                site = site[1][2] if site[1][1] == summary.parent else site
            else:
                site = None  # an enclosing function: whatever call it ran for
            scope_name = summary.parent
        return self._module_name(module, name)

    def _module_name(self, module: str, name: str) -> Value:
        facts = self.package.modules.get(module)
        if facts is None:
            return unknown(f"module {module} not analyzed")
        if name in facts.classes or name in facts.functions:
            return frozenset({("G", f"{module}.{name}")})
        top = self._summary(facts, MODULE_SCOPE)
        variable = top is not None and (name in top.locals or name in self._global_writes(facts))
        qual = facts.imports.get(name)
        if qual == f"{module}.{name}" and qual in self.package.modules and not variable:
            return frozenset({("G", qual)})  # `from . import sub` in a package: the submodule (not itself again)
        if variable or qual is not None:  # both, for `try: from x import f` / `except ImportError: f = None`
            found = self._node(("var", (module, MODULE_SCOPE, None), name)) if variable else EMPTY
            return found | self._node(("global", qual)) if qual is not None else found
        for star in facts.star_imports:
            if self._exports(star, name):
                found = self._node(("global", f"{star}.{name}"))
                if found or f"{module}.{name}" not in self.package.modules:
                    return found
                break  # a star import that brings back a submodule's own name (`from .. import linear_utils` in the
                # module it comes from): a cycle, read as nothing, where Python binds the submodule
        if f"{module}.{name}" in self.package.modules:  # `from pkg import sub`: a submodule `pkg` does not name
            return frozenset({("G", f"{module}.{name}")})
        if name in _BUILTIN_NAMES:
            return frozenset({("G", "builtins." + name)})
        return unknown(f"`{name}` is not defined in {module}")

    def _global_writes(self, facts: ModuleFacts) -> set[str]:
        """Names some function of the module assigns under `global`."""
        self._read(("globals", facts.module))
        found = self._globals.get(facts.module)
        if found is None:
            found = self._globals[facts.module] = {n for s in facts.scopes.values() for n in s.global_writes}
        return found

    def _exports(self, module: str, name: str) -> bool:
        """Whether `from module import *` brings `name` (following that module's own star imports). The names are
        gathered once per module (a package's top `__init__` may star-import hundreds), redone when a module they
        come from is edited (`forget`)."""
        if name.startswith("_"):
            return False
        self._read(("exports", module))
        names = self._star.get(module)
        if names is None:
            names = self._star[module] = self._star_names(module)
        return name in names

    def _star_names(self, module: str) -> frozenset[str]:
        found: set[str] = set()
        seen: set[str] = set()
        todo = [module]
        while todo:
            current = todo.pop()
            facts = self.package.modules.get(current)
            if facts is None or current in seen:
                continue
            seen.add(current)
            self._star_from.setdefault(current, set()).add(module)
            top = facts.scopes.get(MODULE_SCOPE)
            found.update(facts.classes, facts.functions, facts.imports, top.locals if top is not None else ())
            todo.extend(facts.star_imports)
        return frozenset(n for n in found if not n.startswith("_"))

    def _global(self, qual: str) -> Value:
        """A qualified name: a package class or function, a module variable (an alias, a table), or outside."""
        package = self.package
        resolved = package.resolve(qual)
        if resolved is not None:
            return frozenset({("G", resolved)})
        module, _, name = qual.rpartition(".")
        if module in package.modules:
            return self._module_name(module, name)
        if qual in package.modules:
            return frozenset({("G", qual)})
        if qual.split(".", 1)[0] in self._roots():
            return unknown(f"`{qual}` is not found in the package")
        return frozenset({("G", qual)})

    def _variable(self, ctx: Ctx, name: str) -> Value:
        summary = self.scope(ctx[0], ctx[1])
        if summary is None:
            return unknown(f"{ctx[1]} was not indexed")
        parts = [self._eval(e, ctx) for e in summary.locals.get(name, ())]
        if ctx[1] == MODULE_SCOPE and not self.defaults:  # `global name` in a function writes it too (when run)
            facts = self.package.modules[ctx[0]]
            self._read(("globals", ctx[0]))
            for other in facts.scopes.values():
                if name in other.global_writes:
                    parts.extend(self._node(("stores", run, name)) for run in self._writing_runs(ctx[0], other))
        if name in summary.params or name in (summary.vararg, summary.kwarg):
            site = ctx[2]
            if site is not None and site[0] == "self" and name != summary.self_name:
                # what the callers pass is the same whatever class an inherited method runs for: solved once for all
                # of them (a reassigned `**kwargs` of a base config's method has a variable per subclass)
                parts.append(self._node(("param", (ctx[0], ctx[1], None), name)))
            else:
                parts.append(self._parameter(ctx, summary, name))
        return union(parts)

    def _writing_runs(self, module: str, summary: ScopeSummary) -> list[Ctx]:
        """Where a function's writes to a module variable are solved: once for each call of a module-level function,
        so that what one run stores keeps its own key (`_register(fn, kind)` filling `TABLE.setdefault(fn, {})` with
        the kernel its decorator gets), else once for any run."""
        anyrun: Ctx = (module, summary.name, None)
        if summary.name == MODULE_SCOPE or summary.parent is not None or summary.method != "":
            return [anyrun]
        sites = self._sites_of(f"{module}.{summary.name}", summary)
        if not sites or len(sites) > MAX_RUNS:
            return [anyrun]
        return [self._run_for(call, caller, module, summary.name, skip) for call, caller, skip in sites]

    def _called_in(self, closure: str, run: Ctx) -> bool:
        """Whether a call seen may run closure `closure` of the function `run` runs: not when that function returns the
        closures it makes and every call of `closure` calls one another run made (`register_kernel(op, kind)` hands its
        decorator to code outside the package): what such a closure would store is not seen being stored."""
        parent = self.scope(run[0], run[1])
        summary = self.scope(run[0], closure)
        if parent is None or summary is None or not isinstance(run[2][0], int) or not returns_closures(parent):
            return True
        sites = self._sites_of(f"{run[0]}.{closure}", summary)
        return any(not self._made_by_another_run(call, call_ctx, run, parent) for call, call_ctx, _ in sites)

    def _made_by_another_run(self, call: Expr, ctx: Ctx, run: Ctx, parent: ScopeSummary) -> bool:
        """Whether `call` (made in `ctx`) calls the closure that a call of its enclosing function other than `run`'s
        returned (`register(a)(f)`, a decorator factory's result called at once). Only where that function returns
        closures it makes (each run its own), so the closure a call of it returns was made in that call's run."""
        callee = call[1]
        site = run[2]
        if callee[0] != "call" or site is None or not isinstance(site[0], int):
            return False
        assert self._sites is not None
        if (callee, ctx) == (self._sites.calls[site[0]], site[1]):
            return False
        if not returns_closures(parent):
            return False
        return self._eval(callee[1], ctx) == frozenset({("G", f"{run[0]}.{parent.name}")})
