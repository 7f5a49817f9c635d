"""Per layer class: can it be captured whole, and if not, the chain of reasons why."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

#: A test on one argument of forward: (parameter, "is None" | "is not None" | "falsy" | "truthy" | "passed false" |
#: "config false").
Test = tuple[str, str]
#: Tests that must all hold, sorted: while they do, the hazards they keep out cannot run.
Guard = tuple[Test, ...]


class Status(str, enum.Enum):
    ELIGIBLE = "eligible"
    CONDITIONAL = "conditional"  # eligible while default-off conditions stay off; the runtime falls back otherwise
    INELIGIBLE = "ineligible"
    UNKNOWN = "unknown"  # some call could not be resolved; strictness decides
    SKIPPED = "skipped"  # `# autograph-cg: skip` on the class


#: What each verdict means, for `autograph-cg explain <verdict>`.
STATUS_DOCS = {
    Status.ELIGIBLE: "Its forward, everything it calls and every sublayer it runs were read and are free of hazards "
    "that block capture. A write of the layer's state under a test of that same state is none: a refresh, listed by "
    "`lint` with its test (`autograph-cg explain AG401`). `plan` wraps it where it is built (when a graph of it pays "
    "for its wrapper).",
    Status.CONDITIONAL: "Capturable while the conditions named in its reasons stay off, as they are by default: a "
    "flag set to False in `__init__` (`if self.grad_checkpointing:`), an optional argument left at `None` (`if mask "
    "is not None:`), a package that is only used when installed (`try: import apex` with a fallback), or a "
    "sublayer only a non-default configuration builds (`if config.tensor_parallel_degree > 1:`). Each reason shows "
    "its condition: `(only when `self.grad_checkpointing`, off by default)`. Only hazards that fail capture loudly "
    "are waived this way (host syncs AG1xx, data-dependent shapes AG2xx, host control flow AG3xx, unresolved calls "
    "AG9xx): if the condition is on when the layer is captured, capture fails and the runtime runs that layer "
    "eagerly with the reason in `report()`. Side effects (AG4xx) would replay wrong without any error and are never "
    "waived. `plan` wraps conditional classes like eligible ones, and lets their sublayers keep graphs of their "
    "own (they take over if the parent falls back). A flag turned on after capture is not seen by a replay: turn "
    "such flags on before the first call, or rebuild the wrapper. A class whose blocking hazards (side effects "
    "included) sit only behind tests on its forward's own arguments is conditional *under a guard*: "
    "`if past_key_values is not None: past_key_values.update(...)` is kept out of every graph by the guard "
    "`past_key_values is None`. `plan` records the guard, `rewrite` passes it to the wrapper "
    "(`CUDAGraphedLayer(Block(...), guard={\"past_key_values\": \"is None\"})`), and the runtime checks it on "
    "every call and runs the layer eagerly, with the reason counted, when it does not hold. The guard is read from "
    "the tests the code makes (`x is None`, `x is not None`, `if flag:`, `if not flag:`), through the calls that "
    "pass the argument on unchanged; never from a name. A guard may also test the layer's own settings, read from "
    "the layer on every call: `self.config.is_decoder` where forward sets `use_cache = False` for encoders, "
    "`self.training`, `self.bert.config.is_decoder` for the model a head holds, `self.h.*.attn.training` for every "
    "block of the list a model runs (all of one class).",
    Status.INELIGIBLE: "A hazard that blocks capture runs in its forward or in something it calls, unconditionally "
    "or under a condition that is on by default. Each reason gives the chain from its forward to the line.",
    Status.UNKNOWN: "Something its forward runs could not be resolved: a call through a value the analyzer cannot "
    "follow, a layer of another library, or a framework layer not on the reviewed list. Declare what you know "
    "in [tool.autograph-cg] (`capturable`, `not-capturable`); `plan` lists the names left unresolved most often.",
    Status.SKIPPED: "`# autograph-cg: skip` on the class: left out of the report and the plan, and its parents with it.",
}


def render_guard(guard: Guard) -> str:
    """`past_key_values is None and not use_cache`: a guard as the code would test it."""
    words = {"is None": "{} is None", "is not None": "{} is not None", "falsy": "not {}", "truthy": "{}", "passed false": "{}=False passed", "config false": "{0}=False passed or config.{0} false"}
    return " and ".join(words[kind].format(name) for name, kind in guard)


@dataclass(frozen=True)
class Reason:
    """One blocking (or unresolved) fact, reached from the class's forward through `chain`."""

    chain: tuple[str, ...]  # e.g. ("Decoder.forward", "self.blocks", "Block.forward", "Attention.forward")
    code: str
    message: str
    path: str
    line: int
    condition: str = ""  # it applies only when this holds, and it is off by default: `self.grad_checkpointing`
    guard: Guard = ()  # it cannot run while these tests of the class's forward arguments hold (the wrapper checks)

    def render(self) -> str:
        where = " → ".join(self.chain)
        when = f" (only when `{self.condition}`, off by default)" if self.condition else ""
        kept = f" (kept out by the guard `{render_guard(self.guard)}`)" if self.guard else ""
        return f"{where}:{self.line} {self.code} {self.message}{when}{kept}"


@dataclass(frozen=True)
class Guarded:
    """Hazards behind tests of the forward's arguments: any one of `alternatives` holding keeps them from running.
    What they would make the class if nothing kept them out: `status`, `hard`."""

    alternatives: tuple[Guard, ...]
    status: Status
    hard: bool
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class Verdict:
    qualname: str  # "pkg.module.Class"
    path: str
    line: int
    status: Status
    reasons: tuple[Reason, ...] = field(default=())
    hard: bool = False  # a reason no condition can waive (side effects): never conditional through a caller
    kernels: int = 0  # about how many kernels one forward launches (sublayers included): what a graph saves
    guard: Guard = ()  # the wrapper's guard: while it holds, none of the `guarded` hazards can run
    guarded: tuple[Guarded, ...] = ()  # hazards kept out by a guard, for callers to carry through their own calls
    plain: Status | None = None  # the status of what runs outside the guarded branches (None: `status`)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]
