"""Facts about one file, produced by one parse and one walk, small enough to cache and send between processes.

Nothing here refers to AST nodes: cross-file passes (eligibility, plan) work from these facts alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autograph_cg.findings import Finding, Span


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
    """

    kind: str
    target: str
    span: Span
    text: str  # the callee as written, for messages: "self.act", "helper"
    host_args: tuple[bool, ...] = ()  # per leading positional argument: a host value


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


@dataclass(frozen=True)
class ClassFacts:
    name: str
    qualname: str  # "pkg.module.Class"
    line: int
    bases: tuple[str, ...]  # qualified names as far as imports tell
    methods: dict[str, FunctionFacts] = field(default_factory=dict)
    sites: tuple[SiteFacts, ...] = ()  # sublayers built by __init__ and the methods it calls
    attr_classes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # self.ATTR -> what built it ("&f": stored f)
    attr_defaults: dict[str, str] = field(default_factory=dict)  # self.ATTR = param with a class default
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
    complete: bool = True  # every function body was walked
