"""Values across the package, solved on demand from the per-file summaries (see `values` for the atoms).

Parameters take their defaults and the arguments of every call site seen (positional, keyword, `**dict`,
through `super().__init__` and `self.method(...)`), so a class built with `norm_layer=partial(nn.LayerNorm)`
in one place and the default elsewhere holds either. What a function returns is solved for each call site
(its parameters bound to that site's arguments, two calls deep), so shared helpers (`to_2tuple(x)`,
`get_norm_layer(name)`) do not mix what different callers pass; what an instance holds is solved once per
class. Calls through values (`block_fn(...)`, `model_cls(**kwargs)`) become call sites once their callees are
solved, in rounds until none appears. Cycles are solved to a fixed point: a value read before it grew is
recomputed. `defaults=True` answers what holds when nobody passes anything: parameters keep their defaults
(or an instance of the class their annotation names), so flags read as their default values. With
`branches` (such a defaults solver), branches that are off by default build nothing: what remains is the
default build (`self.q_proj` is a Linear unless `config.tensor_parallel_degree > 1`).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterator

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.facts import ModuleFacts
from autograph_cg.analysis.resolver.attributes import Attributes, Writes
from autograph_cg.analysis.resolver.binding import Binding
from autograph_cg.analysis.resolver.calls import Calls
from autograph_cg.analysis.resolver.conditions import Conditions
from autograph_cg.analysis.resolver.expressions import Expressions
from autograph_cg.analysis.resolver.fixpoint import FixedPoint
from autograph_cg.analysis.resolver.names import Names
from autograph_cg.analysis.resolver.registries import Registries
from autograph_cg.analysis.resolver.sites import MAX_RUNS, CallSites, Ctx, PackageView, Site, defines
from autograph_cg.analysis.resolver.summaries import ITEMS, MODULE_SCOPE, Expr, ScopeSummary, reads_self
from autograph_cg.analysis.resolver.values import EMPTY, Atom, Value, bounded, union, unknown

_ROUNDS = 4  # rounds of call-site discovery through solved callees


class Solver(Names, Binding, Expressions, Attributes, Calls, Conditions, Registries, FixedPoint):
    """The questions, the nodes and the call sites; each part of reading the summaries is a base of its own (names,
    parameters, expressions, attributes, calls, tests), all sharing this state and the fixed point."""

    def __init__(
        self,
        package: PackageView,
        defaults: bool = False,
        branches: "Solver | None" = None,
        sites_from: "Solver | None" = None,
        index_from: "Solver | None" = None,
    ) -> None:
        super().__init__()
        self.package = package
        self.defaults = defaults
        self.branches = branches  # when given: a branch it finds off by default builds nothing (the default build)
        self.sites_from = sites_from  # when given: the solver whose call sites (calls through values included) this one uses
        self.index_from = index_from  # when given: the solver whose index of calls by name this one shares
        self._sites: CallSites | None = None
        self._globals: dict[str, set[str]] = {}
        self._star: dict[str, frozenset[str]] = {}  # module -> the names `from module import *` brings (`_exports`)
        self._star_from: dict[str, set[str]] = {}  # module -> the modules whose star imports reach it (to forget)
        self._scopes_of: dict[str, tuple[str, str] | None] = {}  # qualified name -> (module, scope) of a package function
        self._writers: dict[str, Writes] = {}  # class -> what its methods assign on self (`_writes`)
        self._top: set[str] | None = None
        self._by_name: dict[str, list[str]] | None = None  # the package's classes by their own name (`classes_named`)
        self._scope_numbers: dict[str, dict[str, int]] = {}  # module -> scope -> the number of ("scope", module, scope)
        self._getitem_calls: dict[Expr, Expr] = {}  # `table[key]` -> the `__getitem__` call it makes (kept: its id is a context's)

    def _roots(self) -> set[str]:
        """The package's top-level names: a name under them that is not found is unknown, not outside code."""
        if self._top is None:
            self._top = {name.split(".", 1)[0] for name in self.package.modules}
        return self._top

    def __getstate__(self) -> dict:
        """Kept across runs without the package, whose facts the next run reads afresh (`rebind`)."""
        return {**self.__dict__, "package": None, "_scopes_of": {}, "_writers": {}, "_by_name": None, "_stack": [], "asker": None, "forgotten": set()}

    def rebind(self, package: PackageView, asker: "Callable[[], Hashable | None] | None") -> None:
        """Answer for `package`, a deeper index of the same files or a later run's: what is solved stays solved."""
        self.package = package
        self.asker = asker
        self._scopes_of.clear()
        self._writers.clear()
        self._by_name = None
        if self._sites is not None:
            self._sites.package = package

    @property
    def sites(self) -> CallSites:
        """The package's call sites, found (calls through values too) when first asked."""
        self._prepare()
        assert self._sites is not None
        return self._sites

    def named_class(self, name: str) -> Value:
        """The package class a table of names names (`Registries.class_in_table`), solved once as a node."""
        return self._node(("named-class", name))

    def classes_named(self, name: str) -> list[str]:
        """The package classes whose own name is `name` (a class a table of names names)."""
        if self._by_name is None:
            self._by_name = {}
            for qual in self.package.classes:
                self._by_name.setdefault(qual.rpartition(".")[2], []).append(qual)
        return self._by_name.get(name, [])

    def _function_scope(self, qual: str) -> tuple[str, str] | None:
        if qual not in self._scopes_of:
            self._scopes_of[qual] = _function_scope(self.package, qual)
        return self._scopes_of[qual]

    # ----- questions -----------------------------------------------------------------------------------------------
    def value(self, expr: Expr, module: str, scope: str) -> Value:
        return self._ask(("expr", expr, (module, scope, None)))

    def default_build(self, expr: Expr, module: str, scope: str) -> Value:
        """What `expr` holds in the default build (ask a `defaults` solver): in a function, as its callers call
        it, each in its own default build; `make_blocks(block_fns)` builds what `ResNet()` passes by default."""
        summary = self.scope(module, scope) if scope != MODULE_SCOPE else None
        self._prepare()
        assert self._sites is not None
        sites = self._sites.of(f"{module}.{scope}", summary) if summary is not None and summary.method == "" else []
        if not sites:
            return self.value(expr, module, scope)
        return union(self._ask(("expr", expr, self._run_for(call, ctx, module, scope, skip))) for call, ctx, skip in sites)

    def for_call(self, call: Expr, caller: Ctx, module: str, scope: str) -> Ctx:
        """The context of function `scope` running for one call (made in `caller`): its parameters bind that
        call's arguments only."""
        summary = self.scope(module, scope)
        return self._run_for(call, caller, module, scope, summary.implicit if summary is not None else 0)

    def _run_for(self, call: Expr, caller: Ctx, module: str, scope: str, skip: int) -> Ctx:
        self._prepare()
        assert self._sites is not None
        return (module, scope, (self._sites.call_id(call), caller, skip))

    def value_in(self, expr: Expr, ctx: Ctx) -> Value:
        return self._ask(("expr", expr, ctx))

    def attribute(self, cls: str, attr: str) -> Value:
        """What `self.attr` may hold on an instance of `cls`."""
        return self._ask(("attr", cls, attr))

    def assigned_under_tests(self, cls: str, attr: str) -> Value:
        """What construction assigns to `self.attr` with the tests it sits under set aside: asked when `attribute` holds
        nothing, every branch assigning it found never to run. Those tests read settings at the values seen, a config
        no call builds read at its defaults (`if self.qk_layernorm: self.q_layernorm = nn.LayerNorm(...)`), while a
        loader builds the config from data no call shows; a call of the attribute runs only where one of those branches
        ran, so what they assign is what it may run."""
        for owner in self.package.mro(cls):
            module = self.package.classes[owner][0].module
            found: list[Value] = []
            for method, summary in self._writes(owner).writing(attr):
                if self._builds(owner, method):
                    ctx = (module, summary.name, ("self", cls) if owner != cls else None)
                    shared = (module, summary.name, None)
                    found.extend(
                        self._ask(("expr", inner, ctx if reads_self(inner, summary) else shared))
                        for inner in map(_untested, summary.self_attrs.get(attr, ()))
                    )
            if found:
                return union(found)
        return EMPTY

    def items(self, value: Value) -> Value:
        """What iterating or indexing `value` gives."""
        return self._ask(("items-of", value))

    def assigns(self, cls: str, attr: str) -> bool:
        """Whether a method of `cls` or of a package class it inherits from assigns `self.attr`."""
        return any(attr in self._written(owner) for owner in self.package.mro(cls))

    def held(self, cls: str) -> tuple[Value, Value]:
        """What a Sequential or ModuleList subclass of the package runs or iterates: what its constructor was given
        or it appended or added, and what the attributes its methods assign hold (a layer assigned to self is one
        of its modules too; the caller keeps those that `may_be_layer`)."""
        return self._held(cls, self._ask)

    def _held(self, cls: str, read: Callable[[Any], Value]) -> tuple[Value, Value]:
        """`held`, reading values through `read`: asked from outside, or read by the node being computed."""
        written = {a for owner in self.package.mro(cls) for a in self._written(owner)}
        given = read(("items-of", read(("attr", cls, ITEMS)))) if ITEMS in written else EMPTY
        assigned = union(read(("attr", cls, attr)) for attr in sorted(written - {ITEMS}))  # DYNAMIC: `setattr` by computed names
        return given, bounded(assigned)

    def may_be_layer(self, atom: Atom) -> bool:
        """An attribute's value that a layer holds as one of its modules: a layer, or what cannot be told."""
        if atom[0] == "?":
            return True
        if atom[0] != "I":
            return False  # classes, functions, tensors, host values and plain lists are not modules
        qual = atom[1]
        if qual in self.package.classes:
            return self.package.is_layer(qual)
        return not fw.is_host(qual)

    def callers(self, module: str, scope: str) -> list[tuple[str, str]]:
        """(module, scope) of every call site of the function `scope` of `module`."""
        summary = self.scope(module, scope)
        if summary is None:
            return []
        self._prepare()
        assert self._sites is not None
        return [(ctx[0], ctx[1]) for _, ctx, _ in self._sites.of(f"{module}.{scope}", summary)]

    def named_callees(self, module: str, scope: str) -> set[str]:
        """The package classes and functions that the calls of a body name (`helper(x)`, `mod.f(x)`)."""
        self._prepare()
        assert self._sites is not None
        return self._sites.callees.get((module, scope), set())

    def truth(self, condition: Expr, module: str, scope: str) -> bool | None:
        """Whether an `if` test (the summarizer's condition form) holds; None when the values do not say."""
        found = self._ask(("truth", condition, (module, scope, None)))
        return next(iter(found))[1]

    def scope(self, module: str, name: str) -> ScopeSummary | None:
        facts = self.package.modules.get(module)
        if facts is None:
            return None
        return self._summary(facts, name)

    def _summary(self, facts: ModuleFacts, name: str) -> ScopeSummary | None:
        """A summary, as the node being computed (or the result asking) reads it: redone when it changes (`forget`).
        The number of its key is kept by module and name: every name looked up reads one (2.3 M reads on transformers,
        a tenth of the solve building and hashing the key)."""
        numbers = self._scope_numbers.get(facts.module)
        if numbers is None:
            numbers = self._scope_numbers[facts.module] = {}
        number = numbers.get(name)
        if number is None:
            number = numbers[name] = self._number(("scope", facts.module, name))
        self._reads(number)
        return facts.scopes.get(name)

    # ----- kept across runs ---------------------------------------------------------------------------------------
    def forget(self, reads: list[Any]) -> None:
        """`FixedPoint.forget`; what reads are here: nodes, ("scope", module, name), ("globals", module) (the names
        a module's functions write under `global`, kept apart), ("sites", qual), ("writes", class) (what the methods
        of a class assign on self, kept apart)."""
        dropped = []
        for key in reads:
            if key[0] == "globals":
                self._globals.pop(key[1], None)
                dropped += [("exports", m) for m in self._star_from.pop(key[1], ()) if self._star.pop(m, None) is not None]
            elif key[0] == "writes":
                self._writers.pop(key[1], None)
        super().forget(reads + dropped)

    def refresh(self, summaries: frozenset[tuple[str, str]], names: set[str], methods: set[str]) -> None:
        """Drop what read the `summaries` (module, scope) edited since its values were solved, or the call sites
        that changed with them: of the functions and classes `names`, and of the methods called `methods` through
        `self.` or `super()`."""
        reads: list[Any] = [("scope", module, name) for module, name in summaries]
        reads += [("globals", module) for module in {module for module, _ in summaries}]
        reads += [("writes", f"{module}.{name.partition('.')[0]}") for module, name in summaries]
        reads += [("sites", name) for name in names]
        reads += [key for key in self._read_keys() if key[0] == "sites" and key[1].rpartition(".")[2] in methods]
        self.forget(reads)

    def rediscover(self, sharing: "list[Solver]") -> None:
        """Find the calls through values again after `forget` (what the solvers in `sharing`, which use these call
        sites, read of the sites that changed is dropped too)."""
        assert self._sites is not None
        self._discover(self._sites, sharing)

    # ----- the nodes -----------------------------------------------------------------------------------------------
    def _grows(self, key: Any) -> bool:
        # whether a test holds (or may hold or fail) is answered anew, not joined; a parameter's share of a
        # variable, and one run's writes to a module variable, are what the variable would compute in place (it is
        # joined and bounded there)
        return key[0] not in ("truth", "may", "param", "stores")

    def _compute(self, key: Any) -> Value:
        tag = key[0]
        if tag == "var":
            return self._variable(key[1], key[2])
        if tag == "ret":
            summary = self.scope(key[1][0], key[1][1])
            if summary is None:
                return unknown(f"{key[1][1]} was not indexed")
            return union(self._eval(e, key[1]) for e in summary.returns) or frozenset({("C", None)})
        if tag == "attr":
            return self._instance_attribute(key[1], key[2])
        if tag == "mapping":
            return self._mapping_items(key[1])
        if tag == "dynamic":
            return self._dynamic(key[1], key[2])
        if tag == "global":
            return self._global(key[1])
        if tag == "named-class":
            return self.class_in_table(key[1])
        if tag == "expr":
            return self._eval(key[1], key[2])
        if tag == "items-of":
            return self._items(key[1])
        if tag == "vararg":
            return self._vararg_item(key[1], key[2])
        if tag == "truth":
            return frozenset({("C", self._truth(key[1], key[2]))})
        if tag == "may":
            return frozenset({("C", self._may(key[1], key[2]))})
        if tag == "param":
            summary = self.scope(key[1][0], key[1][1])
            if summary is None:
                return unknown(f"{key[1][1]} was not indexed")
            return self._parameter(key[1], summary, key[2])
        if tag == "stores":
            summary = self.scope(key[1][0], key[1][1])
            return union(self._eval(e, key[1]) for e in summary.global_writes.get(key[2], ())) if summary is not None else EMPTY
        raise ValueError(key)

    def _prepare(self) -> None:
        if self._sites is not None:
            return
        if self.sites_from is not None:
            self.sites_from._prepare()
            self._sites = self.sites_from._sites
            return
        index = None
        if self.index_from is not None:
            self.index_from._prepare()
            index = self.index_from._sites
        self._sites = sites = CallSites(self.package, index)
        if not self.defaults:
            self._discover(sites, [])

    def _discover(self, sites: CallSites, sharing: "list[Solver]") -> None:
        # what each call through a value was found to call, and the values that decided it: a later round reads it
        # again only where one of those values was dropped and solved anew (or the runs changed); a value still held
        # is the one read then, which asking again would give (a solved value changes only when `forget` drops it)
        known: dict[tuple[Expr, Ctx], tuple[list[Ctx], list[tuple[str, Ctx]], list[tuple[Any, Value]]]] = {}
        for _ in range(_ROUNDS):  # calls through values become call sites once their callees are solved
            found: dict[str, dict[tuple[Expr, Ctx], None]] = {}  # callee -> its calls in order, each once
            for call, ctx in sites.dynamic_sites:
                runs = self._runs(call, ctx)
                last = known.get((call, ctx))
                if last is None or last[0] != runs or not all(self._known(key) is value for key, value in last[2]):
                    asked: list[tuple[Any, Value]] = []
                    last = known[(call, ctx)] = (runs, [(t, run) for run in runs for t in self._targets(call, run, asked)], asked)
                for target, run in last[1]:
                    found.setdefault(target, {})[(call, run)] = None  # closures of one function made in several runs: one callee
            changed = sites.register({target: list(calls) for target, calls in found.items()})
            if not changed:
                break
            for solver in (self, *sharing):
                solver.forget([("sites", qual) for qual in changed])
                solver._rounds.clear()

    def _targets(self, call: Expr, run: Ctx, asked: list[tuple[Any, Value]]) -> Iterator[str]:
        """What a call through a value calls in `run`: package functions, and the `__call__` of package objects. The
        values asked for on the way are noted in `asked`."""
        for atom in self._asked(("expr", call[1], run), asked):
            if atom[0] == "G" and not self._unbound(call[1], atom[1], run, asked):
                yield atom[1]
            elif atom[0] == "I" and atom[1] in self.package.classes and (called := self._called(atom[1])):
                yield f"{called[0]}.{called[1]}"  # its `__call__`

    def _called(self, cls: str) -> tuple[str, str] | None:
        """(module, scope) of the `__call__` an object of package class `cls` runs when called, where the package
        defines it (a layer's own is the framework's, which runs its forward)."""
        assert self._sites is not None
        owner = self._sites.method_owner(cls, "__call__")
        if owner is None:
            return None
        module, facts = self.package.classes[owner]
        return module.module, f"{facts.name}.__call__"

    def _unbound(self, callee: Expr, qual: str, run: Ctx, asked: list[tuple[Any, Value]]) -> bool:
        """Whether `obj.method(...)` may run the method `qual` unbound (`Cls.method(obj, x)`): its arguments would
        bind one parameter off, so such a call is no call site of it (through instances only, it binds `self`)."""
        if callee[0] != "a" or callee[2][:1].isupper():
            return False
        scope = self._function_scope(qual)
        summary = self.scope(*scope) if scope is not None else None
        if summary is None or summary.method != "method":
            return False
        return any(a[0] != "I" for a in self._asked(("expr", callee[1], run), asked))

    def _asked(self, key: Any, asked: list[tuple[Any, Value]]) -> Value:
        """`_ask(key)`, noted with its value in `asked`."""
        value = self._ask(key)
        asked.append((key, value))
        return value

    def _runs(self, call: Expr, ctx: Ctx) -> list[Ctx]:
        """Where a call through a value is solved: in a function that calls a parameter (`model_cls(**kwargs)` in
        a builder), once for each call of that function, so what one caller passes builds what that caller
        asked for, with that caller's arguments (not every caller's arguments for every class built there)."""
        summary = self.scope(ctx[0], ctx[1]) if ctx[1] != MODULE_SCOPE else None
        callee = call[1]
        if summary is None or summary.method != "" or callee[0] != "n" or callee[1] not in summary.params:
            return [ctx]
        assert self._sites is not None
        callers = self._sites.of(f"{ctx[0]}.{ctx[1]}", summary)
        if not callers or len(callers) > MAX_RUNS:
            return [ctx]
        return [self._run_for(site, caller, ctx[0], ctx[1], skip) for site, caller, skip in callers]

    def _sites_of(self, qual: str, summary: ScopeSummary | None = None) -> list[Site]:
        """The call sites of function `qual` (with its `summary`) or constructions of class `qual`, as the node being
        computed reads them: it is computed again when calls through values add to them."""
        assert self._sites is not None
        self._read(("sites", qual))
        if summary is None:
            return [(call, ctx, 0) for call, ctx in self._sites.of_class(qual)]
        return self._sites.of(qual, summary)


def _untested(expr: Expr) -> Expr:
    """`expr` without the `if` tests it flows under."""
    while expr[0] == "if":
        expr = expr[3]
    return expr


def _function_scope(package: PackageView, qual: str) -> tuple[str, str] | None:
    """(module, scope name) of a package function, method or nested function, found by its qualified name."""
    module = qual
    while "." in module:
        module = module.rpartition(".")[0]
        facts = package.modules.get(module)
        if facts is not None:
            name = qual[len(module) + 1 :]
            if name in facts.scopes:
                return module, name
            head, _, rest = name.partition(".")
            if not rest and head in facts.functions:
                return module, name
            if rest and "." not in rest and head in facts.classes and defines(facts.classes[head], rest):
                return module, name
            return None
    return None


