"""One file in, its facts out: one parse, one walk per function, the sublayers each `__init__` builds.

Pure: no file system access, nothing imported or executed from the analyzed code.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Callable

from autograph_cg.analysis import capture
from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis import nodes
from autograph_cg.analysis.config_fill import fills_from_config
from autograph_cg.analysis.context import FunctionContext, annotation_kind, param_kind
from autograph_cg.analysis.failures import describe
from autograph_cg.analysis.facts import ClassFacts, FunctionFacts, ModuleFacts, SiteFacts
from autograph_cg.analysis.guards import written_guard
from autograph_cg.analysis.verdicts import Guard
from autograph_cg.analysis.kinds import HOST, LAYER, TENSOR, UNKNOWN
from autograph_cg.analysis.resolver.summaries import MODULE_SCOPE, ScopeSummary
from autograph_cg.analysis.resolver.summarize import Summarizer
from autograph_cg.analysis.scope import ClassScope, ModuleScope, dotted_name, statement_calls
from autograph_cg.analysis.solved import digests
from autograph_cg.analysis.suppressions import scan
from autograph_cg.sources import parse

from autograph_cg.rules.registry import RULES

WRAPPER = "CUDAGraphedLayer"
#: Libraries whose functions build no layer: a call to them assigned to `self.x` is not a sublayer site.
_HOST_ROOTS = frozenset({"math", "builtins", "numpy", "os", "sys", "functools", "itertools", "collections", "random", "time", "logging", "warnings", "re", "json", "typing", "dataclasses", "inspect"})
_TENSOR_FACTORIES = frozenset(
    {"create_parameter", "Parameter", "zeros", "ones", "full", "empty", "randn", "rand", "arange", "eye", "tensor",
     "to_tensor", "zeros_like", "ones_like", "linspace", "tril", "triu", "ParamAttr"}
)  # fmt: skip


def index_source(
    path: str, module: str, is_package: bool, text: str, tree: ast.Module | None = None, deep: bool | None = None
) -> ModuleFacts:
    """Facts of one file. Raises SyntaxError (and ValueError for NUL bytes) like `ast.parse`.

    `deep=True` walks every function body. By default (`None`) only what can run inside a graph is walked:
    in a file that defines a `forward`, the forward methods and the methods and functions of the same file
    they call, transitively; in other files nothing. Facts mark what was not walked, and the eligibility
    pass asks for a full index of the few files where forward code reaches such a function.
    """
    if tree is None:
        tree = parse(text, filename=path)
    reachable = deep is True or (deep is None and "forward" in text)
    scope = ModuleScope(path, module, is_package, text, tree)
    if "autograph-cg:" in text:
        scope.suppressions = scan(scope.lines)
    summarizer = Summarizer(scope)
    summaries = _Summaries(summarizer)
    summaries.guard(MODULE_SCOPE, lambda: summarizer.module_scope(tree.body))
    builders: dict[str, _ClassBuilder] = {}
    function_nodes: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    module_sites: list[SiteFacts] = []
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            builders[statement.name] = _ClassBuilder(scope, statement, reachable, summarizer)
            for method in class_methods(statement):  # every body is summarized: the resolver sees every call site
                summaries.function(method, f"{statement.name}.{method.name}", owner=True)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function_nodes[statement.name] = statement
            module_sites.extend(SiteCollector(scope, None, statement, summarizer=summarizer).function_sites(reachable))
            summaries.function(statement, statement.name, owner=False)
        else:
            module_sites.extend(SiteCollector(scope, None, None, summarizer=summarizer).plain_sites([statement]))
    walker = _Walker(scope, builders, function_nodes, summarizer)
    if deep is True:
        walker.walk_everything()
    elif reachable:
        walker.walk_from_forward()
    classes = {name: builder.facts(walker) for name, builder in builders.items()}
    functions = {
        name: _returns(scope, node, _filling(node, walker.functions.get(name) or FunctionFacts(name, name, node.lineno, walked=False)))
        for name, node in function_nodes.items()
    }
    lambdas = _lambdas(scope, summaries.scopes, summarizer, reachable)
    functions.update(lambdas)
    facts = ModuleFacts(
        path=path,
        module=module,
        framework=scope.framework,
        imports=scope.imports,
        star_imports=tuple(scope.star_imports),
        optional_imports=tuple(scope.optional_imports),
        classes=classes,
        functions=functions,
        sites=tuple(module_sites),
        lines=text.count("\n") + 1,
        deep=reachable,
        complete=deep is True or _complete(reachable, function_nodes, lambdas, builders),
        scopes=summaries.scopes,
        errors=tuple(summaries.errors),
        reaches=_reaches(scope, tree.body),
    )
    return replace(facts, digests=digests(facts))


def _complete(reachable: bool, functions: dict, lambdas: dict, builders: dict[str, "_ClassBuilder"]) -> bool:
    """Whether a file indexed shallow lacks nothing a deep index finds: no body left unwalked, and the sublayer sites
    of each `__init__` collected (they are where forward code is reachable; a file without it may still hold a layer
    whose forward it inherits, `class ArceeMLP(NemotronMLP)` with its own `__init__`)."""
    unwalked = functions or lambdas or any(b.methods for b in builders.values())
    return not unwalked and (reachable or not any(b.has_init for b in builders.values()))


def _reaches(scope: ModuleScope, statements: list[ast.stmt]) -> tuple[str, ...]:
    """The top-level packages the imports of `statements` name, nested ones included (a function's own imports): a
    walk of statements only, which is where imports stand."""
    found: set[str] = set()
    todo: list[ast.AST] = list(statements)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ImportFrom):
            found.add(scope.import_base(node).partition(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                todo.extend(getattr(node, field, ()))
    found.discard("")
    return tuple(sorted(found))


def _lambdas(scope: ModuleScope, scopes: dict[str, ScopeSummary], summarizer: Summarizer, walk: bool) -> dict[str, FunctionFacts]:
    """The facts of each lambda that has a summary, by its scope name: walked as a function that returns its body
    (when the file's bodies are walked), so that calling one runs that body alone, not the function it is written in."""
    found: dict[str, FunctionFacts] = {}
    for name, node in summarizer.lambdas.items():
        if name not in scopes:
            continue
        if not walk:
            found[name] = FunctionFacts(name, name, node.lineno, walked=False)
            continue
        function = ast.FunctionDef(name=name, args=node.args, body=[ast.Return(node.body)], decorator_list=[], returns=None)
        ast.copy_location(function.body[0], node.body)
        ast.fix_missing_locations(ast.copy_location(function, node))
        found[name] = _suppressed(scope, _run_guarded(FunctionContext(scope, None, name, summarizer), function, False))
    return found


def class_methods(node: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods a class body defines, by the name that reads them: a property's setter and deleter
    (`@loss_function.setter`) share the getter's name but run only when the attribute is assigned or deleted, so
    reading `self.loss_function` is the getter, never the setter that comes after it."""
    return [
        s
        for s in node.body
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not any(
            isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") and isinstance(d.value, ast.Name) and d.value.id == s.name
            for d in s.decorator_list
        )
    ]


class _Summaries:
    """The resolver's summaries of one file; a failure on one body is recorded, not raised."""

    def __init__(self, summarizer: Summarizer) -> None:
        self.summarizer = summarizer
        self.scopes: dict[str, ScopeSummary] = {}
        self.errors: list[tuple[str, str]] = []

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, owner: bool) -> None:
        self.guard(name, lambda: self.summarizer.function(node, name, owner))

    def guard(self, name: str, build: "Callable[[], list[ScopeSummary]]") -> None:
        try:
            for summary in build():
                self.scopes[summary.name] = summary
        except RecursionError:
            raise
        except Exception as exc:  # an analyzer bug on one body: its values become unknown, the file goes on
            self.errors.append((name, describe(exc)))


class _ClassBuilder:
    """One class: its sublayer sites (when indexed deeply) and its methods, walked on demand."""

    def __init__(self, scope: ModuleScope, node: ast.ClassDef, reachable: bool, summarizer: Summarizer) -> None:
        self.scope = scope
        self.node = node
        self.summarizer = summarizer
        self.cls = ClassScope(f"{scope.module}.{node.name}")
        self.methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {
            s.name: s for s in class_methods(node) if s.name != "__init__"
        }
        self.cls.host_methods = frozenset(name for name, m in self.methods.items() if annotation_kind(m.returns) == HOST)
        init = next((s for s in class_methods(node) if s.name == "__init__"), None)
        self.has_init = init is not None
        self.init_raises = init is not None and _only_raises(init)
        self.forwards = () if "forward" in self.methods or init is None else _forward_aliases(init, self.methods)
        self.collector = SiteCollector(
            scope, self.cls, init if reachable else None, {**self.methods, **({"__init__": init} if init else {})}, summarizer, node.name
        )
        self.error = ""
        try:
            self.sites = self.collector.init_sites()
        except RecursionError:
            raise
        except Exception as exc:  # an analyzer bug on one class: recorded, the rest of the file goes on
            self.sites, self.error = [], describe(exc)
        self.walked: dict[str, FunctionFacts] = {}
        self.contexts: list[FunctionContext] = []
        self.bases = [_dotted(scope, base) or ast.unparse(base) for base in node.bases]

    def walk(self, name: str) -> FunctionFacts:
        method = self.methods[name]
        decorators = {getattr(d, "id", getattr(d, "attr", "")) for d in method.decorator_list}
        ctx = FunctionContext(self.scope, self.cls, f"{self.node.name}.{name}", self.summarizer)
        facts = _run_guarded(ctx, method, "staticmethod" not in decorators)
        self.walked[name] = facts
        if not facts.error:
            self.contexts.append(ctx)
        return facts

    def attrs(self) -> dict:
        try:
            return self.summarizer.class_body(self.node)
        except RecursionError:
            raise
        except Exception as exc:  # an analyzer bug on one class: recorded, the rest of the file goes on
            self.error = self.error or describe(exc)
            return {}

    def facts(self, walker: "_Walker") -> ClassFacts:
        unwalked = [m for name, m in self.methods.items() if name not in self.walked]
        try:
            _per_call_state(self.scope, self.contexts, self.walked, _text_self_writes(self.scope, unwalked))
        except Exception as exc:  # an analyzer bug on one class: recorded, the rest of the file goes on
            self.error = self.error or describe(exc)
        methods = {
            name: _suppressed(self.scope, self.walked[name])
            if name in self.walked
            else FunctionFacts(name, f"{self.node.name}.{name}", node.lineno, walked=False)
            for name, node in self.methods.items()
        }
        return ClassFacts(
            name=self.node.name,
            qualname=self.cls.qualname,
            line=self.node.lineno,
            bases=tuple(self.bases),
            methods=methods,
            sites=tuple(self.sites),
            attrs=self.attrs(),
            has_init=self.has_init,
            init_raises=self.init_raises,
            forwards=self.forwards,
            skipped=_is_skipped(self.scope, self.node),
            error=self.error,
        )


def _returns(scope: ModuleScope, node: ast.FunctionDef | ast.AsyncFunctionDef, facts: FunctionFacts) -> FunctionFacts:
    """What other files may ask of a module function's result: annotated as a host value (`-> bool`), and then
    the calls whose truth makes it true (a predicate that is true while capturing, `capture.truthy_calls`)."""
    if annotation_kind(node.returns) != HOST:
        return facts
    local: dict[str, str] = {}
    for inner in nodes.walk(node):
        if isinstance(inner, (ast.Import, ast.ImportFrom)):
            local.update(scope.import_bindings(inner))

    def qualify(expr: ast.expr) -> str | None:
        return dotted_name(expr, lambda name: local.get(name) or scope.qualify_name(name))

    return replace(facts, host_return=True, truthy=capture.truthy_calls(node, qualify))


def _filling(node: ast.FunctionDef | ast.AsyncFunctionDef, facts: FunctionFacts) -> FunctionFacts:
    """A module function that decorates forwards by filling left-out keywords from the layer's config says so."""
    return replace(facts, fills_from_config=True) if fills_from_config(node) else facts


def _only_raises(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that is one `raise` (after its docstring): `__init__` so written builds no instance, ever."""
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _forward_aliases(init: ast.FunctionDef | ast.AsyncFunctionDef, methods: dict) -> tuple[str, ...]:
    """`self.forward = self.forward_slicing` (under whatever condition): the methods that may be the forward."""
    found = []
    for node in nodes.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr in methods:
            target, value = node.targets[0], node.value
            if (
                len(node.targets) == 1
                and isinstance(target, ast.Attribute)
                and target.attr == "forward"
                and all(isinstance(x, ast.Name) and x.id == "self" for x in (target.value, value.value))
            ):
                found.append(value.attr)
    return tuple(sorted(set(found)))


class _Walker:
    """Walks function bodies: all of them, or those reachable from forward methods within this file."""

    def __init__(
        self,
        scope: ModuleScope,
        builders: dict[str, _ClassBuilder],
        function_nodes: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
        summarizer: Summarizer,
    ) -> None:
        self.scope = scope
        self.summarizer = summarizer
        self.builders = builders
        self.function_nodes = function_nodes
        self.functions: dict[str, FunctionFacts] = {}
        self._pending: dict[str, None] = {}  # functions to walk (again), in the order they were found to be called
        # function -> its callers -> the host_args of each of their calls, as their last walk made them
        self._calls_to: dict[str, dict[tuple[str | None, str], list[tuple[bool, ...]]]] = {}
        self._hints_used: dict[str, tuple[bool, ...]] = {}
        self._walks: dict[str, int] = {}  # function -> how often it was walked
        names = "|".join(map(re.escape, function_nodes))
        self._values = re.compile(rf"(?<![\w.])({names})\b(?!\s*\()") if names else None  # a module function as a value

    def walk_everything(self) -> None:
        work: list[tuple[str | None, str]] = [(c, m) for c, b in self.builders.items() for m in b.methods]
        work += [(None, name) for name in self.function_nodes]
        self._drain(work)

    def walk_from_forward(self) -> None:
        work: list[tuple[str | None, str]] = [(c, "forward") for c, b in self.builders.items() if "forward" in b.methods]
        work += [(c, name) for c, b in self.builders.items() for name in b.forwards]
        for name, builder in self.builders.items():
            if "forward" not in builder.methods and any(b.rsplit(".", 1)[-1] not in _PLAIN_BASES for b in builder.bases):
                # a layer whose forward is inherited (a template method in a base): any method may be called
                work.extend((name, method) for method in builder.methods)
        self._drain(work)

    def _drain(self, work: list[tuple[str | None, str]]) -> None:
        """Walk methods first and functions last, so a function's parameter hints come from all calls seen;
        a function is walked again when its hints change: a call seen later, or a caller walked again with other
        hints of its own, whose calls then stand in place of those of its last walk. The functions are taken in the
        order they were found to be called (a set's order, which the hash seed sets, decided which caller was walked
        before a callee, and the calls of a caller's first walk stayed among the sites: `roi_heads.py` of torchvision
        read 19 or 21 findings by the seed)."""
        while work or self._pending:
            if work:
                owner, name = work.pop()
                if owner is None:
                    if name in self.function_nodes:
                        self._pending[name] = None
                else:
                    builder = self.builders[owner]
                    if name not in builder.walked:
                        work.extend(self._callees((owner, name), builder.walk(name)))
                        work.extend(self._named(owner, builder.methods[name]))
            if not work and self._pending:
                name = next(iter(self._pending))
                del self._pending[name]
                walks = self._walks.get(name, 0)
                if walks == 0 or (walks < _MAX_WALKS and self._hints_used.get(name) != self._hints(name)):
                    work.extend(self._callees((None, name), self._function(name)))
                    work.extend(self._named(None, self.function_nodes[name]))

    def _hints(self, name: str) -> tuple[bool, ...]:
        """Positional parameters that every call of `name` seen in this file fills with a host value."""
        sites = [hosts for calls in self._calls_to.get(name, {}).values() for hosts in calls]
        if not sites:
            return ()
        width = min(len(hosts) for hosts in sites)
        return tuple(all(hosts[i] for hosts in sites) for i in range(width))

    def _function(self, name: str) -> FunctionFacts:
        hints = self._hints(name)
        ctx = FunctionContext(self.scope, None, name, self.summarizer)
        facts = _suppressed(self.scope, _run_guarded(ctx, self.function_nodes[name], False, hints))
        self.functions[name] = facts
        self._hints_used[name] = hints
        self._walks[name] = self._walks.get(name, 0) + 1
        return facts

    def _callees(self, caller: tuple[str | None, str], facts: FunctionFacts) -> list[tuple[str | None, str]]:
        """What the walk of `caller` (its class or None, its name) found it calls in this file; its calls of module
        functions noted as that walk made them. Which calls a walk records does not depend on its hints (they change
        what the arguments hold, not which calls are seen), so each callee's entry for `caller` is replaced whole."""
        owner = caller[0]
        found: list[tuple[str | None, str]] = []
        prefix = self.scope.module + "."
        made: dict[str, list[tuple[bool, ...]]] = {}
        for call in facts.calls:
            if call.kind == "name" and call.target.startswith(prefix):
                callee = call.target[len(prefix) :]
                made.setdefault(callee, []).append(call.host_args)
                found.append((None, callee))
            elif call.kind in ("self", "super") and owner is not None:
                for cls in self._lineage(owner, skip_self=call.kind == "super"):
                    if call.target in self.builders[cls].methods:
                        found.append((cls, call.target))
                        break
        for callee, hosts in made.items():
            self._calls_to.setdefault(callee, {})[caller] = hosts
        return found

    def _named(self, owner: str | None, node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str | None, str]]:
        """The functions of this file a body names as a value (`attention = eager_attention_forward`, a method passed
        on as `self.ff_chunk`): called through that value, they run where the body runs. Walked now, their file needs
        no deep index when forward code reaches them (360 of transformers' 874 files were indexed twice for its
        attention function alone). Read from the body's text (a name not followed by `(`): a walk of every body
        walked cost a tenth of the index."""
        text = "\n".join(self.scope.lines[node.lineno - 1 : node.end_lineno or node.lineno])
        found: list[tuple[str | None, str]] = []
        if self._values is not None:
            found += [(None, name) for name in dict.fromkeys(self._values.findall(text))]
        if owner is not None and "self." in text:
            for attr in dict.fromkeys(_SELF_VALUE.findall(text)):
                for cls in self._lineage(owner, skip_self=False):
                    if attr in self.builders[cls].methods:
                        found.append((cls, attr))
                        break
        return found

    def _lineage(self, owner: str, skip_self: bool) -> list[str]:
        """The class and its bases defined in this file, nearest first."""
        order, queue = [], [owner]
        while queue:
            current = queue.pop(0)
            if current in order or current not in self.builders:
                continue
            order.append(current)
            prefix = self.scope.module + "."
            queue.extend(b[len(prefix) :] for b in self.builders[current].bases if b.startswith(prefix))
        return order[1:] if skip_self else order


def _run_guarded(
    ctx: FunctionContext, node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool, hints: tuple[bool, ...] = ()
) -> FunctionFacts:
    """One function's walk; an analyzer bug met there is recorded in its facts instead of stopping the file."""
    try:
        return ctx.run(node, is_method=is_method, host_args=hints)
    except RecursionError:
        raise  # nesting too deep for the parser's own limits: the whole file is reported
    except Exception as exc:
        return FunctionFacts(node.name, ctx.qualname, node.lineno, error=describe(exc))


#: Walks of one function at most (`_Walker._drain`): hints that still change after that (callers in a cycle trading
#: them) stay as the last walk read them; 3 at most were seen on 8,000 files indexed deeply.
_MAX_WALKS = 8

#: Bases that make a class something other than a layer.
_PLAIN_BASES = frozenset(
    {"object", "Enum", "IntEnum", "Exception", "NamedTuple", "dict", "list", "tuple", "ABC", "Protocol", "TypedDict",
     "PretrainedConfig", "ModelOutput", "Generic", "str", "int"}
)  # fmt: skip

_SELF_VALUE = re.compile(r"\bself\.(\w+)\b(?!\s*\()")  # `self.x` read as a value, not called
_SELF_WRITE = re.compile(r"\bself\.(\w+)\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)")


def _text_self_writes(scope: ModuleScope, methods: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> set[str]:
    """Attributes that methods not walked assign on `self`, read from their text (cheaper than a walk)."""
    written: set[str] = set()
    lines = scope.lines
    for method in methods:
        for text in lines[method.lineno - 1 : (method.end_lineno or method.lineno)]:
            if "self." in text:
                written.update(_SELF_WRITE.findall(text))
    return written


def _suppressed(scope: ModuleScope, facts: FunctionFacts) -> FunctionFacts:
    if not scope.suppressions.ignores or not facts.findings:
        return facts
    kept = [
        i for i, f in enumerate(facts.findings)
        if not scope.suppressions.ignored(f.span.line, f.span.end_line, f.code, RULES[f.code].name)
    ]
    if len(kept) == len(facts.findings):
        return facts

    def per_finding(values: tuple, missing: object) -> tuple:  # what is recorded per finding, kept in step with them
        return tuple(values[i] if i < len(values) else missing for i in kept) if values else ()

    return replace(
        facts,
        findings=tuple(facts.findings[i] for i in kept),
        guards=per_finding(facts.guards, ()),
        refreshes=per_finding(facts.refreshes, -1),
        state_writes=per_finding(facts.state_writes, False),
        cuts=per_finding(facts.cuts, ()),
        assumes=per_finding(facts.assumes, ()),
    )


def _is_skipped(scope: ModuleScope, node: ast.ClassDef) -> bool:
    lines = [node.lineno] + [d.lineno for d in node.decorator_list]
    return any(scope.suppressions.skipped(line) for line in lines)


def _per_call_state(
    scope: ModuleScope, contexts: list[FunctionContext], facts: dict[str, FunctionFacts], written_elsewhere: set[str]
) -> None:
    """AG504: a condition on `self.X` where some method other than `__init__` assigns `self.X`."""
    written = set(written_elsewhere).union(*(ctx.writes_self for ctx in contexts))
    rule = RULES["AG504"]
    for ctx in contexts:
        before = len(ctx.findings)
        for attr, node in ctx.self_tests:
            if attr in written and attr != "training":
                ctx.report(rule, node, attr)
        if len(ctx.findings) != before:
            name = ctx.qualname.rsplit(".", 1)[-1]
            old = facts[name]
            facts[name] = replace(old, findings=tuple(ctx.findings), guards=tuple(ctx.guards) + ((),) * (len(ctx.findings) - len(ctx.guards)))


def _dotted(scope: ModuleScope, node: ast.expr) -> str | None:
    return dotted_name(node, scope.qualify_name)


class SiteCollector:
    """Finds the layers a class builds (`self.x = Cls(...)`, containers, lists appended in loops)."""

    def __init__(
        self,
        scope: ModuleScope,
        cls: ClassScope | None,
        func: ast.FunctionDef | ast.AsyncFunctionDef | None,
        methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
        summarizer: Summarizer | None = None,
        class_name: str = "",
    ) -> None:
        self.scope = scope
        self.cls = cls
        self.func = func
        self.methods = methods or {}
        self.visited: set[str] = set()
        self.sites: list[SiteFacts] = []
        self.lists: dict[str, list[tuple[ast.Call, bool]]] = {}  # local list var -> (constructor call, existing)
        self.written_guards: dict[int, Guard | None] = {}  # id of a wrapped call -> the guard its wrapper passes
        self.summarizer = summarizer
        self.class_name = class_name
        self.current = func.name if func is not None and cls is None else ""  # the function being read
        self.params: dict[str, ast.expr | None] = {}
        self.param_kinds: dict[str, int] = {}
        self._skip_line = False

    # ----- entry points ------------------------------------------------------------------------------------------
    def init_sites(self) -> list[SiteFacts]:
        if self.func is None:
            return []
        self._walk_method(self.func)
        unique: dict[tuple[int, int], SiteFacts] = {}
        for site in self.sites:  # a layer added with add_sublayer and appended to a list is one site
            unique.setdefault((site.span.line, site.span.col), site)
        return list(unique.values())

    def function_sites(self, deep: bool) -> list[SiteFacts]:
        """What a module-level function builds: classes constructed as a statement's value, and (read deeply)
        the containers it fills, wherever they end up (`stages.append((name, nn.Sequential(*blocks)))`)."""
        assert self.func is not None
        if deep:
            self._walk_method(self.func)
        self.plain_sites(self.func.body)
        unique: dict[tuple[int, int], SiteFacts] = {}
        for site in self.sites:
            unique.setdefault((site.span.line, site.span.col), site)
        return list(unique.values())

    def plain_sites(self, statements: list[ast.stmt]) -> list[SiteFacts]:
        """Constructions of classes outside any class: `model = Net(cfg)`, `return Net(cfg)`, wrapped or not.

        Only calls that are a statement's whole value count, so large literal tables are not walked."""
        for statement in statements:
            if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr)):
                value = statement.value
                if isinstance(value, ast.Call):
                    call, existing = self._unwrap(value)
                    cls = self._callee(call)
                    if cls and cls.rsplit(".", 1)[-1][:1].isupper() and not fw.is_framework(cls) and not cls.endswith(WRAPPER):
                        target = self._assigned_name(statement, value)
                        self.sites.append(self._site(call, cls, "", target, "", existing, statement))
            elif isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    self.plain_sites(getattr(statement, block, []) or [])
                for handler in getattr(statement, "handlers", []):
                    self.plain_sites(handler.body)
        return self.sites

    # ----- walking __init__ and the methods it calls -------------------------------------------------------------
    def _walk_method(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.visited.add(func.name)
        outer = self.current
        if self.cls is not None:
            self.current = f"{self.class_name}.{func.name}"
        args = func.args
        positional = args.posonlyargs + args.args
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in list(zip(positional[1:], defaults[1:])) + list(zip(args.kwonlyargs, args.kw_defaults)):
            self.params[arg.arg] = default
            self.param_kinds[arg.arg] = param_kind(arg, default)
        self._statements(func.body)
        self.current = outer

    def _statements(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self._skip_line = self.scope.suppressions.skipped(statement.lineno)
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    self._assign(target, statement.value, statement)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                self._assign(statement.target, statement.value, statement)
            elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
                self._extend_list(statement.target.id, statement.value)
            elif isinstance(statement, ast.Expr):
                for call in statement_calls(statement.value):
                    self._call_statement(call, statement)
            elif isinstance(statement, ast.Return) and self.cls is None:
                self._nested_containers(statement.value, "return", statement)
            elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    self._statements(getattr(statement, block, []) or [])
                for handler in getattr(statement, "handlers", []):
                    self._statements(handler.body)

    def _assign(self, target: ast.expr, value: ast.expr, statement: ast.stmt) -> None:
        attr = _self_attr(target)
        if attr is not None:
            self._assign_attr(attr, value, statement)
        elif isinstance(target, ast.Name):
            items = self._items(value, statement)
            self._nested_containers(value, target.id, statement)
            if items is not None:
                self.lists[target.id] = items
            elif isinstance(value, ast.Call) and self._container(value) and not value.args:
                self.lists[target.id] = []
            elif isinstance(value, ast.Call) and self._add_sublayer(value, statement):
                added = _added_layer(value)  # `block = self.add_sublayer(name, Block())`: `block` is that layer
                self.lists[target.id] = [self._unwrap(added)] if isinstance(added, ast.Call) else []
        elif isinstance(target, ast.Subscript) and _self_attr(target.value) is not None:
            attr = _self_attr(target.value)
            self._constructed(value, attr or "", f"self.{attr}[*]", "dict", statement)

    def _assign_attr(self, attr: str, value: ast.expr, statement: ast.stmt) -> None:
        if isinstance(value, ast.IfExp):  # `DropPath(p) if p > 0 else nn.Identity()`: either may be held
            self._assign_attr(attr, value.body, statement)
            self._assign_attr(attr, value.orelse, statement)
            return
        kind = UNKNOWN
        wrapped = False
        if isinstance(value, ast.Call):
            value, wrapped = self._unwrap(value)  # `CUDAGraphedLayer(X(...))`: the site of X, already wrapped
            callee = self._callee(value)
            if self._container(value):
                self._container_site(value, wrapped, attr, f"self.{attr}", statement)
                kind = LAYER
            elif wrapped:
                self.sites.append(self._site(value, callee or "", attr, f"self.{attr}", "", True, statement))
                self._handed(value, statement)
                kind = LAYER
            elif isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) and value.func.value.id == "self":
                method = value.func.attr
                if method in ("create_parameter", "register_buffer", "register_parameter"):
                    kind = TENSOR
                elif method in self.methods and method not in self.visited:
                    before = len(self.sites)
                    self._walk_method(self.methods[method])
                    kind = LAYER if len(self.sites) > before else UNKNOWN
            elif isinstance(value.func, ast.Name) and value.func.id in self.params:
                self.sites.append(self._site(value, "", attr, f"self.{attr}", "", False, statement))
                kind = LAYER  # `norm_layer(dim)`: what it builds is solved from the parameter's values
            elif callee is not None:
                short = callee.rsplit(".", 1)[-1]
                if short in _TENSOR_FACTORIES and fw.is_framework(callee):
                    kind = TENSOR
                elif short[:1].isupper():
                    self.sites.append(self._site(value, callee, attr, f"self.{attr}", "", False, statement))
                    self._handed(value, statement)
                    kind = LAYER
                elif not fw.is_framework(callee) and callee.split(".", 1)[0] not in _HOST_ROOTS:
                    self.sites.append(self._site(value, "", attr, f"self.{attr}", "", False, statement))  # a factory
            else:
                self.sites.append(self._site(value, "", attr, f"self.{attr}", "", False, statement))
        elif isinstance(value, ast.Name) and value.id in self.lists:
            for call, existing in self.lists[value.id]:
                cls = self._callee(call) or ""
                self.sites.append(self._site(call, cls, attr, f"self.{attr}[*]", "list", existing, statement))
            kind = LAYER
        elif isinstance(value, ast.Name) and value.id in self.params:
            kind = self.param_kinds.get(value.id, UNKNOWN)
            if kind == TENSOR:
                kind = UNKNOWN
        elif isinstance(value, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare)):
            kind = HOST
        if self.cls is not None:
            self.cls.set(attr, kind)

    def _handed(self, call: ast.Call, statement: ast.stmt) -> None:
        """Layers of a local list handed to a constructor (`self.decoder = TransformerDecoder(config, layers)` after
        `layers.append(Block(config))`): sites of that constructor's class, which holds them."""
        receiver = f"{self.scope.span(call).line}:{self.scope.span(call).col}"
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name) and arg.id in self.lists:
                for item, existing in self.lists[arg.id]:
                    cls = self._callee(item) or ""
                    self.sites.append(self._site(item, cls, "", f"{arg.id}[*]", "list", existing, statement, receiver=receiver))

    def _container_site(self, call: ast.Call, wrapped: bool, attr: str, target: str, statement: ast.stmt) -> None:
        """A framework container and the layers it is built with: items are sites of their own; a callable
        container (`Sequential`) is a site too, which the plan may wrap whole."""
        container = self._callee(call) or ""
        holder = f"{self.scope.span(call).line}:{self.scope.span(call).col}"
        for item, existing in self._items_of_container(call, statement):
            cls = self._callee(item) or ""
            self.sites.append(self._site(item, cls, attr, f"{target}[*]", container, existing, statement, holder))
        if wrapped or container.rsplit(".", 1)[-1] in fw.CALLABLE_CONTAINERS:  # the whole stack may be wrapped
            self.sites.append(self._site(call, container, attr, target, "", wrapped, statement, holder))

    def _nested_containers(self, value: ast.expr | None, target: str, statement: ast.stmt) -> None:
        """Containers built inside a function's expressions: `stages.append((name, nn.Sequential(*blocks)))`."""
        if value is None:
            return
        if isinstance(value, ast.Call):
            call, wrapped = self._unwrap(value)
            if self._container(call):
                self._container_site(call, wrapped, "", target, statement)
                return
            for part in [*call.args, *(k.value for k in call.keywords)]:
                self._nested_containers(part.value if isinstance(part, ast.Starred) else part, target, statement)
        elif isinstance(value, (ast.Tuple, ast.List)):
            for element in value.elts:
                self._nested_containers(element, target, statement)

    def _call_statement(self, call: ast.Call, statement: ast.stmt) -> None:
        func = call.func
        if not isinstance(func, ast.Attribute):
            return
        owner = func.value
        if isinstance(owner, ast.Name) and func.attr in ("append", "extend", "insert") and call.args:
            value = call.args[-1]
            if owner.id in self.lists:
                self._extend_list(owner.id, value if func.attr != "append" else ast.List(elts=[value]))
            if not isinstance(value, ast.Call) or not self._container(value) or owner.id not in self.lists:
                self._nested_containers(value, f"{owner.id}[*]", statement)
            return
        if _self_attr(func) is not None and func.attr in ("register_buffer", "register_parameter") and call.args:
            name = call.args[0]  # `self.register_buffer("inv_freq", t)`: `self.inv_freq` is a tensor
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and self.cls is not None:
                self.cls.set(name.value, TENSOR)
            return
        attr = _self_attr(owner)
        if attr is not None and func.attr in ("append", "extend", "insert") and call.args:
            self._constructed(call.args[-1], attr, f"self.{attr}[*]", "list", statement)
            if self.cls is not None:
                self.cls.set(attr, LAYER)
            return
        self._add_sublayer(call, statement)

    def _add_sublayer(self, call: ast.Call, statement: ast.stmt) -> bool:
        """`self.add_sublayer("name", Block())` / `add_module`: a site, and attribute "name" when it is literal."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return False
        if func.attr not in ("add_sublayer", "add_module", "register_module"):
            return False
        added = _added_layer(call)
        if added is None:
            return True
        name = call.args[0] if call.args else None
        attr = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else ""
        self._constructed(added, attr, f"self.{attr}" if attr else "self.<added>", "", statement)
        if attr and self.cls is not None:
            self.cls.set(attr, LAYER)
        return True

    def _constructed(self, value: ast.expr, attr: str, target: str, container: str, statement: ast.stmt) -> None:
        items = self._items(value, statement) if not isinstance(value, ast.Call) else [self._unwrap(value)]
        for call, existing in items or []:
            cls = self._callee(call) or ""
            self.sites.append(self._site(call, cls, attr, target, container, existing, statement))

    def _extend_list(self, name: str, value: ast.expr) -> None:
        if name in self.lists:
            self.lists[name].extend(self._items(value, None) or [])

    # ----- expressions that build layers ---------------------------------------------------------------------------
    def _items(self, value: ast.expr, statement: ast.stmt | None) -> list[tuple[ast.Call, bool]] | None:
        """The constructor calls a list expression holds; None when it is no list of layers."""
        if isinstance(value, (ast.List, ast.Tuple)):
            found: list[tuple[ast.Call, bool]] = []
            for element in value.elts:
                if isinstance(element, ast.Call):
                    found.append(self._unwrap(element))
                elif isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                    found.extend(self.lists.get(element.value.id, []))
            return found
        if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            return [self._unwrap(call) for call in _alternatives(value.elt)] or None
        if isinstance(value, ast.Name) and value.id in self.lists:
            return list(self.lists[value.id])
        return None

    def _items_of_container(self, call: ast.Call, statement: ast.stmt) -> list[tuple[ast.Call, bool]]:
        found: list[tuple[ast.Call, bool]] = []
        for arg in call.args:
            if isinstance(arg, ast.Call) and (self._callee(arg) or "").rsplit(".", 1)[-1] in ("OrderedDict", "dict"):
                # `Sequential(OrderedDict([("fc", Linear(...)), ...]))`: the items are the pairs' second halves
                pairs = arg.args[0] if arg.args and isinstance(arg.args[0], (ast.List, ast.Tuple)) else None
                for pair in pairs.elts if pairs is not None else []:
                    if isinstance(pair, ast.Tuple) and len(pair.elts) == 2 and isinstance(pair.elts[1], ast.Call):
                        found.append(self._unwrap(pair.elts[1]))
            elif isinstance(arg, ast.Call) and not self._container(arg):
                found.append(self._unwrap(arg))
            elif isinstance(arg, ast.Starred):
                found.extend(self._items(arg.value, statement) or [])
            elif isinstance(arg, ast.Dict):
                found.extend(self._unwrap(v) for v in arg.values if isinstance(v, ast.Call))
            elif isinstance(arg, ast.DictComp) and isinstance(arg.value, ast.Call):
                found.append(self._unwrap(arg.value))
            else:
                found.extend(self._items(arg, statement) or [])
        return found

    def _unwrap(self, call: ast.Call) -> tuple[ast.Call, bool]:
        """`CUDAGraphedLayer(Block(...))` -> (the Block call, already wrapped); the wrapper's guard is noted."""
        callee = self._callee(call)
        if callee is not None and callee.endswith(WRAPPER) and call.args and isinstance(call.args[0], ast.Call):
            self.written_guards[id(call.args[0])] = written_guard(call)
            return call.args[0], True
        return call, False

    def _container(self, call: ast.Call) -> bool:
        callee = self._callee(call)
        return callee is not None and fw.layer_kind(callee) == "container"

    def _callee(self, call: ast.Call) -> str | None:
        return _dotted(self.scope, call.func)

    def _site(
        self,
        call: ast.Call,
        cls: str,
        attr: str,
        target: str,
        container: str,
        existing: bool,
        statement: ast.stmt | None,
        holder: str = "",
        receiver: str = "",
    ) -> SiteFacts:
        skipped = self._skip_line or (statement is not None and self.scope.suppressions.skipped(statement.lineno))
        callee = None
        resolvable = cls[:1].isalpha() and cls.rsplit(".", 1)[-1][:1].isupper() and fw.layer_kind(cls) != "container"
        if not resolvable and self.summarizer is not None:  # a parameter, a factory, a table, a container's items
            callee = self.summarizer.expression(call, "self" if self.cls is not None else None)
        guard = self.written_guards.get(id(call), ()) if existing else ()
        return SiteFacts(self.scope.span(call), cls, attr, target, container, existing, skipped, callee, self.current, holder, guard, receiver)

    @staticmethod
    def _assigned_name(statement: ast.stmt, call: ast.Call) -> str:
        if isinstance(statement, ast.Assign) and statement.value is call and isinstance(statement.targets[0], ast.Name):
            return statement.targets[0].id
        return "return" if isinstance(statement, ast.Return) else ""


def _added_layer(call: ast.Call) -> ast.expr | None:
    """The layer argument of `add_sublayer(name, sublayer)` / `add_module(name, module)`."""
    if len(call.args) >= 2:
        return call.args[1]
    for kw in call.keywords:
        if kw.arg in ("sublayer", "module"):
            return kw.value
    return None


def _alternatives(node: ast.expr) -> list[ast.Call]:
    """The constructor calls an element expression may evaluate: `A(c) if cond else B(c)` gives both."""
    if isinstance(node, ast.Call):
        return [node]
    if isinstance(node, ast.IfExp):
        return _alternatives(node.body) + _alternatives(node.orelse)
    return []


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None



