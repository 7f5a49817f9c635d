"""One walk over one function: infer what each value is, run the rules on each node, record the calls.

This is the analyzer's hot path. It walks each node once, in source order, keeping a flat environment of
local names; rules see the kinds already computed for the sub-expressions of the node they look at.
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Iterable, Iterator

from autograph_cg.analysis import capture
from autograph_cg.analysis.config_fill import fills_argument
from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis import nodes
from autograph_cg.analysis.devices import on_cuda
from autograph_cg.analysis.facts import CallRef, Condition, FunctionFacts
from autograph_cg.analysis import guards
from autograph_cg.analysis import refresh
from autograph_cg.analysis.guards import KWARGS, OTHER, SPREAD
from autograph_cg.analysis.kinds import (
    BOOL_TENSOR,
    HOST,
    LAYER,
    TENSOR,
    TENSORS,
    UNKNOWN,
    is_tensor,
    join,
    maybe_tensor,
)
from autograph_cg.findings import Finding
from autograph_cg.rules.dispatch import DISPATCH

from autograph_cg.analysis.resolver.summaries import lambda_scope
from autograph_cg.analysis.scope import dotted_name

if TYPE_CHECKING:
    from autograph_cg.analysis.resolver.summaries import Expr
    from autograph_cg.analysis.verdicts import Guard
    from autograph_cg.analysis.resolver.summarize import Summarizer
    from autograph_cg.analysis.scope import ClassScope, ModuleScope
    from autograph_cg.rules.base import Rule

#: Parameter names that carry host values by convention (sizes, flags, options).
HOST_PARAM_NAMES = frozenset(
    {
        "dim", "axis", "eps", "epsilon", "n", "num", "k", "size", "shape", "dtype", "training", "inplace",
        "keepdim", "keepdims", "name", "p", "scale", "stride", "padding", "dilation", "groups", "kernel_size",
        "reduction", "mode", "normalize", "deterministic", "is_causal", "align_corners", "seq_len", "max_len",
        "head_dim", "device", "place", "layout", "dims", "axes", "perm", "factor", "ratio", "temperature",
        "top_k", "top_p", "beta", "alpha", "gamma", "momentum", "value", "fill_value", "prefix", "key_name",
        "height", "width", "length", "channels", "batch_size", "seq_length", "world_size", "rank", "start",
        "end", "stop", "begin", "offset", "count", "step", "i", "j",
    }
)  # fmt: skip
_HOST_PARAM_PREFIXES = ("num_", "n_", "use_", "return_", "is_", "has_", "output_", "enable_", "with_", "do_")
_HOST_PARAM_SUFFIXES = (
    "_size", "_dim", "_dims", "_len", "_length", "_num", "_eps", "_ratio", "_rate", "_mode", "_name", "_flag",
    "_shape", "_degree", "_rank", "_stride", "_h", "_w", "_heads", "_layers", "_steps", "_type", "_config",
)  # fmt: skip
_HOST_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "bytes", "dtype", "device", "Size", "None", "Literal", "DataType"})
_WRAPPER_ANNOTATIONS = frozenset({"Optional", "Union", "Tuple", "tuple", "List", "list", "Sequence", "Final"})
_CONTAINER_MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "__setitem__"})
#: Tensor attributes that are tensors themselves.
_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "grad", "data"})
_LAYER_TENSOR_ATTRIBUTES = frozenset({"weight", "bias", "running_mean", "running_var", "_mean", "_variance"})
#: What reading a tensor gives: its metadata or its own data.
_TENSOR_READS = _TENSOR_ATTRIBUTES | fw.HOST_ATTRIBUTES


#: Decorators that leave a method's arguments as the caller passed them.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


def _annotation_names(node: ast.expr) -> list[str]:
    """The names an annotation mentions, in order: `Optional[paddle.Tensor]` -> ["Optional", "Tensor"]."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Constant):
        return [node.value.rsplit(".", 1)[-1]] if isinstance(node.value, str) else ["None"]
    if isinstance(node, ast.Subscript):
        return _annotation_names(node.value) + _annotation_names(node.slice)
    if isinstance(node, ast.Tuple):
        return [name for elt in node.elts for name in _annotation_names(elt)]
    if isinstance(node, ast.BinOp):
        return _annotation_names(node.left) + _annotation_names(node.right)
    return ["?"]


_SEQUENCE_ANNOTATIONS = frozenset({"Tuple", "tuple", "List", "list", "Sequence", "Dict", "dict", "Mapping"})


def _is_none(default: ast.expr | None) -> bool:
    return isinstance(default, ast.Constant) and default.value is None


def _is_sequence(annotation: ast.expr | None) -> bool:
    """`Tuple[...]`, `Optional[List[...]]`, `dict[str, Tensor] | None`: a container (or None), never a tensor."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        rest = [x for x in sides if not (isinstance(x, ast.Constant) and x.value is None)]
        return len(rest) == 1 and _is_sequence(rest[0])
    if not isinstance(annotation, ast.Subscript):
        return False
    head = _annotation_names(annotation.value)[-1]
    if head == "Optional":
        return _is_sequence(annotation.slice)
    return head in _SEQUENCE_ANNOTATIONS


def annotation_kind(annotation: ast.expr | None) -> int | None:
    """What an annotation says a value is; None without one."""
    if annotation is None:
        return None
    names = _annotation_names(annotation)
    if any("Tensor" in name for name in names):
        return TENSOR
    meaningful = [n for n in names if n not in _WRAPPER_ANNOTATIONS]
    if meaningful and all(n in _HOST_ANNOTATIONS for n in meaningful):
        return HOST
    return UNKNOWN


#: Methods only a tensor has: a parameter they are called on is a tensor whatever its name says.
_TENSOR_EVIDENCE = (
    "item", "tolist", "numel", "unsqueeze", "squeeze", "transpose", "permute", "reshape", "view", "flatten",
    "contiguous", "detach", "clone", "float", "half", "bfloat16", "cuda", "masked_fill", "expand", "type_as",
    "astype", "cast", "matmul", "softmax", "sigmoid", "exp", "sum", "mean", "chunk", "unbind", "dim",
)  # fmt: skip
#: Methods of lists and dicts: a parameter they are called on is a container, not a tensor.
_CONTAINER_EVIDENCE = ("append", "extend", "insert", "setdefault", "items", "keys", "values", "get", "update", "pop")
_EVIDENCE = re.compile(r"\b([A-Za-z_]\w*)\s*\.\s*(" + "|".join(_TENSOR_EVIDENCE + _CONTAINER_EVIDENCE) + r")\s*\(")
_CONTAINER_METHODS = frozenset(_CONTAINER_EVIDENCE)


def evidence_kinds(text: str, names: Iterable[str]) -> dict[str, int]:
    """What the methods called on each parameter say it is: a container wins over a tensor."""
    wanted = set(names)
    found: dict[str, int] = {}
    for name, method in _EVIDENCE.findall(text):
        if name in wanted and found.get(name) != UNKNOWN:
            found[name] = UNKNOWN if method in _CONTAINER_METHODS else TENSOR
    return found


def param_kind(arg: ast.arg, default: ast.expr | None) -> int:
    """Parameters are tensors unless their annotation, default or name says they are host values."""
    annotated = annotation_kind(arg.annotation)
    if annotated is not None:
        return annotated
    if default is not None and not (isinstance(default, ast.Constant) and default.value is None):
        return HOST if isinstance(default, (ast.Constant, ast.Tuple, ast.List, ast.UnaryOp, ast.Dict)) else UNKNOWN
    name = arg.arg
    if name in HOST_PARAM_NAMES or name.startswith(_HOST_PARAM_PREFIXES) or name.endswith(_HOST_PARAM_SUFFIXES):
        return HOST
    if len(name) == 1 and name.isupper():  # H, W, C, B, N, L: sizes by convention
        return HOST
    if name in ("cfg", "config", "args", "opts", "options", "kwargs"):
        return UNKNOWN
    return TENSOR


def _only_spread(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """`name` is read only as `**name` in calls: the function hands its keywords on as it got them."""
    spread: set[int] = set()
    read: list[int] = []
    for node in nodes.walk(func):  # one walk: the largest forwards take `**kwargs`
        if node.__class__ is ast.Call:
            spread.update(id(k.value) for k in node.keywords if k.arg is None)  # type: ignore[attr-defined]
        elif node.__class__ is ast.Name and node.id == name:  # type: ignore[attr-defined]
            read.append(id(node))
    return all(n in spread for n in read)


def _own_returns(func: ast.FunctionDef) -> list[ast.Return] | None:
    """The `return` statements of `func` itself (not of functions or classes inside it); None for a generator."""
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(node, ast.Return):
            found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(nodes.children(node))
    return found


def returned(module: ModuleScope, name: str) -> int | tuple[int, ...] | None:
    """What the module function `name` returns, read from its own walk: a kind, or one kind per part when every
    `return` builds a tuple of one length (`early_exit, mask, q_len = prepare(...)` reads the flag and the length the
    function returns as host values, not as parts of a tensor). None when unknown, or while it is being asked."""
    memo = module.returns
    if name in memo:
        return memo[name]
    memo[name] = None  # a recursive call asks again: unknown
    func = module.functions.get(name)
    returns = _own_returns(func) if func is not None else None
    if func is None or returns is None:
        return None
    ctx = FunctionContext(module, None, name, None)
    try:
        ctx.run(func, is_method=False)
    except Exception:  # an analyzer bug in the callee's walk is reported by its own walk; here it is unknown
        return None
    values = [r.value for r in returns]
    width = {len(v.elts) if isinstance(v, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in v.elts) else -1 for v in values}
    result: int | tuple[int, ...]
    if len(width) == 1 and min(width) > 0:
        result = tuple(_joined(ctx.kind(v.elts[i]) for v in values) for i in range(min(width)))  # type: ignore[union-attr]
    else:
        falls_off = not returns or not isinstance(func.body[-1], (ast.Return, ast.Raise))  # the end returns None too
        result = _joined([HOST] * falls_off + [HOST if v is None else ctx.kind(v) for v in values])
    memo[name] = result
    return result


def _joined(kinds: Iterable[int]) -> int:
    result: int | None = None
    for kind in kinds:
        result = kind if result is None else join(result, kind)
    return UNKNOWN if result is None else result


class FunctionContext:
    """The state of one function's walk; rules receive it to ask about kinds, names and positions."""

    __slots__ = (
        "module", "cls", "qualname", "scope_name", "env", "origins", "kinds", "findings", "calls", "writes_self",
        "globals_declared", "local_funcs", "local_imports", "_test_depth", "self_tests", "params", "aliases", "forward",
        "summarizer", "conditions", "active", "guards", "ops", "kwargs", "sequences", "optional", "tests", "exits", "finding_exits",
        "call_exits", "borrowed", "assumes", "_calls_in", "unless", "fixed", "uncertain", "held", "refreshing", "refreshes",
        "state_writes",
    )  # fmt: skip

    def __init__(self, module: ModuleScope, cls: ClassScope | None, qualname: str, summarizer: Summarizer | None = None) -> None:
        self.module = module
        self.summarizer = summarizer  # writes the callee of a call it cannot follow, for the resolver
        self.cls = cls
        self.qualname = qualname
        self.scope_name = qualname  # the resolver's scope of the code being walked: a closure's own inside it
        self.env: dict[str, int] = {}
        self.origins: dict[str, str] = {}  # local name -> self attribute it iterates (for `for blk in self.blocks`)
        # locals ever bound to a function some rule names (`draw = torch.randperm`): their calls go to the resolver
        self.held: set[str] = set()
        self.kinds: dict[int, int] = {}
        self.findings: list[Finding] = []
        self.calls: list[CallRef] = []
        self.writes_self: set[str] = set()
        self.globals_declared: set[str] = set()
        self.local_funcs: set[str] = set()
        self.local_imports: dict[str, str] = {}
        self._test_depth = 0
        self.self_tests: list[tuple[str, ast.AST]] = []  # `if self.X:` tests, for per-call state checks
        self.params: set[str] = set()  # the function's parameters not rebound yet: what the caller passed
        # parameters rebound only under tests of arguments: the alternatives keeping each rebinding out
        self.unless: dict[str, tuple[Guard, ...]] = {}
        # parameters rebound to a constant (`else: use_cache = False`): per constant, the alternatives under which
        # the name holds it (the rebinding ran, and no later one did)
        self.fixed: dict[str, list[tuple[object, tuple[Guard, ...]]]] = {}
        self.uncertain = 0  # loops and `try` blocks the node sits in: code there may run in part, or not at all
        self.aliases: set[str] = set()  # locals bound to a part of such a parameter (`cache = past.layers[i]`)
        self.forward = False  # a layer's forward: its arguments are objects the caller owns
        self.conditions: list[Condition] = []  # the `if` tests met, for code that runs only when they hold
        self.active: tuple[int, ...] = ()  # the conditions the node being walked sits under
        self.guards: list[tuple[int, ...]] = []  # per finding, the conditions active when it was reported
        # the conditions whose test reads state of `self` that their branch writes (`analysis/refresh.py`), and per
        # finding the one of them a write of the layer's state sits under (-1: none)
        self.refreshing: set[int] = set()
        self.refreshes: list[int] = []
        self.state_writes: list[bool] = []  # per finding: a write of the layer's state in the function's own code
        # `**kwargs` when only handed on: its name, and what a call that spreads it passes (KWARGS and the other
        # parameter names, which it cannot hold); None otherwise
        self.kwargs: tuple[str, Expr] | None = None
        self.sequences: frozenset[str] = frozenset()  # arguments annotated as sequences or mappings
        self.optional: frozenset[str] = frozenset()  # arguments that default to None
        self.ops = 0  # framework ops, tensor methods and tensor operators met: the kernels it launches, about
        # capture-aware reachability (`analysis/capture.py`): each condition's test; the early exits the node being
        # walked comes after, as (test, holds); those in force at each finding and call; calls of other modules'
        # functions read as tensors only because they receive some (by node id); per finding, such calls alone
        # making it a tensor
        self.tests: list[ast.expr] = []
        self.exits: tuple[capture.Fact, ...] = ()
        self.finding_exits: list[tuple[capture.Fact, ...]] = []
        self.call_exits: list[tuple[capture.Fact, ...]] = []
        self.borrowed: dict[int, str] = {}
        self.assumes: list[tuple[str, ...]] = []
        self._calls_in: dict[int, dict[int, str]] = {}

    # ----- what rules ask -----------------------------------------------------------------------------------
    @property
    def framework(self) -> str | None:
        return self.module.framework

    def kind(self, node: ast.AST) -> int:
        return self.kinds.get(id(node), UNKNOWN)

    def is_tensor(self, node: ast.AST) -> bool:
        return is_tensor(self.kinds.get(id(node), UNKNOWN))

    def truth_syncs(self, node: ast.AST) -> bool:
        """Whether testing `node`'s truth reads a tensor on the host. An argument annotated as a sequence or mapping
        of tensors (`layer_past: Optional[Tuple[Tensor]]`) is a tensor to every read of an item, but its own truth is
        its length (or None's)."""
        inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else node
        if isinstance(inner, ast.Name) and inner.id in self.sequences and inner.id in self.params:
            return False
        return self.is_tensor(node)

    def holds_tensor(self, node: ast.AST) -> bool:
        """A tensor, or a list/tuple literal with a tensor in it (`[b, n, -1]` with `n` a tensor)."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return any(self.holds_tensor(e) for e in node.elts)
        if isinstance(node, ast.Starred):
            return self.holds_tensor(node.value)
        return is_tensor(self.kinds.get(id(node), UNKNOWN))

    def is_global(self, name: str) -> bool:
        return name not in self.env and self.module.is_global_variable(name)

    def is_argument(self, name: str) -> bool:
        """Whether `name` holds the caller's object: a parameter (rebound under tests only to a part of itself,
        `past = past.self_attention_cache`; after `if x is None: x = []` it may be a fresh object, as before)."""
        return self.forward and (name in self.params and name not in self.unless or name in self.aliases)

    def owned(self, node: ast.expr) -> str | None:
        """The argument of forward whose object `node` is, or a part of (`past.layers[i]`, `past if c else None`):
        the caller keeps it after the call. None for anything else, tensors included (writes to those are GPU work)."""
        if isinstance(node, ast.IfExp):
            return self.owned(node.body) or self.owned(node.orelse)
        if isinstance(node, ast.BoolOp):
            return next((name for value in node.values if (name := self.owned(value))), None)
        root, first = node, None
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root, first = root.value, root
        if not isinstance(root, ast.Name) or not self.is_argument(root.id) or self.is_tensor(node):
            return None
        if self.is_tensor(root) and (isinstance(first, ast.Subscript) or first is not None and first.attr in _TENSOR_READS):
            return None  # `x.shape`, `x[0]` of a tensor: a fresh value or the tensor's own data, not the caller's container
        return root.id  # a part that is no tensor attribute (`past.layers`) says the argument is no tensor either

    def in_test(self) -> bool:
        """Whether the node being checked is (part of) an if/while/assert/ternary condition."""
        return self._test_depth > 0

    def qualify(self, node: ast.expr) -> str | None:
        """The qualified name of a dotted reference to an import or module-level definition, else None."""
        return dotted_name(node, self._global_name)

    def _global_name(self, name: str) -> str | None:
        if name in self.env and name not in self.local_imports:
            return None  # a local shadows the import
        return self.local_imports.get(name) or self.module.qualify_name(name)

    def report(self, rule: Rule, node: ast.AST, detail: str = "") -> None:
        if self.module.framework is not None and self.module.framework not in rule.frameworks:
            return
        span = self.module.span(node)
        self.guards.append(self.active)
        self.refreshes.append(self._refreshed_by(node))
        self.state_writes.append(self.scope_name == self.qualname and refresh.written(node) is not None)
        self.finding_exits.append(self.exits)
        self.assumes.append(self._assumed(node))
        self.findings.append(
            Finding(
                path=self.module.path,
                span=span,
                code=rule.code,
                message=rule.message.format(detail=detail) if "{detail}" in rule.message else rule.message,
                function=self.qualname,
                source_line=self.module.line_text(span.line),
            )
        )

    def _refreshed_by(self, node: ast.AST) -> int:
        """The condition of a refresh that a finding at `node` writes the layer's state under; -1 when it is no such
        write or sits in no refresh of this function's own (a closure's write may run later)."""
        if not self.refreshing or self.scope_name != self.qualname or refresh.written(node) is None:
            return -1
        return next((index for index in reversed(self.active) if index in self.refreshing), -1)

    def _run(self, rules: Iterable[Rule], node: ast.AST) -> None:
        """Structural rules (node types, hooks) report what their check yields."""
        for rule in rules:
            if rule.check is not None:
                for hit, text in rule.check(self, node):
                    self.report(rule, hit, text)

    def _match(self, rules: Iterable[Rule], node: ast.Call, detail: str, name: str) -> None:
        """Rules that matched a call by `name` (resolved through imports, never as written) report it when their guard agrees."""
        for rule in rules:
            if rule.guard is None or rule.guard(self, node, name):
                self.report(rule, node, detail)

    # ----- the walk -------------------------------------------------------------------------------------------
    def run(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool, host_args: tuple[bool, ...] = ()
    ) -> FunctionFacts:
        """`host_args[i]`: every call seen passes a host value as positional argument i (the parameter is host)."""
        self.bind_params(func.args, is_method)
        positional = func.args.posonlyargs + func.args.args
        named = [a for a in (positional[1:] if is_method else positional) + func.args.kwonlyargs if a.annotation is None]
        if named:
            lines = self.module.lines[func.lineno - 1 : func.end_lineno or func.lineno]
            self.env.update(evidence_kinds("\n".join(lines), (a.arg for a in named)))
        for arg, is_host in zip(positional[1:] if is_method else positional, host_args):
            if is_host:
                self.env[arg.arg] = HOST
        self.params = {a.arg for a in (positional[1:] if is_method else positional) + func.args.kwonlyargs}
        self.sequences = frozenset(a.arg for a in positional + func.args.kwonlyargs if _is_sequence(a.annotation))
        defaults = [None] * (len(positional) - len(func.args.defaults)) + [*func.args.defaults, *func.args.kw_defaults]
        self.optional = frozenset(a.arg for a, d in zip(positional + func.args.kwonlyargs, defaults) if _is_none(d))
        kwarg = func.args.kwarg
        if kwarg is not None and _only_spread(func, kwarg.arg):
            named = [a.arg for a in positional + func.args.kwonlyargs + ([func.args.vararg] if func.args.vararg else [])]
            self.kwargs = (kwarg.arg, (KWARGS, tuple(sorted(named))))
        self.forward = is_method and func.name == "forward"
        self.body(func.body)
        cuts = [self._cut(guard, exits) for guard, exits in zip(self.guards, self.finding_exits)]
        calls = [
            replace(call, cut=found) if (found := self._cut(call.conditions, exits)) else call
            for call, exits in zip(self.calls, self.call_exits)
        ]
        decorators = [d for d in func.decorator_list if not (isinstance(d, ast.Name) and d.id in _PLAIN_DECORATORS)]
        return FunctionFacts(
            name=func.name,
            qualname=self.qualname,
            line=func.lineno,
            calls=tuple(calls),
            findings=tuple(self.findings),
            writes_self=tuple(sorted(self.writes_self)),
            conditions=tuple(self.conditions),
            guards=tuple(self.guards) if any(self.guards) else (),
            refreshes=tuple(self.refreshes) if any(r >= 0 for r in self.refreshes) else (),
            state_writes=tuple(self.state_writes) if any(self.state_writes) else (),
            writes_state=tuple(sorted(refresh.assigned(func.body))) if self.cls is not None else (),
            ops=self.ops,
            cuts=tuple(cuts) if any(cuts) else (),
            assumes=tuple(self.assumes) if any(self.assumes) else (),
            decorated=bool(decorators),
            decorator=(dotted_name(decorators[0], self.module.qualify_name) or "") if decorators else "",
        )

    def _cut(self, conditions: tuple[int, ...], exits: tuple[capture.Fact, ...]) -> tuple[str, ...]:
        """The calls whose truth while capturing keeps code under `conditions` and after `exits` out of a graph."""
        if not exits and not any(self._candidates(self.tests[i]) for i in conditions):
            return ()
        facts = [(self.tests[i], not self.conditions[i].negated) for i in conditions]
        return capture.cut(facts + list(exits), self._candidates)

    def _candidates(self, test: ast.expr) -> dict[int, str]:
        found = self._calls_in.get(id(test))
        if found is None:
            found = self._calls_in[id(test)] = capture.candidates(test, self.qualify)
        return found

    def _assumed(self, node: ast.AST) -> tuple[str, ...]:
        """Other modules' functions whose results alone make what a finding at `node` reads a tensor."""
        read = node.test if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)) else node
        found = self._borrowed_only(read) if isinstance(read, ast.expr) else None
        return tuple(sorted(found)) if found else ()

    def _borrowed_only(self, node: ast.expr) -> set[str] | None:
        """The borrowed calls (`self.borrowed`) that make `node` a tensor; None when it is one without them."""
        qual = self.borrowed.get(id(node))
        if qual is not None:
            return {qual}
        if isinstance(node, ast.BoolOp):
            parts: list[ast.expr] = node.values
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            parts = [node.operand]
        else:
            return None
        found: set[str] = set()
        for part in parts:
            if is_tensor(self.kinds.get(id(part), UNKNOWN)):
                inner = self._borrowed_only(part)
                if inner is None:
                    return None
                found |= inner
        return found

    def guarded(
        self, test: ast.expr, negated: bool, body: list[ast.stmt], refreshes: bool = False, stale: tuple = (), wrote: tuple[str, ...] = ()
    ) -> None:
        """Walk `body` as code that runs only when `test` holds (or fails, for an `else`); `refreshes`: `test` reads
        state of `self` that `body` writes, so the writes of the layer's state there are a refresh; `stale` and
        `wrote`: what the test needs of that state and what the body writes of it (`Condition.stale`)."""
        index = self._condition(test, negated, stale=stale, wrote=wrote)
        if index is None:
            self.body(body)
            return
        if refreshes:
            self.refreshing.add(index)
        outer = self.active
        self.active = outer + (index,)
        try:
            self.body(body)
        finally:
            self.active = outer

    def _condition(self, test: ast.expr, negated: bool, text: str = "", stale: tuple = (), wrote: tuple[str, ...] = ()) -> int | None:
        """Record a condition code may sit under; its index (None when no resolver reads conditions)."""
        if self.summarizer is None:
            return None
        index = len(self.conditions)
        text = text or self.module.snippet(test)
        names, settings = self._read_by(test)
        tested = sorted(names & self.params)
        tensors = tuple(n for n in tested if is_tensor(self.env.get(n, UNKNOWN)))
        expr = self.summarizer.condition(test, "self" if self.cls is not None else None)
        unless = tuple((n, self.unless[n]) for n in tested if n in self.unless)
        fixed = tuple((n, value, ran) for n in sorted(names & self.fixed.keys()) for value, ran in self.fixed[n])
        self.conditions.append(Condition(expr, text, negated, tuple(tested), tensors, unless, fixed, settings, stale, wrote))
        self.tests.append(test)
        return index

    def short_circuited(self, node: ast.BoolOp, count: int, findings: int, calls: int) -> None:
        """The findings and calls recorded since `findings` and `calls` happen only when the first `count` operands of
        `node` do not decide it: all true for `and`, all false for `or` (`mask is None or mask.all()` reads the mask
        only when one is passed). The condition is recorded only for operands that found something."""
        if len(self.findings) == findings and len(self.calls) == calls:
            return
        values = node.values[:count]
        prefix = values[0]
        if count > 1:
            prefix = ast.copy_location(ast.BoolOp(op=node.op, values=values), node)
            prefix.end_lineno, prefix.end_col_offset = values[-1].end_lineno, values[-1].end_col_offset
        self.conditioned(prefix, isinstance(node.op, ast.Or), findings, calls)

    def conditioned(self, test: ast.expr, negated: bool, findings: int, calls: int, text: str = "") -> None:
        """The findings and calls recorded since `findings` and `calls` sit under `test` (where it fails, `negated`)."""
        if len(self.findings) == findings and len(self.calls) == calls:
            return
        index = self._condition(test, negated, text)
        if index is None:
            return
        for at in range(findings, len(self.findings)):
            self.guards[at] = self.guards[at] + (index,)
        for at in range(calls, len(self.calls)):
            call = self.calls[at]
            self.calls[at] = replace(call, conditions=call.conditions + (index,))

    def passed_only(self, test: ast.expr, findings: int) -> None:
        """`if layer_past:` of an argument that defaults to None reads a tensor only where a caller passes one: the
        findings of the test since `findings` sit under `layer_past is not None`, as if it were written so (a guard, or
        a default-off condition). The argument may as well be a tuple, whose truth is its length."""
        inner = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
        if isinstance(inner, ast.Name) and inner.id in self.optional and inner.id in self.params:
            passed = ast.copy_location(ast.Compare(inner, [ast.IsNot()], [ast.Constant(None)]), inner)
            self.conditioned(passed, False, findings, len(self.calls), f"{inner.id} is not None")

    def _read_by(self, test: ast.expr) -> tuple[set[str], tuple[str, ...]]:
        """The names `test` reads, and the layer's settings it reads (`self.config.is_decoder`) that this function has
        not written: a guard may test those on the wrapped layer before the call."""
        names: set[str] = set()
        settings: set[str] = set()
        own = self.cls is not None and self.scope_name == self.qualname
        for node in nodes.walk(test):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif own and isinstance(node, ast.Attribute):
                parts: list[str] = []
                while isinstance(node, ast.Attribute):
                    parts.append(node.attr)
                    node = node.value
                if isinstance(node, ast.Name) and node.id == "self" and parts[-1] not in self.writes_self:
                    settings.add(".".join(["self", *reversed(parts)]))
        return names, tuple(sorted(settings))

    def _rebind(self, name: str, value: ast.expr | None) -> None:
        """A parameter rebound under tests of arguments stays the caller's value where those tests keep the
        rebinding out (`if use_cache and past is None: past = Cache()` leaves `past` the caller's where `use_cache` is
        false); rebound anywhere else, it is the caller's no more. `x = x if x is not None else d` rebinds it only
        where the test fails; a constant it is rebound to is what it holds where the rebinding ran (`else: use_cache =
        False`), until another rebinding."""
        if self.summarizer is None:
            self.params.discard(name)
            return
        under = self.active
        if self._filled_from_config(name, value):  # false as "config false" says; any other test: as passed
            self.unless[name] = (((name, "config false"),), ((name, "is not None"),))
            return
        if isinstance(value, ast.IfExp) and any(isinstance(a, ast.Name) and a.id == name for a in (value.body, value.orelse)):
            keeps = isinstance(value.body, ast.Name) and value.body.id == name  # the name where the test holds
            under = under + (self._condition(value.test, keeps),)  # type: ignore[operator]
            value = value.orelse if keeps else value.body
        kept = guards.keep_out_of(self.conditions, under)
        held = [(c, guards.both(ran, kept)) for c, ran in self.fixed.pop(name, ())]
        if isinstance(value, ast.Constant) and isinstance(value.value, (type(None), bool, int, float, str)):
            if not self.uncertain and self.scope_name == self.qualname:
                held.append((value.value, guards.run_under(self.conditions, under)))
        if any(ran for _, ran in held):
            self.fixed[name] = [(c, ran) for c, ran in held if ran]
        if not kept:
            self.params.discard(name)
            self.unless.pop(name, None)
            return
        earlier = self.unless.get(name)
        self.unless[name] = guards.both(earlier, kept) if earlier else kept
        if not self.unless[name]:
            self.params.discard(name)
            del self.unless[name]

    def _filled_from_config(self, name: str, value: ast.expr | None) -> bool:
        """The rebinding fills the argument from the layer's config (`config_fill.fills_argument`), first thing done to
        an argument that defaults to None, in no branch, in the layer's own method: the name is false exactly where the
        call passes a false value or leaves it out (or passes None) and the layer's config holds a false one, the guard
        test "config false", which the runtime checks on the wrapped layer's config."""
        if self.active or name not in self.optional or name in self.unless or name in self.fixed:
            return False
        if self.cls is None or self.scope_name != self.qualname or "config" in self.writes_self:
            return False
        return fills_argument(name, value)

    def bind_params(self, args: ast.arguments, is_method: bool) -> None:
        positional = args.posonlyargs + args.args
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for index, (arg, default) in enumerate(zip(positional, defaults)):
            if index == 0 and is_method:
                self.env[arg.arg] = LAYER if arg.arg == "self" else UNKNOWN
                continue
            self.env[arg.arg] = param_kind(arg, default)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            self.env[arg.arg] = param_kind(arg, default)
        if args.vararg:
            self.env[args.vararg.arg] = TENSORS
        if args.kwarg:
            self.env[args.kwarg.arg] = UNKNOWN

    def body(self, statements: list[ast.stmt]) -> None:
        exits = self.exits  # an early exit holds for the rest of its block
        for statement in statements:
            handler = _STATEMENTS.get(type(statement))
            if handler is not None:
                handler(self, statement)
            else:  # `match` and the like: what their blocks bind may not be bound
                with self.in_part():
                    self.generic(statement)
            if type(statement) is ast.If and self.summarizer is not None:
                self._note_exit(statement)
        self.exits = exits

    @contextmanager
    def in_part(self) -> Iterator[None]:
        """Walk blocks that may run in part or not at all (loops, `try`): a constant bound there may not be held."""
        self.uncertain += 1
        try:
            yield
        finally:
            self.uncertain -= 1

    def _note_exit(self, node: ast.If) -> None:
        """After `if t: return`, the rest of the block runs where `t` fails (where it holds, after an `else:` that
        returns); kept only for tests that call what may say a graph is being captured."""
        body, orelse = capture.terminates(node.body), capture.terminates(node.orelse)
        if body != orelse and self._candidates(node.test):
            self.exits = self.exits + ((node.test, orelse),)

    def generic(self, node: ast.AST) -> None:
        for child in nodes.children(node):
            if isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.stmt):
                self.body([child])
            else:
                self.generic(child)

    def expr(self, node: ast.expr) -> int:
        node_type = type(node)
        if node_type is ast.Name:  # the most frequent nodes, without a handler call
            kind = self.env.get(node.id, UNKNOWN)  # type: ignore[attr-defined]
        elif node_type is ast.Constant:
            kind = HOST
        else:
            handler = _EXPRESSIONS.get(node_type)
            kind = handler(self, node) if handler is not None else self._expr_generic(node)
            rules = _NODE_RULES.get(node_type)
            if rules:
                self.kinds[id(node)] = kind
                self._run(rules, node)
        self.kinds[id(node)] = kind
        return kind

    def test(self, node: ast.expr) -> int:
        self._test_depth += 1
        try:
            kind = self.expr(node)
        finally:
            self._test_depth -= 1
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            self.self_tests.append((node.attr, node))
        return kind

    def _expr_generic(self, node: ast.expr) -> int:
        for child in nodes.children(node):
            if isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.comprehension):
                self._comprehension(child)
        return UNKNOWN

    # ----- names and binding ----------------------------------------------------------------------------------
    def bind(self, target: ast.expr, kind: int, value: ast.expr | None) -> None:
        t = type(target)
        if t is ast.Name:
            name = target.id  # type: ignore[attr-defined]
            self.env[name] = kind
            part = False  # rebound under tests to a part of itself (`past = past.self_attention_cache`)
            if name in self.params or name in self.fixed:
                part = value is not None and self.owned(value) is not None
                self._rebind(name, value)
            self.aliases.discard(name)
            if isinstance(value, (ast.Name, ast.Attribute)) and (qual := self.qualify(value)) is not None \
                    and next(DISPATCH.named(qual), None) is not None:
                self.held.add(name)
            if part and name in self.unless or value is not None and self.owned(value):
                self.aliases.add(name)  # `cache = past.layers[i]`: mutating `cache` mutates the caller's object
            self.origins.pop(name, None)
            self.local_imports.pop(name, None)
            if name in self.globals_declared:
                self._run(DISPATCH.global_writes, target)
        elif t is ast.Tuple or t is ast.List:
            elts = target.elts  # type: ignore[attr-defined]
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elts):
                for sub, val in zip(elts, value.elts):
                    self.bind(sub, self.kinds.get(id(val), UNKNOWN), val)
                return
            element = TENSOR if kind in (TENSOR, TENSORS, BOOL_TENSOR) else HOST if kind == HOST else UNKNOWN
            parts = self._returned_parts(value)
            if parts is not None and len(parts) == len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                for sub, part in zip(elts, parts):
                    self.bind(sub, HOST if part == HOST else element, None)
                return
            part = value if value is not None and self.owned(value) else None  # `k, v = past.layers[i]`: parts of it
            for sub in elts:
                self.bind(sub.value if isinstance(sub, ast.Starred) else sub, element, part)
        elif t is ast.Attribute:
            self.expr(target.value)  # type: ignore[attr-defined]
            if isinstance(target.value, ast.Name) and target.value.id == "self":  # type: ignore[attr-defined]
                self.writes_self.add(target.attr)  # type: ignore[attr-defined]
                self._run(DISPATCH.self_writes, target)
            else:
                self._run(DISPATCH.outer_writes, target)  # `past.seen = n`: an object the caller keeps
        elif t is ast.Subscript:
            self.expr(target.value)  # type: ignore[attr-defined]
            self.expr(target.slice)  # type: ignore[attr-defined]
            self._run(DISPATCH.outer_writes, target)
        elif t is ast.Starred:
            self.bind(target.value, TENSORS if kind == TENSORS else kind, None)  # type: ignore[attr-defined]

    def _returned_parts(self, value: ast.expr | None) -> tuple[int, ...] | None:
        """The parts a call of a function of this module returns, when it returns tuples of one length."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)) or value.func.id in self.local_funcs:
            return None
        name = self._own_function(self.qualify(value.func))
        parts = returned(self.module, name) if name is not None else None
        return parts if isinstance(parts, tuple) else None

    def _own_function(self, qual: str | None) -> str | None:
        """The name of the module-level function of this file that `qual` names (`returned` reads what it returns)."""
        if qual is None:
            return None
        module, _, name = qual.rpartition(".")
        return name if module == self.module.module and name in self.module.functions else None

    def _comprehension(self, comp: ast.comprehension) -> None:
        iter_kind = self.expr(comp.iter)
        self.bind(comp.target, self._element_kind(comp.iter, iter_kind), None)
        self._note_origin(comp.target, comp.iter)
        for condition in comp.ifs:
            self.test(condition)

    def _element_kind(self, iterable: ast.expr, kind: int) -> int:
        if kind in (TENSOR, TENSORS, BOOL_TENSOR):
            return TENSOR
        if kind == LAYER:
            return LAYER
        if kind == HOST:
            return HOST
        return UNKNOWN

    def _note_origin(self, target: ast.expr, iterable: ast.expr) -> None:
        """`for blk in self.blocks` (or `enumerate(self.blocks)`, `zip(self.blocks, ...)`): calling `blk` calls the
        container's items."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
            if iterable.func.id in ("enumerate", "reversed") and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                if iterable.func.id == "enumerate":
                    self.bind(target.elts[0], HOST, None)
                    self.bind(target.elts[1], self._element_kind(iterable.args[0], self.kind(iterable.args[0])), None)
                    target = target.elts[1]
                iterable = iterable.args[0]
            elif iterable.func.id == "reversed":
                iterable = iterable.args[0]
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "zip":
            # `for block, past in zip(self.h, past_key_values)`: each name takes the items of its own iterable
            if isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args) and not iterable.keywords:
                for part, items in zip(target.elts, iterable.args):
                    if not isinstance(items, ast.Starred):
                        self._note_origin(part, items)
            return
        attr = self._self_attr(iterable)
        if attr and isinstance(target, ast.Name):
            self.origins[target.id] = attr
            self.env[target.id] = LAYER

    @staticmethod
    def _self_attr(node: ast.expr) -> str | None:
        """`self.X`, `self.X[...]`, `self.X.values()` -> "X"."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("values", "children"):
            node = node.func.value
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        return None

    # ----- calls ------------------------------------------------------------------------------------------------
    def call(self, node: ast.Call) -> int:
        tensor_in = False
        for arg in node.args:
            k = self.expr(arg)
            if k != HOST and k != UNKNOWN:
                tensor_in = tensor_in or k != LAYER
        for keyword in node.keywords:
            k = self.expr(keyword.value)
            if k != HOST and k != UNKNOWN:
                tensor_in = tensor_in or k != LAYER
        func = node.func
        ftype = type(func)
        if ftype is ast.Name:
            return self._call_name(node, func.id, tensor_in)  # type: ignore[attr-defined]
        if ftype is ast.Attribute:
            qual = self.qualify(func)  # type: ignore[arg-type]
            if qual is not None:
                return self._call_qualified(node, qual, tensor_in)
            return self._call_method(node, func, tensor_in)  # type: ignore[arg-type]
        callee = self.expr(func)  # type: ignore[arg-type]
        if callee == LAYER:
            attr = self._self_attr(func)  # type: ignore[arg-type]
            if attr:
                self._record("self", attr, node, func)
            return TENSOR
        factory = self.qualify(func.func) if ftype is ast.Call else None  # type: ignore[attr-defined]
        if factory is not None and not fw.is_framework(factory):
            # `find(op)(x)`: the factory's body runs, then whatever it returns (a registry entry, a closure), which the
            # resolver solves from the inner call; judging the factory alone passed what it returns unread
            self._record("name", factory, func, func.func)  # type: ignore[arg-type, attr-defined]
            self._record("result", factory, node, func)
            return TENSOR if tensor_in else UNKNOWN
        if tensor_in:
            self._record("unresolved", "", node, func)
            return TENSOR
        return UNKNOWN

    def _record(self, kind: str, target: str, node: ast.Call, func: ast.expr) -> None:
        hosts = []  # which leading positional arguments are host values: the callee's parameter hints
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                break
            hosts.append(self.kinds.get(id(arg), UNKNOWN) == HOST)
        callee = whole = None
        if kind in ("unresolved", "result") and self.summarizer is not None:
            callee = self.summarizer.expression(func, "self" if self.cls is not None else None, self.scope_name)
        elif kind in ("name", "self", "super") and self.summarizer is not None and func is node.func and (kind == "name" or node.args):
            whole = self.summarizer.expression(node, "self" if self.cls is not None else None, self.scope_name)
        span, text = self.module.span(node), self.module.snippet(func)
        scope = self.scope_name if self.scope_name != self.qualname else ""
        self.calls.append(CallRef(kind, target, span, text, tuple(hosts), callee, self.active, whole, scope, self._passes(node)))
        self.call_exits.append(self.exits)

    def _passes(self, node: ast.Call) -> tuple[tuple[int | str | None, Expr], ...]:
        """What a call passes, as guards read it: this function's own parameters, constants, anything else."""
        out: list[tuple[int | str | None, Expr]] = []
        for index, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                out.append((index, SPREAD))
                break
            out.append((index, self._passed(arg)))
        for keyword in node.keywords:
            value = keyword.value
            mine = self.kwargs is not None and keyword.arg is None and isinstance(value, ast.Name) and value.id == self.kwargs[0]
            out.append((keyword.arg, self.kwargs[1] if mine else self._passed(value)))  # type: ignore[index]
        return tuple(out)

    def _passed(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Name) and node.id in self.params:
            unless = self.unless.get(node.id)
            return ("n", node.id, unless) if unless else ("n", node.id)
        if isinstance(node, ast.Constant) and isinstance(node.value, (type(None), bool, int, float, str)):
            return ("c", node.value)
        if isinstance(node, ast.IfExp):  # either arm may be what is passed
            arms = (self._passed(node.body), self._passed(node.orelse))
            return OTHER if OTHER in arms else ("either", arms)
        return OTHER

    def _call_name(self, node: ast.Call, name: str, tensor_in: bool) -> int:
        if name in self.env or name in self.local_funcs:
            if name in self.local_funcs:
                return TENSOR if tensor_in else UNKNOWN
            origin = self.origins.get(name)
            if origin is not None:
                if origin.startswith("<instance>"):
                    self._record("instance", origin[len("<instance>") :], node, node.func)
                else:
                    self._record("self", origin, node, node.func)
                return TENSOR
            if tensor_in or name in self.held:  # a held framework function may draw or sync given host values alone
                self._record("unresolved", "", node, node.func)
                return TENSOR if tensor_in else UNKNOWN
            return UNKNOWN
        qual = self.local_imports.get(name) or self.module.qualify_name(name)
        if qual is not None:
            return self._call_qualified(node, qual, tensor_in)
        if name == "super":
            return LAYER
        return self._call_builtin(node, name, tensor_in)

    def _call_builtin(self, node: ast.Call, name: str, tensor_in: bool) -> int:
        rules = DISPATCH.builtins.get(name)
        if rules:
            self._match(rules, node, name + "()", name)
        if name in fw.TENSOR_BUILTINS:  # abs/sum/pow/max/min apply operators: tensors in, tensors out
            if tensor_in:
                return TENSOR
            if any(self.kind(a) != HOST for a in node.args):
                return UNKNOWN
        if name in ("list", "tuple", "sorted", "reversed") and node.args and maybe_tensor(self.kind(node.args[0])):
            return TENSORS if self.kind(node.args[0]) != UNKNOWN else UNKNOWN
        if name in fw.HOST_BUILTINS:
            return HOST
        if tensor_in:
            self._record("unresolved", "", node, node.func)
            return TENSOR
        return UNKNOWN

    def _call_qualified(self, node: ast.Call, qual: str, tensor_in: bool) -> int:
        root, _, rest = qual.partition(".")
        if root == "builtins" and "." not in rest:  # `from builtins import range as steps`
            return self._call_builtin(node, rest, tensor_in)
        short = qual.rsplit(".", 1)[-1]
        detail = self.module.snippet(node.func) + "()"
        for rule, name in DISPATCH.named(qual):
            self._match((rule,), node, detail, name)
        if root in fw.FRAMEWORKS:
            if fw.returns_host(qual):
                return HOST
            if fw.layer_kind(qual) in ("known", "container", "framework") and short[:1].isupper() and ".nn." in qual + ".":
                return LAYER
            self.ops += 1
            if short in fw.SEQUENCE_FUNCTIONS:
                return TENSORS
            return TENSOR
        if root in DISPATCH.external_roots:
            return HOST if not tensor_in else UNKNOWN
        own = qual.startswith(self.module.module + ".")
        if tensor_in or short[:1].isupper() or own:
            self._record("name", qual, node, node.func)
        function = self._own_function(qual) if own else None
        if function is not None and returned(self.module, function) == HOST:
            return HOST
        if short[:1].isupper():
            return LAYER if not tensor_in else UNKNOWN
        if tensor_in and not own:  # what another module's function returns is known across files only
            self.borrowed[id(node)] = qual
        return TENSOR if tensor_in else UNKNOWN

    def _call_method(self, node: ast.Call, func: ast.Attribute, tensor_in: bool) -> int:
        receiver = func.value
        method = func.attr
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            self.expr(receiver)
            self._record("super", method, node, func)
            return TENSOR
        recv = self.expr(receiver)
        if recv == LAYER:
            rules = DISPATCH.layer_methods.get(method)
            if rules:
                self._match(rules, node, "." + method + "()", method)
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                self._record("self", method, node, func)
                return HOST if self.cls is not None and method in self.cls.host_methods else TENSOR
            attr = self._self_attr(receiver)
            if attr:
                self._record("self-attr", attr + "." + method, node, func)
                return TENSOR
            origin = self.origins.get(receiver.id) if isinstance(receiver, ast.Name) else None
            if origin and origin.startswith("<instance>"):  # `cache = DynamicCache(); cache.get_seq_length()`: an
                self._record("unresolved", "", node, func)  # object built here, whose method the resolver finds
            elif origin:
                self._record("self-attr", origin + "." + method, node, func)
            return TENSOR
        if recv == HOST:
            if method in _CONTAINER_MUTATORS:
                self._run(DISPATCH.container_mutations, node)
            elif method == "format":
                self._match(DISPATCH.format_calls, node, ".format()", "format")
            return HOST
        rules = DISPATCH.methods.get(method)
        if rules and maybe_tensor(recv):
            self._match(rules, node, "." + method + "()", method)
        rules = DISPATCH.op_methods.get(method)
        if rules and is_tensor(recv):
            self._match(rules, node, "." + method + "()", method)
        if method in _CONTAINER_MUTATORS:
            self._run(DISPATCH.container_mutations, node)
        framework = self.module.framework or "torch"
        if method in fw.HOST_METHODS[framework]:
            return HOST
        if is_tensor(recv):
            self.ops += 1
        if method in fw.SEQUENCE_FUNCTIONS and is_tensor(recv):
            return TENSORS
        if is_tensor(recv) or recv == TENSORS:
            return TENSOR
        return TENSOR if tensor_in else UNKNOWN


# ----- expression handlers ----------------------------------------------------------------------------------------
def _attribute(ctx: FunctionContext, node: ast.Attribute) -> int:
    base = ctx.expr(node.value)
    attr = node.attr
    if base == LAYER:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return ctx.cls.attr_kind(attr) if ctx.cls is not None else UNKNOWN
        return TENSOR if attr in _LAYER_TENSOR_ATTRIBUTES else HOST if attr in fw.HOST_ATTRIBUTES else UNKNOWN
    if attr in fw.HOST_ATTRIBUTES or base == HOST:
        return HOST
    if is_tensor(base):
        return TENSOR if attr in _TENSOR_ATTRIBUTES else UNKNOWN
    if base == UNKNOWN and ctx.qualify(node) is None:
        return UNKNOWN
    return UNKNOWN


def _subscript(ctx: FunctionContext, node: ast.Subscript) -> int:
    base = ctx.expr(node.value)
    ctx.expr(node.slice)
    if base == HOST:
        return HOST
    if base == LAYER:
        return LAYER
    if is_tensor(base) or base == TENSORS:
        return TENSOR
    return UNKNOWN


def _binop(ctx: FunctionContext, node: ast.BinOp) -> int:
    left = ctx.expr(node.left)
    right = ctx.expr(node.right)
    if left == BOOL_TENSOR and right == BOOL_TENSOR and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return BOOL_TENSOR
    if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
        return HOST
    if is_tensor(left) or is_tensor(right):
        ctx.ops += 1
    return join(left, right)


def _unaryop(ctx: FunctionContext, node: ast.UnaryOp) -> int:
    operand = ctx.expr(node.operand)
    if isinstance(node.op, ast.Not):
        return HOST
    return operand


def _boolop(ctx: FunctionContext, node: ast.BoolOp) -> int:
    kind = ctx.expr(node.values[0])
    for index, value in enumerate(node.values[1:], 1):
        findings, calls = len(ctx.findings), len(ctx.calls)
        kind = join(kind, ctx.expr(value))
        ctx.short_circuited(node, index, findings, calls)
    return kind


def _compare(ctx: FunctionContext, node: ast.Compare) -> int:
    kinds = [ctx.expr(node.left)] + [ctx.expr(c) for c in node.comparators]
    if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
        return HOST
    if any(is_tensor(k) for k in kinds):
        return BOOL_TENSOR
    if all(k == HOST for k in kinds):
        return HOST
    return UNKNOWN


def _ifexp(ctx: FunctionContext, node: ast.IfExp) -> int:
    """Each arm runs under the test, as an `if`'s do (`past.get_seq_length() if past is not None else 0`); the
    condition is recorded only for an arm that found or called something."""
    ctx.test(node.test)
    kinds = []
    for arm, negated in ((node.body, False), (node.orelse, True)):
        findings, calls = len(ctx.findings), len(ctx.calls)
        kinds.append(ctx.expr(arm))
        ctx.conditioned(node.test, negated, findings, calls)
    return join(kinds[0], kinds[1])


def _sequence(ctx: FunctionContext, node: ast.Tuple | ast.List | ast.Set) -> int:
    kinds = [ctx.expr(e) for e in node.elts]
    if kinds and all(is_tensor(k) for k in kinds):
        return TENSORS
    if all(k == HOST for k in kinds):
        return HOST
    return UNKNOWN


def _dict(ctx: FunctionContext, node: ast.Dict) -> int:
    """A dict of tensors (`{"a": x, "b": [x, y]}`) is indexed like a list of them."""
    for key in node.keys:
        if key is not None:
            ctx.expr(key)
    kinds = [ctx.expr(value) for value in node.values]
    if kinds and all(is_tensor(k) or k == TENSORS for k in kinds):
        return TENSORS
    return UNKNOWN


def _comprehension_expr(ctx: FunctionContext, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> int:
    for generator in node.generators:
        ctx._comprehension(generator)
    element = ctx.expr(node.elt)
    return TENSORS if is_tensor(element) else HOST if element == HOST else UNKNOWN


def _dictcomp(ctx: FunctionContext, node: ast.DictComp) -> int:
    for generator in node.generators:
        ctx._comprehension(generator)
    ctx.expr(node.key)
    ctx.expr(node.value)
    return UNKNOWN


def _lambda(ctx: FunctionContext, node: ast.Lambda) -> int:
    """Walked as part of its enclosing function (as a closure is), its calls solved in its own scope."""
    ctx.bind_params(node.args, is_method=False)
    outer = ctx.scope_name
    ctx.scope_name = lambda_scope(outer, node.lineno, node.col_offset)
    try:
        ctx.expr(node.body)
    finally:
        ctx.scope_name = outer
    return UNKNOWN


def _joinedstr(ctx: FunctionContext, node: ast.JoinedStr) -> int:
    for value in node.values:
        if isinstance(value, ast.FormattedValue):
            ctx.expr(value.value)
            if value.format_spec is not None:
                ctx.expr(value.format_spec)
    return HOST


def _slice(ctx: FunctionContext, node: ast.Slice) -> int:
    kind = HOST
    for part in (node.lower, node.upper, node.step):
        if part is not None:
            kind = join(kind, ctx.expr(part))
    return kind


def _starred(ctx: FunctionContext, node: ast.Starred) -> int:
    return ctx.expr(node.value)


def _namedexpr(ctx: FunctionContext, node: ast.NamedExpr) -> int:
    kind = ctx.expr(node.value)
    ctx.bind(node.target, kind, node.value)
    return kind


_EXPRESSIONS = {
    ast.Attribute: _attribute,
    ast.Subscript: _subscript,
    ast.Call: FunctionContext.call,
    ast.BinOp: _binop,
    ast.UnaryOp: _unaryop,
    ast.BoolOp: _boolop,
    ast.Compare: _compare,
    ast.IfExp: _ifexp,
    ast.Tuple: _sequence,
    ast.List: _sequence,
    ast.Set: _sequence,
    ast.Dict: _dict,
    ast.ListComp: _comprehension_expr,
    ast.GeneratorExp: _comprehension_expr,
    ast.SetComp: _comprehension_expr,
    ast.DictComp: _dictcomp,
    ast.Lambda: _lambda,
    ast.JoinedStr: _joinedstr,
    ast.Slice: _slice,
    ast.Starred: _starred,
    ast.NamedExpr: _namedexpr,
}
_NODE_RULES = DISPATCH.nodes


# ----- statement handlers -------------------------------------------------------------------------------------------
def _expr_stmt(ctx: FunctionContext, node: ast.Expr) -> None:
    ctx.expr(node.value)


def _assign(ctx: FunctionContext, node: ast.Assign) -> None:
    kind = ctx.expr(node.value)
    for target in node.targets:
        ctx.bind(target, kind, node.value)
    value = node.value
    if kind == LAYER and isinstance(value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        qual = ctx.qualify(value.func)
        if qual is not None:  # calling this name later calls an instance of `qual`
            ctx.origins[node.targets[0].id] = "<instance>" + qual


def _annassign(ctx: FunctionContext, node: ast.AnnAssign) -> None:
    if node.value is not None:
        kind = ctx.expr(node.value)
        annotated = annotation_kind(node.annotation)
        ctx.bind(node.target, annotated if annotated is not None and annotated != UNKNOWN else kind, node.value)


def _augassign(ctx: FunctionContext, node: ast.AugAssign) -> None:
    value = ctx.expr(node.value)
    target = node.target
    if isinstance(target, ast.Name):
        current = ctx.env.get(target.id, ctx.module.global_kind(target.id))
        ctx.bind(target, join(current, value), node.value)
    else:
        ctx.bind(target, value, None)


def _branch(ctx: FunctionContext, node: ast.If | ast.While) -> None:
    read = len(ctx.findings)
    ctx.test(node.test)
    rules = DISPATCH.nodes.get(type(node))
    if rules:
        findings = len(ctx.findings)
        ctx._run(rules, node)
        test = node.test
        if len(ctx.findings) > findings and isinstance(node, ast.If):
            ctx.passed_only(test, findings)
            # `if a is None or a.all():` converts a tensor only when the operands before it do not decide, and
            # `if n == 1 and (a is None or a.all()):` only when those of the operand that decides do not either
            while isinstance(test, ast.BoolOp):
                first = _first_tensor(ctx, test)
                if first:
                    ctx.short_circuited(test, first, findings, len(ctx.calls))
                test = test.values[first]
    if isinstance(node, ast.While):
        with ctx.in_part():
            ctx.body(node.body)
            ctx.body(node.orelse)
        return
    runs = on_cuda(node.test, ctx.qualify)  # an arm for another device never runs inside a CUDA graph
    if runs is not False:
        # a test that found nothing (no tensor read on the host) and reads state of `self` that the body writes
        stale = refresh.staleness(node.test) if ctx.cls is not None and len(ctx.findings) == read else None
        wrote = refresh.assigned(node.body) if stale is not None else set()
        refreshes = stale is not None and refresh.stale(stale, wrote)
        if runs is None:
            ctx.guarded(node.test, False, node.body, refreshes, stale or (), tuple(sorted(wrote)))
        else:
            ctx.body(node.body)
    if runs is not True and node.orelse:
        ctx.guarded(node.test, True, node.orelse) if runs is None else ctx.body(node.orelse)


def _first_tensor(ctx: FunctionContext, test: ast.BoolOp) -> int:
    """The position of the first operand whose truth reads a tensor; 0 when it is the first, or none does."""
    for index, value in enumerate(test.values):
        if ctx.truth_syncs(value):
            return index
    return 0


def _assert(ctx: FunctionContext, node: ast.Assert) -> None:
    ctx.test(node.test)
    if node.msg is not None:
        ctx.expr(node.msg)
    rules = DISPATCH.nodes.get(ast.Assert)
    if rules:
        ctx._run(rules, node)


def _for(ctx: FunctionContext, node: ast.For | ast.AsyncFor) -> None:
    kind = ctx.expr(node.iter)
    owned = node.iter if ctx.owned(node.iter) else None  # `for layer in past.layers`: each item is the caller's
    ctx.bind(node.target, ctx._element_kind(node.iter, kind), owned)
    ctx._note_origin(node.target, node.iter)
    with ctx.in_part():
        ctx.body(node.body)
        ctx.body(node.orelse)


def _with(ctx: FunctionContext, node: ast.With | ast.AsyncWith) -> None:
    for item in node.items:
        ctx.expr(item.context_expr)
        if item.optional_vars is not None:
            ctx.bind(item.optional_vars, UNKNOWN, None)
    ctx.body(node.body)


def _try(ctx: FunctionContext, node: ast.Try) -> None:
    with ctx.in_part():
        ctx.body(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                ctx.expr(handler.type)
            if handler.name:
                ctx.env[handler.name] = HOST
            ctx.body(handler.body)
        ctx.body(node.orelse)
        ctx.body(node.finalbody)


def _return(ctx: FunctionContext, node: ast.Return) -> None:
    if node.value is not None:
        ctx.expr(node.value)


def _global(ctx: FunctionContext, node: ast.Global) -> None:
    ctx.globals_declared.update(node.names)


def _funcdef(ctx: FunctionContext, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """A closure (e.g. for recompute): walked as part of its enclosing function."""
    for decorator in node.decorator_list:
        ctx.expr(decorator)
    ctx.local_funcs.add(node.name)
    ctx.bind_params(node.args, is_method=False)
    outer = ctx.scope_name
    ctx.scope_name = f"{outer}.<locals>.{node.name}"
    try:
        ctx.body(node.body)
    finally:
        ctx.scope_name = outer


def _import(ctx: FunctionContext, node: ast.Import | ast.ImportFrom) -> None:
    for alias, qual in ctx.module.import_bindings(node):
        ctx.env.pop(alias, None)
        ctx.local_imports[alias] = qual


def _nothing(ctx: FunctionContext, node: ast.stmt) -> None:
    return None


_STATEMENTS = {
    ast.Expr: _expr_stmt,
    ast.Assign: _assign,
    ast.AnnAssign: _annassign,
    ast.AugAssign: _augassign,
    ast.If: _branch,
    ast.While: _branch,
    ast.Assert: _assert,
    ast.For: _for,
    ast.AsyncFor: _for,
    ast.With: _with,
    ast.AsyncWith: _with,
    ast.Try: _try,
    ast.Return: _return,
    ast.Global: _global,
    ast.Nonlocal: _nothing,
    ast.FunctionDef: _funcdef,
    ast.AsyncFunctionDef: _funcdef,
    ast.ClassDef: _nothing,
    ast.Import: _import,
    ast.ImportFrom: _import,
    ast.Pass: _nothing,
    ast.Break: _nothing,
    ast.Continue: _nothing,
}
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = _try  # type: ignore[attr-defined]
