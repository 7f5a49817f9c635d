"""A rule is data: its code, name, family, severity, message, docs and cases, plus what it matches.

Most rules are declarative (`ops`, `methods`, `functions`, `builtins`): the checker builds one dispatch table
from all of them, so a call is resolved once and looked up once whatever the number of rules. Rules that need
to look at statement structure give a `check` function for the node types they name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol

from autograph_cg.analysis.resolver.summaries import Expr
from autograph_cg.findings import Severity


class RuleContext(Protocol):
    """What a rule may ask of the walk of one function (the analyzer's `FunctionContext` answers)."""

    def kind(self, node: ast.AST) -> int: ...  # the value lattice of `analysis.kinds`
    def is_tensor(self, node: ast.AST) -> bool: ...
    def holds_tensor(self, node: ast.AST) -> bool: ...  # a tensor, or a list/tuple literal holding one
    def truth_syncs(self, node: ast.AST) -> bool: ...  # its truth is a tensor's (a sequence argument's is its length)
    def in_test(self) -> bool: ...  # inside an if/while/assert/ternary condition
    def qualify(self, node: ast.expr) -> str | None: ...  # a dotted reference resolved through imports
    def is_global(self, name: str) -> bool: ...  # a module-level variable not shadowed here
    def owned(self, node: ast.expr) -> str | None: ...  # the forward argument `node` is (a part of): the caller owns it
    @property
    def framework(self) -> str | None: ...  # "paddle" or "torch": what the module imports (None: neither)


@dataclass(frozen=True)
class Family:
    prefix: str  # "AG1"
    name: str  # "host-sync"
    title: str
    blocks: bool  # whether its errors block capture


HOST_SYNC = Family("AG1", "host-sync", "Host synchronization", True)
DYNAMIC_SHAPE = Family("AG2", "dynamic-shape", "Data-dependent shapes", True)
CONTROL_FLOW = Family("AG3", "control-flow", "CPU control flow on tensor values", True)
SIDE_EFFECTS = Family("AG4", "side-effects", "CPU side effects", True)
CONTEXT_RNG = Family("AG5", "context-rng", "Context, streams and RNG", False)
UNKNOWN = Family("AG9", "unknown", "Calls that cannot be resolved", False)

FAMILIES = (HOST_SYNC, DYNAMIC_SHAPE, CONTROL_FLOW, SIDE_EFFECTS, CONTEXT_RNG, UNKNOWN)

#: A check yields (node to report, detail text) pairs; the detail fills `{detail}` in the rule's message.
Check = Callable[[RuleContext, ast.AST], Iterator[tuple[ast.AST, str]]]
#: A guard decides whether a matched call really is the hazard (e.g. `where` with one argument only). It gets
#: the name the call matched as: the short op or method name, or the qualified function, never the local alias.
Guard = Callable[[RuleContext, ast.Call, str], bool]
#: What a call of a function reached as a value passes (`CallRef.passes`): by position or keyword (None for `**x`),
#: each a constant `("c", v)`, a parameter of the caller `("n", p)`, a spread `("*",)` or anything else `("?",)`.
Passes = tuple[tuple[int | str | None, Expr], ...]
#: A guard for a function reached as a value (`self.op = torch.where`, then `self.op(x)`): the call's syntax is not
#: the function's name there, so it decides from the name matched and what the call passes.
ValueGuard = Callable[[str, Passes], bool]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str  # kebab-case, reads as "allow <name>"
    family: Family
    severity: Severity
    message: str  # one line; may use {detail}
    what: str
    why: str
    example: str
    instead: str
    known_problems: str = ""
    frameworks: tuple[str, ...] = ("paddle", "torch")
    # Declarative matchers.
    ops: tuple[str, ...] = ()  # framework functions `paddle.X`/`torch.X` and tensor methods `.X()` by short name
    methods: tuple[str, ...] = ()  # tensor methods only
    functions: tuple[str, ...] = ()  # fully qualified functions
    prefixes: tuple[str, ...] = ()  # qualified-name prefixes ("random.", "torch.distributed.")
    builtins: tuple[str, ...] = ()  # Python builtins called with a tensor argument
    guard: Guard | None = None
    # For a function reached as a value and called (`self.op = torch.nonzero`, then `self.op(x)`): whether the rule
    # fires there. None: a rule without a guard fires on the name alone; one whose guard reads what only the call's
    # syntax shows (a tensor where a size is expected) is not applied there (`fires_on_value`).
    on_value: ValueGuard | None = None
    # Structural check for the node types it names, or for one of the walk's hook points:
    # "self-write" (target `self.x`), "global-write", "subscript-write", "container-mutation", "format-call",
    # "layer-method" (its `methods` called on a layer, e.g. `self.create_parameter`), "class" (run by the index
    # once per class), "cross-file" (reported by the eligibility pass).
    check: Check | None = None
    node_types: tuple[type[ast.AST], ...] = ()
    hook: str = ""
    # Cases: forward bodies (or whole modules when they start with import/from/class) that must fire / must not.
    invalid: tuple[str, ...] = field(default=())
    valid: tuple[str, ...] = field(default=())
    since: str = "0.1.0"
    default: bool = True  # reported unless the selection names it; off for the noisy informational rules

    @property
    def blocks(self) -> bool:
        return self.severity is Severity.ERROR and self.family.blocks

    def _on_values(self) -> str:
        """What the rule does with a function it names that is reached as a value, for the docs."""
        if not (self.ops or self.functions or self.prefixes):
            return ""
        if self.guard is None or self.on_value is not None:
            return (" A function it names that is reached as a value (`self.op = <function>`, `getattr(<module>, \"<name>\")`)"
                    " is found where that value is called, from what that call passes.")
        return (" A function it names that is reached as a value (`self.op = <function>`, then `self.op(...)`) is not "
                "checked: what decides the rule is not seen in such a call.")

    def fires_on_value(self, name: str, passes: Passes) -> bool:
        """Whether a call of a function reached as a value that this rule matches by `name` is its hazard."""
        if self.on_value is not None:
            return self.on_value(name, passes)
        return self.guard is None

    def docs(self, heading: int = 1) -> str:
        """The rule's documentation in fixed sections; `explain`, docs pages and SARIF all render this text."""
        title, section = "#" * heading, "#" * (heading + 1)
        parts = [
            f"{title} {self.code} {self.name}",
            "",
            f"Family: {self.family.title} ({self.family.prefix}xx). Severity: {self.severity.value}."
            + (" Blocks capture." if self.blocks else " Does not block capture by itself.")
            + ("" if self.default else f" Reported only when selected (`--select {self.code}`).")
            + (" Under a condition that is off by default it makes a class `conditional`, not ineligible "
               "(`autograph-cg explain conditional`)." if self.blocks and self.family.prefix in ("AG1", "AG2", "AG3") else ""),
            "",
            f"{section} What it does",
            self.what.strip() + self._on_values(),
            "",
            f"{section} Why it breaks a CUDA graph",
            self.why.strip(),
            "",
            f"{section} Example",
            "```python",
            self.example.strip("\n"),
            "```",
            "",
            f"{section} Use instead",
            "```python",
            self.instead.strip("\n"),
            "```",
        ]
        if self.known_problems:
            parts += ["", f"{section} Known problems", self.known_problems.strip()]
        return "\n".join(parts) + "\n"
