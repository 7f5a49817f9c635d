"""What a parameter holds: its default, and the arguments that the calls which run its function pass to it.

A call binds arguments positionally, by keyword, through `*args` and `**kwargs` (handed on as they came, as in
`super().__init__(*args, **kwargs)`); a function solved for one call site binds that call's arguments only, else
every call seen. Where no call passes a parameter, what the class declares for it, or its annotation, may tell.
"""

from __future__ import annotations

from typing import Any

from autograph_cg.analysis.resolver.sites import Ctx, owner_class
from autograph_cg.analysis.resolver.summaries import MODULE_SCOPE, Expr, ScopeSummary
from autograph_cg.analysis.resolver.values import EMPTY, HOST, TENSOR, Atom, Value, by_key, instances, listing, mapping, union

_HOST_ANNOTATIONS = frozenset(("n", t) for t in ("str", "int", "float", "bool", "bytes"))


class Binding:
    """The `Solver`'s binding of calls to parameters; the call sites come from the solver's `_sites`."""

    def _parameter(self, ctx: Ctx, summary: ScopeSummary, name: str) -> Value:
        module, _, site = ctx
        run_in = None
        if site is not None and site[0] == "in":  # a closure's own parameters: the calls made in the run of the
            run_in, site = site[1], None  # enclosing function it was walked in are solved for that run
        if name == summary.self_name:
            return self._self(ctx)
        if site is not None and site[0] == "self":  # an inherited method's other parameters: as for any call
            site = None
        outer: Ctx = (module, summary.parent or MODULE_SCOPE, None)
        default = summary.defaults.get(name)
        forward = summary.method == "method" and summary.name.rsplit(".", 1)[-1].startswith("forward")
        if self.defaults and site is None:  # optional arguments are left out: their defaults hold
            if default is not None:
                return self._eval(default, outer)
            if name == summary.kwarg:
                return frozenset({mapping(())})
            if forward:
                return TENSOR
            annotation = summary.annotations.get(name)  # a required one: what callers pass, or its annotated class
            if annotation is not None:
                return instances(self._eval(annotation, outer), self.package.classes.__contains__)
        parts: list[Value] = [self._eval(default, outer)] if default is not None else []
        index = summary.params.index(name) if name in summary.params else -1
        if site is not None:  # solved for one call site: what that call passes
            call_id, caller, skip = site
            assert self._sites is not None
            parts.append(self._bind(self._sites.calls[call_id], caller, skip, summary, name, index))
            return union(parts)
        if forward:
            parts.append(TENSOR)  # what a layer is called with: data, not objects (its flow is not followed)
            return union(parts)
        qual = f"{module}.{summary.name}"
        host = summary.annotations.get(name) in _HOST_ANNOTATIONS  # `name: str`: for any caller a host value, whose
        if host and not self._user_given(summary, default is None):  # flow through every caller is not followed,
            return union([*parts, HOST])  # except in the default build: what only the user passes is another build
        sites = self._sites_of(qual, summary)
        if host and not sites:
            return union(parts)
        parent = self.scope(module, summary.parent) if run_in is not None and summary.parent is not None else None
        for call, call_ctx, skip in sites:
            if parent is not None and self._made_by_another_run(call, call_ctx, run_in, parent):
                continue
            if run_in is not None and call_ctx[:2] == run_in[:2]:
                call_ctx = run_in
            parts.append(self._bind(call, call_ctx, skip, summary, name, index))
        if not sites and name == summary.kwarg and summary.name.endswith(".__init__"):  # a constructor no call seen
            return frozenset({mapping({(None, unseen_parameter(name, summary))})})  # makes: a loader's `cls(**settings)` may
        if not sites and name in (summary.vararg, summary.kwarg):  # nothing seen passes anything extra
            return frozenset({mapping(()) if name == summary.kwarg else listing(())})
        if not sites and default is None:  # nothing seen passes it: its annotation's class, else it cannot be told
            annotation = summary.annotations.get(name)
            if annotation is not None:
                return instances(self._eval(annotation, outer), self.package.classes.__contains__)
            owner = owner_class(module, summary.name, self.package) if summary.name.endswith(".__init__") else None
            built = self._built_from(owner, name) if owner is not None else EMPTY
            if built:
                return built
            if self.defaults:  # no build the package makes calls it without the argument: no default to read
                return EMPTY
            return frozenset({unseen_parameter(name, summary)})
        return union(parts)

    def _user_given(self, summary: ScopeSummary, required: bool) -> bool:
        """Whether, in the default build, a host parameter of `summary` holds what the calls seen pass, and where none
        passes it its default (nothing where it has none), rather than any host value: what only the user passes is
        another configuration. One with a default (`hidden_act: str = "gelu"` of a config the loader builds, whose
        `getattr(F, config.hidden_act)` is then `F.gelu` by default, as an unannotated one is in every solver;
        `activation_function: str = "gelu"` of a layer built with `config.activation_function`); a required one of a
        module-level function (a public builder no package code calls, `resnet_fpn_backbone(backbone_name: str)`, which
        names what to build by it). Not a required one of a method: a layer nothing builds keeps its settings undecided
        (`layer_idx: int` choosing a block by `config.layer_types[layer_idx]`), not empty, or its default build would
        hold nothing."""
        return self.branches is not None and (not required or (summary.method == "" and summary.parent is None))

    def _declared(self, cls: str, module: str, summary: ScopeSummary, name: str, depth: int) -> Value:
        """What parameter `name` of a method that `cls` runs holds when no call seen passes it but the method stores it
        unchanged in an attribute whose class `cls` declares: `config: LlamaConfig` in a class body, and
        `PreTrainedModel.__init__` storing `self.config = config`, reached through `super().__init__(config)`. A value
        stored there is of that class, as a type checker reads the declaration (which `self.config` already trusts)."""
        found = union(self._declaration(cls, attr) for attr, exprs in summary.self_attrs.items() if ("n", name) in exprs)
        owner = owner_class(module, summary.name, self.package)
        if found or depth >= 4 or owner is None:
            return found
        assert self._sites is not None
        for call in summary.calls:
            if call[1][0] != "sup":
                continue
            passed = [k for k, v in call[3] if k is not None and v == ("n", name)]
            positional = call[2].index(("n", name)) if ("n", name) in call[2] else -1
            if positional < 0 and not passed or any(a[0] == "*" for a in call[2][: positional + 1]):
                continue
            target = self._sites.method_owner(cls, call[1][1], after=owner)
            if target is None:
                continue
            target_module, facts = self.package.classes[target]
            callee = self.scope(target_module.module, f"{facts.name}.{call[1][1]}")
            if callee is None or callee.method != "method":
                continue
            if positional >= 0 and positional + 1 < callee.positional:
                passed.append(callee.params[positional + 1])
            for param in passed:
                if param in callee.params:
                    found |= self._declared(cls, target_module.module, callee, param, depth + 1)
        return found

    def _declaration(self, cls: str, attr: str) -> Value:
        """The instances of package classes the nearest class body of `cls`'s MRO declaring `attr` (`config:
        LlamaConfig`, without a value) names; nothing when the nearest one gives it a value or names no package class."""
        for owner in self.package.mro(cls):
            module, facts = self.package.classes[owner]
            exprs = facts.attrs.get(attr)
            if exprs:
                if any(e[0] != "ann" for e in exprs):
                    return EMPTY
                found = union(self._eval(e, (module.module, MODULE_SCOPE, None)) for e in exprs)
                if found:
                    return found
        return EMPTY

    def _built_from(self, cls: str, name: str) -> Value:
        """What constructor parameter `name` holds by the class `cls` declares for it: `config_class = BloomConfig` in a
        model's body names the class its `config` is built from (the loader builds `cls.config_class` and passes it),
        as an annotation would; nothing when the nearest body assigning `<name>_class` names no package class."""
        for owner in self.package.mro(cls):
            module, facts = self.package.classes[owner]
            exprs = facts.attrs.get(f"{name}_class")
            if exprs:
                found = union(self._eval(e, (module.module, MODULE_SCOPE, None)) for e in exprs)
                return frozenset(("I", a[1]) for a in found if a[0] == "G" and a[1] in self.package.classes)
        return EMPTY

    def _bind(self, call: Expr, ctx: Ctx, skip: int, summary: ScopeSummary, name: str, index: int) -> Value:
        """What one call passes to parameter `name` (`skip` leading parameters are bound implicitly)."""
        args, keywords = call[2], call[3]
        if name == summary.vararg:
            return frozenset({listing(self._spread(list(args[max(summary.positional - skip, 0) :]), ctx))})
        if name == summary.kwarg:
            named = set(summary.params)
            pairs: set[tuple[Any, Atom]] = set()
            for key, value in keywords:
                if key is None:
                    pairs |= {p for atom in self._eval(value, ctx) if atom[0] == "K" for p in atom[1] if p[0] not in named}
                elif key not in named:
                    pairs |= {(key, atom) for atom in self._eval(value, ctx)}
            return frozenset({mapping(pairs)})
        parts: list[Value] = []
        position = index - skip
        if 0 <= position and index < summary.positional:
            for offset, arg in enumerate(args):
                if arg[0] == "*":  # `f(*xs)`: from here on, positions are the items of xs
                    parts.append(self._spread_at(arg[1], ctx, position - offset))
                    break
                if offset == position:
                    parts.append(self._eval(arg, ctx))
                    break
        for key, value in keywords:
            if key == name:
                parts.append(self._eval(value, ctx))
            elif key is None:
                parts.extend(by_key(atom[1]).get(name, EMPTY) for atom in self._eval(value, ctx) if atom[0] == "K")
        return union(parts)

    def _spread_at(self, spread: Expr, ctx: Ctx, index: int) -> Value:
        """Item `index` of `*spread` in a call: when `spread` is the calling function's own `*args`, handed on as it came
        (`super().__init__(*args, **kwargs)` in a wrapper), the argument its callers pass at that place; else any item."""
        summary = self.scope(ctx[0], ctx[1]) if ctx[1] != MODULE_SCOPE else None
        site = ctx[2]
        if (
            summary is not None and spread[0] == "n" and spread[1] == summary.vararg and spread[1] not in summary.locals
            and (site is None or site[0] not in ("in",))
        ):  # fmt: skip
            return self._node(("vararg", ctx if site is None or site[0] != "self" else (ctx[0], ctx[1], None), index))
        return self._items(self._eval(spread, ctx))

    def _vararg_item(self, ctx: Ctx, index: int) -> Value:
        """The positional argument `index` past the named ones that the calls of `ctx`'s function pass (the one call
        it runs for, or every call seen)."""
        summary = self.scope(ctx[0], ctx[1])
        assert summary is not None and self._sites is not None
        site = ctx[2]
        if site is not None:
            calls = [(self._sites.calls[site[0]], site[1], site[2])]
        else:
            calls = self._sites_of(f"{ctx[0]}.{ctx[1]}", summary)
        parts: list[Value] = []
        for call, caller, skip in calls:
            place = max(summary.positional - skip, 0) + index
            for offset, arg in enumerate(call[2]):
                if arg[0] == "*":
                    parts.append(self._spread_at(arg[1], caller, place - offset))
                    break
                if offset == place:
                    parts.append(self._eval(arg, caller))
                    break
        return union(parts)

    def _spread(self, args: list[Expr], ctx: Ctx) -> Value:
        """The values of positional arguments, `*xs` contributing the items of xs."""
        out: set[Atom] = set()
        for arg in args:
            out |= self._items(self._eval(arg[1], ctx)) if arg[0] == "*" else self._eval(arg, ctx)
        return frozenset(out)


def unseen_parameter(name: str, summary: ScopeSummary) -> Atom:
    """What a parameter without a default holds when no call seen passes it."""
    return ("?", f"parameter `{name}` of {summary.name}, which no call seen passes")
