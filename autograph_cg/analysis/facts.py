"""Facts about one file, produced by one parse and one walk, small enough to cache and send between processes.

Nothing here refers to AST nodes: cross-file passes (eligibility, plan) work from these facts alone.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from autograph_cg.analysis.resolver.summaries import Expr, ScopeSummary
from autograph_cg.analysis.verdicts import Guard
from autograph_cg.findings import Finding, Span

Digests = tuple[str, dict[str, str]]  # (the frame's digest, each summary's by scope name)


@dataclass(frozen=True)
class CallRef:
    """A call made by a function that another function or layer may answer.

    kind:
      "self"       self.NAME(...) — a method, or a sublayer held in attribute NAME (resolved later)
      "self-attr"  self.ATTR.NAME(...) — method NAME of the sublayer held in ATTR
      "super"      super().NAME(...)
      "name"       a module-level name or import: `target` is its qualified name ("pkg.ops.rotate_half")
      "instance"   a local built from class `target` in this function and then called
      "unresolved" a call we cannot follow (a parameter, a local object) that receives tensors
      "result"     a call of what a call of the package function `target` returns (`find(op)(x)`); `callee` is that call
    """

    kind: str
    target: str
    span: Span
    text: str  # the callee as written, for messages: "self.act", "helper"
    host_args: tuple[bool, ...] = ()  # per leading positional argument: a host value
    callee: Expr | None = None  # "unresolved", "result" and "name" calls: the callee in the resolver's language
    conditions: tuple[int, ...] = ()  # indexes into the function's `conditions` the call sits under
    call: Expr | None = None  # "name" calls, "self" and "super" calls with arguments: the whole call (its arguments bind the function's parameters)
    scope: str = ""  # the resolver's scope of a call inside a closure ("f.<locals>.run"); "" for the function's own
    # what it passes, by position (int) or keyword (str; None for `**x`): ("n", p) the caller's parameter `p`
    # unchanged (("n", p, alternatives): unchanged where the alternatives keep the tests that rebind it out),
    # ("c", value) a constant, ("either", (a, b)) the arms of a ternary, ("?",) anything else, ("*",) `*xs` from that
    # position on (for guards)
    passes: tuple[tuple[int | str | None, Expr], ...] = ()
    # calls in the tests it sits under that, each true while a graph captures, keep it from running then
    # (`analysis/capture.py`): it never runs in a graph if the verdict pass finds they are
    cut: tuple[str, ...] = ()


@dataclass(frozen=True)
class Condition:
    """An `if` test that code sits under: `expr` in the resolver's language, `text` as written."""

    expr: Expr
    text: str
    negated: bool  # the `else` arm: the code runs when the test is false
    arguments: tuple[str, ...] = ()  # the function's parameters it tests, not rebound before it (for guards)
    tensors: tuple[str, ...] = ()  # those of them that are tensors there: only `is None` may test them
    # per parameter it tests that was rebound before it under tests (`if use_cache and past is None: past =
    # Cache()`): the alternatives keeping every such rebinding out, which a test of the caller's value needs too
    unless: tuple[tuple[str, tuple[Guard, ...]], ...] = ()
    # per parameter it tests that was rebound before it to a constant (`else: use_cache = False`): the constant and
    # the alternatives under which the name holds it there
    fixed: tuple[tuple[str, object, tuple[Guard, ...]], ...] = ()
    # the layer's own settings it tests (`self.config.is_decoder`), which nothing before it writes: the runtime
    # reads them from the wrapped layer
    settings: tuple[str, ...] = ()
    # the body (not the `else`) of an `if` of a layer's method whose test reads state of `self` and found nothing
    # itself: what the test holding needs of that state (`refresh.staleness`), and the attributes of `self` the body
    # writes where it stands; with what the methods of `self` it calls write, it says whether the body is a refresh
    stale: tuple = ()
    wrote: tuple[str, ...] = ()


@dataclass(frozen=True)
class FunctionFacts:
    name: str
    qualname: str  # "Class.method" or "function" within its module
    line: int
    calls: tuple[CallRef, ...] = ()
    findings: tuple[Finding, ...] = ()
    writes_self: tuple[str, ...] = ()  # attributes assigned on self (for per-call state detection)
    walked: bool = True  # False: the body was not walked, so calls and findings are unknown
    error: str = ""  # an internal error met while walking it: calls and findings are unknown
    ops: int = 0  # tensor operations its body runs once through: about the kernels it launches itself
    conditions: tuple[Condition, ...] = ()  # the `if` tests code of this function sits under
    guards: tuple[tuple[int, ...], ...] = ()  # per finding, the conditions it sits under (empty: none at all)
    # per finding that writes the layer's state in a refresh (`analysis/refresh.py`), the condition whose test reads
    # that state; -1 for the others (empty: none at all)
    refreshes: tuple[int, ...] = ()
    # per finding, whether it writes the layer's state (`refresh.written`) in the function's own code, not a
    # closure's: a refresh when the function runs only in one (a method a refresh calls; empty: none at all)
    state_writes: tuple[bool, ...] = ()
    # the attributes of `self` it writes in its own code (`self.x = ...`, `self.register_buffer("x", ...)`)
    writes_state: tuple[str, ...] = ()
    # per finding, the calls whose truth while capturing keeps it out of a graph (see `CallRef.cut`)
    cuts: tuple[tuple[str, ...], ...] = ()
    # per finding, other modules' functions whose results alone make what it reads a tensor: if each returns a host
    # value (its annotation says so), there is nothing to find
    assumes: tuple[tuple[str, ...], ...] = ()
    host_return: bool = False  # a module function annotated to return a host value (`-> bool`)
    decorated: bool = False  # a decorator wraps it: it may set what a caller leaves out (a guard is strict there)
    decorator: str = ""  # the outermost decorator's qualified name, as far as imports tell
    # a decorator that fills what a call leaves out from the layer's config alone (`config_fill.fills_from_config`)
    fills_from_config: bool = False
    # a module function: per `return`, the calls whose truth makes it true (`capture.truthy_calls`)
    truthy: tuple[tuple[str, ...], ...] = ()

    def guard(self, index: int) -> tuple[int, ...]:
        return self.guards[index] if index < len(self.guards) else ()

    def refresh(self, index: int) -> Condition | None:
        """The test of the refresh the finding writes the layer's state in, None when it is no such write."""
        at = self.refreshes[index] if index < len(self.refreshes) else -1
        return self.conditions[at] if at >= 0 else None

    def writes_state_at(self, index: int) -> bool:
        """Whether the finding writes the layer's state in the function's own code."""
        return index < len(self.state_writes) and self.state_writes[index]

    def cut(self, index: int) -> tuple[str, ...]:
        return self.cuts[index] if index < len(self.cuts) else ()

    def assumed(self, index: int) -> tuple[str, ...]:
        return self.assumes[index] if index < len(self.assumes) else ()


@dataclass(frozen=True)
class SiteFacts:
    """A layer constructed in a class's __init__ (or at module level): `self.mlp = MLP(cfg)`."""

    span: Span  # the constructor call
    cls: str  # qualified name of what is called, as far as imports tell ("paddle.nn.Linear", "pkg.mlp.MLP")
    attr: str  # "mlp"; for container items the container's attribute; "" when unknown
    target: str  # "self.mlp", "self.blocks[*]", "model"
    container: str = ""  # qualified container class ("paddle.nn.LayerList") or "list"/"dict" for plain literals
    existing: bool = False  # already wrapped in CUDAGraphedLayer(...)
    skipped: bool = False  # `# autograph-cg: skip` on the statement
    callee: Expr | None = None  # the call, in the resolver's language, when `cls` does not say what it builds
    scope: str = ""  # the function the call sits in ("Class.__init__", "make_blocks"); "" at module level
    holder: str = ""  # a container site and the item sites it holds share this key
    guard: Guard | None = ()  # what an existing wrapper passes as `guard=`; None: not a literal of tests
    receiver: str = ""  # the constructor call (`line:col`) a local list holding it is handed to: its sublayer there


@dataclass(frozen=True)
class ClassFacts:
    name: str
    qualname: str  # "pkg.module.Class"
    line: int
    bases: tuple[str, ...]  # qualified names as far as imports tell
    methods: dict[str, FunctionFacts] = field(default_factory=dict)
    sites: tuple[SiteFacts, ...] = ()  # sublayers built by __init__ and the methods it calls
    attrs: dict[str, tuple[Expr, ...]] = field(default_factory=dict)  # class attributes (`expansion = 4`)
    has_init: bool = False  # defines `__init__` (not in `methods`, which holds what forward may call)
    init_raises: bool = False  # its `__init__` is one `raise` (a placeholder): no instance of it is ever built
    # without a `forward` method: the methods `__init__` makes the instance's forward (`self.forward = self.m`)
    forwards: tuple[str, ...] = ()
    skipped: bool = False
    error: str = ""  # an internal error met while reading what __init__ builds


@dataclass(frozen=True)
class ModuleFacts:
    path: str
    module: str  # dotted module name
    framework: str | None  # "paddle", "torch" or None
    imports: dict[str, str]  # local name -> qualified name
    classes: dict[str, ClassFacts]
    functions: dict[str, FunctionFacts]
    sites: tuple[SiteFacts, ...] = ()  # module-level and plain-function constructions (`model = Net(cfg)`)
    lines: int = 0
    deep: bool = True  # sublayer sites and the bodies forward reaches within the file were indexed
    complete: bool = True  # every function body was walked, every sublayer site found: a deep index adds nothing
    star_imports: tuple[str, ...] = ()  # modules `from m import *` reads, in order
    optional_imports: tuple[str, ...] = ()  # imported only if installed: `try: import x` / `except ImportError:`
    scopes: dict[str, ScopeSummary] = field(default_factory=dict)  # the resolver's summaries, by scope name (`_Unpickled`)
    errors: tuple[tuple[str, str], ...] = ()  # (where, detail): internal errors met outside any walk
    # the top-level packages its imports name, wherever they stand (in functions and classes too): the groups of
    # files that import each other are judged apart (`groups.py`)
    reaches: tuple[str, ...] = ()
    # what the resolver reads of the file (`solved.digests`): of its frame (imports, names, classes' bases and
    # attributes) and of each summary, by scope name; equal, the resolver's answers hold
    digests: "Digests | None" = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled, the summaries travel as bytes of their own, unpickled when first read (`_Unpickled`)."""
        state = dict(self.__dict__)
        if "scopes" in state:
            state["_scopes"] = pickle.dumps(state.pop("scopes"), protocol=pickle.HIGHEST_PROTOCOL)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class _Unpickled:
    """`ModuleFacts.scopes` of facts read from a pickle: the summaries are half of a file's facts, and a run that starts
    from the last run's solved state reads those of a few files (12 of paddlenlp's 702 after a comment in one), so
    they stay bytes until first read and are then the instance's own attribute, read as any other (a mapping that
    unpickled on demand cost every read a call, a few per cent of a cold run)."""

    def __get__(self, facts: ModuleFacts | None, owner: type | None = None) -> Any:
        if facts is None:
            return self
        scopes = facts.__dict__["scopes"] = pickle.loads(facts.__dict__.pop("_scopes"))
        return scopes


ModuleFacts.scopes = _Unpickled()  # type: ignore[assignment]  # after the dataclass: not a default of the field
