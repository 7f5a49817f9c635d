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
from autograph_cg.analysis.facts import ClassFacts, ModuleFacts
from autograph_cg.analysis.resolver.fixpoint import FixedPoint
from autograph_cg.analysis.resolver.registries import auto_build, named_class, sub_config
from autograph_cg.analysis.resolver.sites import SITE_DEPTH, CallSites, Ctx, PackageView, Site, defines, owner_class, site_depth
from autograph_cg.analysis.resolver.summarize import PASS_THROUGH, RUNTIME_WRAPPER
from autograph_cg.analysis.resolver.summaries import DYNAMIC, ITEMS, LAMBDA, MODULE_SCOPE, Expr, ScopeSummary, reads_self
from autograph_cg.analysis.resolver.values import (
    EMPTY,
    HOST,
    HOST_CALLED,
    TENSOR,
    TOO_MANY,
    Atom,
    Value,
    bounded,
    instances,
    listing,
    mapping,
    union,
    unknown,
)

_ROUNDS = 4  # rounds of call-site discovery through solved callees
_MAX_RUNS = 256  # calls of one function beyond which a call through its parameter is solved once for all of them
#: Parts of an outside qualified name (`paddle.distributed.fleet.layers.mpu.mp_layers.RowParallelLinear`: 7) beyond
#: which an attribute read gives an unknown: a cycle (`x = x.device` of an outside object) grows one forever
_MAX_NAME_PARTS = 10
_LONG_CHAIN = unknown("an attribute chain of outside code too long to follow")
_MAPPING_BASES = ("OrderedDict", "dict", "Mapping", "MutableMapping", "UserDict", "defaultdict")
_STRING_METHODS = frozenset(
    {"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "replace", "removeprefix", "removesuffix", "split", "startswith", "endswith"}
)
#: Layer methods that return the layer itself (`nn.Module.train`, `.to`, ...), when the package does not define them
_RETURNS_SELF = frozenset({"train", "eval", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "to_empty"})
_CONTAINER_READS = frozenset({"values", "items", "get", "pop", "copy", "setdefault", "__getitem__", "children", "named_children", "modules"})
#: A layer's methods that give the layers it holds, as the container reads they are like
_CHILDREN = {"children": "values", "named_children": "items"}
_HOST_ANNOTATIONS = frozenset(("n", t) for t in ("str", "int", "float", "bool", "bytes"))
_BUILTIN_NAMES = frozenset(n.rsplit(".", 1)[1] for n in PASS_THROUGH if n.startswith("builtins.")) | fw.HOST_BUILTINS


class Solver(FixedPoint):
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
        self._writers: dict[str, _Writes] = {}  # class -> what its methods assign on self (`_writes`)
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
        """The package class a table of names names (`registries.named_class`), solved once as a node."""
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

    def _truth(self, condition: Expr, ctx: Ctx) -> bool | None:
        holds, fails = self._may(condition, ctx)
        return None if holds == fails else holds

    def _condition(self, condition: Expr, ctx: Ctx) -> tuple[bool, bool]:
        """`_may`, solved once per test and context (the values guarded by one `if` ask it again at every
        recomputation); while it is being computed (a cycle back to it) or when it did not settle, asked afresh."""
        for atom in self._node(("may", condition, ctx)):
            if atom[0] == "C":
                return atom[1]
        return self._may(condition, ctx)

    def _may(self, condition: Expr, ctx: Ctx) -> tuple[bool, bool]:
        """(the test may hold, it may fail) for some candidate value. Both only ever turn true as values grow,
        so a value guarded by a test (`if is_exportable(): ...`) only ever grows too."""
        tag = condition[0]
        if tag in ("and", "or"):
            parts = [self._may(c, ctx) for c in condition[1]]
            if tag == "and":
                return all(h for h, _ in parts), any(f for _, f in parts)
            return any(h for h, _ in parts), all(f for _, f in parts)
        if tag == "not":
            holds, fails = self._may(condition[1], ctx)
            return fails, holds
        if tag == "is":  # `x is None` (negated: `is not`)
            value = self._eval(condition[1], ctx)
            vague = any(a[0] in ("?", "H", HOST_CALLED[0]) for a in value)
            none = vague or ("C", None) in value
            other = vague or any(a != ("C", None) for a in value)
            return (other, none) if condition[2] else (none, other)
        if tag == "cmp":  # `x > number` and its kin
            value = self._eval(condition[1], ctx)
            outcomes = [_compare(a, condition[2], condition[3]) for a in value]
            return any(o is not False for o in outcomes), any(o is not True for o in outcomes)
        if tag == "eq":  # `x == constant` (negated: `!=`)
            value = self._eval(condition[1], ctx)
            same = any(a[0] != "C" or a[1] == condition[2] for a in value)
            other = any(a[0] != "C" or a[1] != condition[2] for a in value)
            return (other, same) if condition[3] else (same, other)
        if tag == "isa":  # `isinstance(x, str)`: decided for candidates whose type is known (on no candidate, undecided)
            types = _builtin_types(self._eval(condition[2], ctx))
            tested = self._eval(condition[1], ctx) if types else EMPTY
            outcomes = [self._is_instance(a, types) for a in tested] or [None]
            return any(o is not False for o in outcomes), any(o is not True for o in outcomes)
        value = self._eval(condition, ctx)
        return any(_may_be(a, True) for a in value), any(_may_be(a, False) for a in value)

    def _is_instance(self, atom: Atom, types: tuple[type, ...]) -> bool | None:
        """Whether a candidate is an instance of builtin `types`; None when its type is not known. A constant is its
        Python value, a dict atom a dict; a list atom may be a list, a tuple, a set or a framework container; tensors,
        framework objects and package classes, functions and instances (bases of their own or the framework's) are
        none of these types."""
        kind = atom[0]
        if kind == "C":
            return isinstance(atom[1], types)
        if kind == "K":
            return dict in types
        if kind == "L":
            return False if not any(t in types for t in (list, tuple, set, frozenset)) else None
        if kind == "T":
            return False
        if kind == "G" and (atom[1] in self.package.classes or self._function_scope(atom[1]) is not None):
            return False
        if kind == "I" and (fw.is_framework(atom[1]) or (atom[1] in self.package.classes and self._plain_class(atom[1]))):
            return False
        return None

    def _plain_class(self, cls: str) -> bool:
        """Whether a package class derives only from package classes, `object` and framework classes (so none of
        the builtin types)."""
        return all(b in ("object", "builtins.object") or fw.is_framework(b) for b in self._external_bases(cls))

    def scope(self, module: str, name: str) -> ScopeSummary | None:
        facts = self.package.modules.get(module)
        if facts is None:
            return None
        found = self._summary(facts, name)
        if found is None and name != MODULE_SCOPE and not facts.deep:
            self.package.note_shallow(facts)
        return found

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
            return named_class(self, key[1])
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
        if not callers or len(callers) > _MAX_RUNS:
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

    # ----- names ---------------------------------------------------------------------------------------------------
    def _lookup(self, name: str, ctx: Ctx) -> Value:
        module, scope_name, site = ctx
        while scope_name != MODULE_SCOPE:
            summary = self.scope(module, scope_name)
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
                unseen = _unseen(name, summary) if runs_for is not None else None
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
        if not sites or len(sites) > _MAX_RUNS:
            return [anyrun]
        return [self._run_for(call, caller, module, summary.name, skip) for call, caller, skip in sites]

    def _called_in(self, closure: str, run: Ctx) -> bool:
        """Whether a call seen may run closure `closure` of the function `run` runs: not when that function returns the
        closures it makes and every call of `closure` calls one another run made (`register_kernel(op, kind)` hands its
        decorator to code outside the package): what such a closure would store is not seen being stored."""
        parent = self.scope(run[0], run[1])
        summary = self.scope(run[0], closure)
        if parent is None or summary is None or not isinstance(run[2][0], int) or not _returns_closures(parent):
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
        if not _returns_closures(parent):
            return False
        return self._eval(callee[1], ctx) == frozenset({("G", f"{run[0]}.{parent.name}")})

    # ----- parameters --------------------------------------------------------------------------------------------
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
            return frozenset({mapping({(None, _unseen(name, summary))})})  # makes: a loader's `cls(**settings)` may
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
            return frozenset({_unseen(name, summary)})
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
                parts.append(frozenset(a for atom in self._eval(value, ctx) if atom[0] == "K" for k, a in atom[1] if k == name))
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

    # ----- expressions ----------------------------------------------------------------------------------------------
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

    def _self(self, ctx: Ctx) -> Value:
        """What `self` is in method scope `ctx`: the concrete class an inherited method runs for (`("self", cls)`);
        in the run of `__getitem__` for one `obj[key]`, the package classes `obj` may be an instance of (a registry's
        `self._global_mapping` is its subclass's table); else the method's own class (other runs keep it: following
        the caller's object into every run cost a fifth of transformers' solving and changed no verdict)."""
        owner = owner_class(ctx[0], ctx[1], self.package)
        if owner is None:
            return unknown("self outside a class")
        site = ctx[2]
        if site is not None and site[0] == "self":
            return frozenset({("I", site[1])})
        if site is not None and isinstance(site[0], int) and site[2] > 0:
            assert self._sites is not None
            func = self._sites.calls[site[0]][1]
            if func[0] == "a" and func[2] == "__getitem__":
                classes = self.package.classes
                found = frozenset(
                    a for a in self._eval(func[1], site[1]) if a[0] == "I" and a[1] in classes and owner in self.package.mro(a[1])
                )
                if found:
                    return found
        return frozenset({("I", owner)})

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

    def _super(self, attr: str, ctx: Ctx) -> Value:
        """`super().attr`: the next definition in the MRO, or the mapping a dict subclass was built with."""
        assert self._sites is not None
        owner = owner_class(ctx[0], ctx[1], self.package)
        target = self._sites.method_owner(owner, attr, after=owner) if owner else None
        if target is not None:
            return frozenset({("G", f"{target}.{attr}")})
        if owner and attr in _CONTAINER_READS and self._is_mapping(owner):
            return frozenset({("mapping-of", owner, attr)})
        return EMPTY if attr == "__init__" else unknown(f"super().{attr}")

    def _attribute_of(self, value: Value, attr: str) -> Value:
        out: set[Atom] = set()
        package = self.package
        for atom in value:
            kind = atom[0]
            if kind == "G":
                qual = atom[1]
                if attr == "func":
                    out.add(atom)  # `partial(f).func` is f: a partial is its callable here
                elif attr in ("__name__", "__qualname__"):
                    out.add(("C", qual.rsplit(".", 1)[-1]))
                elif qual in package.classes:
                    out |= self._class_attribute(qual, attr)
                elif qual in package.modules:
                    out |= self._module_name(qual, attr)
                elif qual.count(".") >= _MAX_NAME_PARTS - 1:
                    out |= _LONG_CHAIN
                elif self._function_scope(qual) is None and not qual.rsplit(".", 1)[-1][:1].isupper():
                    out |= self._node(("global", f"{qual}.{attr}"))  # a module or function outside
                elif attr[:1].isupper():
                    out |= self._node(("global", f"{qual}.{attr}"))  # a class nested in one outside
                # other attributes of class and function objects hold nothing a layer is built from
            elif kind == "I" and attr in _RETURNS_SELF and (atom[1] not in package.classes or self._inherited(atom[1], attr)):
                out.add(("returns-self", atom))  # `nn.Identity().train(mode)` is that Identity
            elif kind == "I":
                qual = atom[1]
                if qual in package.classes:
                    out |= self._node(("attr", qual, attr))
                else:
                    out |= _framework_instance_attribute(qual, attr)
            elif kind == "C" and isinstance(atom[1], str) and attr in _STRING_METHODS:
                out.add(("str-method", atom[1], attr))  # `name.lower()` of a known string is a known string
            elif kind in ("C", "H"):
                out.add(("H",))
            elif kind == "T":
                out |= HOST if attr in fw.HOST_ATTRIBUTES else TENSOR
            elif kind == "?":
                out.add(atom)
            elif kind in ("L", "K") and attr in _CONTAINER_READS:
                out.add(("container-method", atom, attr))
        return frozenset(out)

    def _class_attribute(self, cls: str, attr: str) -> Value:
        for owner in self.package.mro(cls):
            module, facts = self.package.classes[owner]
            if defines(facts, attr):
                return frozenset({("G", f"{owner}.{attr}")})
            if attr in facts.attrs:
                return union(self._eval(e, (module.module, MODULE_SCOPE, None)) for e in facts.attrs[attr])
        return EMPTY

    def _instance_attribute(self, cls: str, attr: str) -> Value:
        """`self.attr` on an instance of `cls`: the first class of its MRO that assigns or defines it decides."""
        package = self.package
        declared_sub = sub_config(self, cls, attr)  # a composite config's `text_config`: see `registries`
        if declared_sub is not None:
            return declared_sub
        only_declared = False
        for owner in package.mro(cls):
            module, facts = package.classes[owner]
            written: list[Value] = []
            for method, summary in self._writes(owner).writing(attr):
                if not self._builds(owner, method):
                    continue
                ctx = (module.module, summary.name, ("self", cls) if owner != cls else None)  # run for this class
                shared = (module.module, summary.name, None)  # what reads no self is the same for every class
                written.extend(self._eval(e, ctx if reads_self(e, summary) else shared) for e in summary.self_attrs.get(attr, ()))
                written.extend(self._eval(e, ctx) for e in self._named(summary, attr, ctx, known=True))
            if written:
                return union(written)
            if defines(facts, attr):
                return frozenset({("G", f"{owner}.{attr}")})
            if attr in facts.attrs:
                declared = union(self._eval(e, (module.module, MODULE_SCOPE, None)) for e in facts.attrs[attr])
                found = declared | self._field(cls, owner, attr)
                if found or any(e[0] != "ann" for e in facts.attrs[attr]):
                    return found
                only_declared = True  # `config: "Config"` says nothing of its value: a base that assigns it decides
            if not module.deep:
                package.note_shallow(module)
        if only_declared:
            return EMPTY
        if attr in _CHILDREN and self.package.is_layer(cls):  # `model.named_children()`: the layers it holds
            given, assigned = self._held(cls, self._node)
            children = listing(given | {a for a in assigned if self.may_be_layer(a)})
            return frozenset({("container-method", children, _CHILDREN[attr])})
        bases = self._external_bases(cls)
        if attr in _CONTAINER_READS and any(fw.layer_kind(b) == "container" for b in bases):
            held = self._node(("attr", cls, ITEMS)) if attr != ITEMS else EMPTY  # a ModuleDict subclass's own items
            return frozenset({("container-method", listing(self._items(held)), attr)})
        dynamic = attr not in (ITEMS, DYNAMIC) and any(DYNAMIC in self._written(owner) for owner in package.mro(cls))
        if bases:
            known = _framework_instance_attribute(bases[0], attr)
            if not dynamic or any(a[0] != "?" for a in known):  # what the framework class gives, when it knows
                return known
        if dynamic:  # `setattr(self, key, value)`, `add_module(*pair)` under computed names
            return self._node(("dynamic", cls, attr))
        return EMPTY  # set nowhere: reading it would raise, so no value flows from here

    def _builds(self, owner: str, method: str) -> bool:
        """Whether what `method` of `owner` assigns on self counts here. A setter (`set_input_embeddings(new)`, a
        method neither `__init__` nor called from it) changes the build only when called: the default build, which
        the defaults and configured solvers answer, is what construction makes."""
        return method == "__init__" or (not self.defaults and self.branches is None) or self._called_from_init(owner, method)

    def _dynamic(self, cls: str, attr: str) -> Value:
        """What `setattr(self, name, value)` under computed names may set `attr` to: each name solved for `cls` (an
        inherited `setattr(self, self.base_model_prefix, ...)` sets the prefix of the class it runs for), a write
        whose names are known strings other than `attr` left out."""
        parts: list[Value] = []
        for owner in self.package.mro(cls):
            module = self.package.classes[owner][0]
            for method, summary in self._writes(owner).writing(DYNAMIC):
                if not self._builds(owner, method):
                    continue
                ctx = (module.module, summary.name, ("self", cls) if owner != cls else None)
                parts.extend(self._node(("expr", e, ctx)) for e in self._named(summary, attr, ctx, known=False))  # shared
        return union(parts)

    def _named(self, summary: ScopeSummary, attr: str, ctx: Ctx, known: bool) -> list[Expr]:
        """The writes under computed names of a method that may set `attr`: with `known`, those whose names are
        solved to strings, `attr` among them (they count as that method's writes of `attr`); without, the others
        that may (`add_module(*pair)`, names that cannot be told: what an attribute no code names may hold)."""
        found = []
        for expr in summary.self_attrs.get(DYNAMIC, ()):
            names = self._node(("expr", expr[1], ctx)) if expr[0] == "named" else EMPTY  # solved once for every attribute
            solved = bool(names) and all(a[0] == "C" for a in names)
            if solved == known and (not solved or ("C", attr) in names):
                found.append(expr)
        return found

    def _inherited(self, cls: str, method: str) -> bool:
        """Whether `cls` gets `method` from outside the package (no class of its MRO here defines it)."""
        assert self._sites is not None
        return self._sites.method_owner(cls, method) is None

    def _written(self, cls: str) -> set[str]:
        """The attributes the methods of `cls` itself assign on `self`."""
        return self._writes(cls).attrs

    def _writes(self, cls: str) -> "_Writes":
        """What the methods of `cls` itself assign on self, read as one fact (dropped when a summary of the class
        changes, `refresh`): an attribute's value looks at the methods that may write it, not at every method of
        every class of the MRO (a model's MRO holds hundreds)."""
        self._read(("writes", cls))
        found = self._writers.get(cls)
        module, facts = self.package.classes[cls]
        if found is None:
            found = self._writers[cls] = _Writes(module, facts)
        if found.missing and not module.deep:
            self.package.note_shallow(module)
        return found

    def _field(self, cls: str, owner: str, attr: str) -> Value:
        """A field of a class whose `__init__` is generated (a dataclass, a NamedTuple): what constructions pass, or,
        when a subclass defines `__init__`, what the `super().__init__(...)` of the last such one hands on
        (`MBConvConfig.__init__` passing `block` on to its dataclass base)."""
        order = self.package.mro(cls)
        here = order.index(owner)
        if self.defaults or any(self.package.classes[c][1].has_init for c in order[here:]):
            return EMPTY
        fields = list(self.package.classes[owner][1].attrs)
        position = fields.index(attr)
        handing = [c for c in order[:here] if self.package.classes[c][1].has_init]
        if handing:
            module, facts = self.package.classes[handing[-1]]
            summary = self.scope(module.module, f"{facts.name}.__init__")
            ctx: Ctx = (module.module, f"{facts.name}.__init__", None)
            calls = [(c, ctx) for c in summary.calls if c[1] == ("sup", "__init__")] if summary is not None else []
        else:
            calls = [(call, ctx) for call, ctx, _ in self._sites_of(cls)]
        parts: list[Value] = []
        for call, ctx in calls:
            args = call[2]
            if position < len(args) and not any(a[0] == "*" for a in args[: position + 1]):
                parts.append(self._eval(args[position], ctx))
            parts.extend(self._eval(v, ctx) for k, v in call[3] if k == attr)
        return union(parts)

    def _called_from_init(self, cls: str, method: str) -> bool:
        """Whether `__init__` of `cls` calls `self.method(...)` (helpers that build sublayers)."""
        module, facts = self.package.classes[cls]
        summary = self.scope(module.module, f"{facts.name}.__init__")
        return summary is not None and any(c[1] == ("s", method) for c in summary.calls)

    def _external_bases(self, cls: str) -> list[str]:
        return [b for owner in self.package.mro(cls) for b in self.package.classes[owner][1].bases if self.package.resolve(b) is None]

    def _is_mapping(self, cls: str) -> bool:
        return any(b.rsplit(".", 1)[-1] in _MAPPING_BASES for b in self._external_bases(cls))

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

    # ----- calls -------------------------------------------------------------------------------------------------
    def _call(self, expr: Expr, ctx: Ctx) -> Value:
        built = auto_build(self, expr, ctx)  # transformers' `AutoModel.from_config(config)`: see `registries`
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
        depth = SITE_DEPTH + 1 if _returns_closures(summary) else SITE_DEPTH  # a closure made there keeps the run
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


class _Writes:
    """What the methods of one class assign on self: its methods with a summary (in the order the class defines them,
    `__init__` last), and, by attribute, those that may write it (by name, or under computed names)."""

    def __init__(self, module: ModuleFacts, facts: ClassFacts) -> None:
        self.methods: list[tuple[str, ScopeSummary]] = []
        self.missing = False  # a method of the class was not summarized (its file is to be indexed deeply)
        for method in (*facts.methods, "__init__") if facts.has_init else facts.methods:
            summary = module.scopes.get(f"{facts.name}.{method}")
            if summary is None:
                self.missing = True
            else:
                self.methods.append((method, summary))
        self.attrs: set[str] = {attr for _, summary in self.methods for attr in summary.self_attrs}
        self._writing: dict[str, list[tuple[str, ScopeSummary]]] = {}

    def writing(self, attr: str) -> list[tuple[str, ScopeSummary]]:
        """The methods that assign `attr` or assign under computed names (which may be `attr`)."""
        found = self._writing.get(attr)
        if found is None:
            found = self._writing[attr] = [(m, s) for m, s in self.methods if attr in s.self_attrs or DYNAMIC in s.self_attrs]
        return found


def _returns_closures(summary: ScopeSummary) -> bool:
    """Whether every `return` of a function gives a closure it makes (a nested `def` or lambda of its own): each call's
    closure is then its own, made in that call's run."""
    made = [summary.locals.get(e[1], (e,)) if e[0] == "n" else (e,) for e in summary.returns]
    return bool(made) and all(len(m) == 1 and m[0][0] == "fn" for m in made)


def _untested(expr: Expr) -> Expr:
    """`expr` without the `if` tests it flows under."""
    while expr[0] == "if":
        expr = expr[3]
    return expr


def _closure(qual: str, ctx: Ctx) -> Atom:
    """A nested function made in `ctx`: one made in a run of the function it is written in for one call carries that
    run (`("G", qual, run)`), so calling it reads the names it closes over as that run bound them (`wrap(kernel)`
    returning `wrapper`, which calls `kernel`). Lambdas are judged on their own, without it."""
    site = ctx[2]
    if site is None or not isinstance(site[0], int) or LAMBDA in qual or ".<locals>." in ctx[1]:
        return ("G", qual)
    return ("G", qual, ctx)


def _unseen(name: str, summary: ScopeSummary) -> Atom:
    """What a parameter without a default holds when no call seen passes it."""
    return ("?", f"parameter `{name}` of {summary.name}, which no call seen passes")


def _compare(atom: Atom, op: str, number: float) -> bool | None:
    if atom[0] != "C" or not isinstance(atom[1], (int, float)) or isinstance(atom[1], bool) and op != ">":
        return None
    value = atom[1]
    return value > number if op == ">" else value >= number if op == ">=" else value < number if op == "<" else value <= number


_SCALAR_TYPES = (str, int, float, bool, bytes)
_BUILTIN_TYPES = {t.__name__: t for t in (*_SCALAR_TYPES, list, tuple, dict, set, frozenset)}


def _builtin_types(value: Value) -> tuple[type, ...]:
    """The builtin types a value names (`str`, `(int, float)`); () when it names anything else too."""
    found: list[type] = []
    for atom in value:
        if atom[0] == "L":
            found.extend(_builtin_types(atom[1]) or [object])
        elif atom[0] == "G" and atom[1].startswith("builtins.") and atom[1][9:] in _BUILTIN_TYPES:
            found.append(_BUILTIN_TYPES[atom[1][9:]])
        else:
            return ()
    return () if not found or object in found else tuple(found)


def _may_be(atom: Atom, truth: bool) -> bool:
    """Whether a candidate may test as `truth` (tensors, host values and unknowns may test as either)."""
    kind = atom[0]
    if kind == "C":
        return bool(atom[1]) == truth
    if kind in ("L", "K"):
        return bool(atom[1]) == truth
    if kind in ("G", "I"):
        return truth
    return True


def _running(ctx: Ctx | None, scope: tuple[str, str]) -> Ctx | None:
    """The run of function `scope` that context `ctx` is inside of (itself, or a caller up its chain of runs)."""
    while ctx is not None:
        if ctx[0] == scope[0] and ctx[1] == scope[1]:
            return ctx
        ctx = ctx[2][1] if ctx[2] is not None and ctx[2][0] != "self" else None
    return None


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


def _framework_instance_attribute(cls: str, attr: str) -> Value:
    """Attributes of framework layers: parameters and buffers are tensors, `training` and the rest host values."""
    if attr in ("weight", "bias", "running_mean", "running_var", "_mean", "_variance", "in_proj_weight"):
        return TENSOR
    if attr in fw.HOST_ATTRIBUTES or attr.startswith(("in_", "out_", "num_", "_num")) or attr in ("eps", "epsilon", "p", "normalized_shape"):
        return HOST
    return unknown(f"attribute `{attr}` of `{cls.rsplit('.', 1)[-1]}`")
