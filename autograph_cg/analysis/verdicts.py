"""Per layer class: can it be captured whole, and if not, the chain of reasons why."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Status(str, enum.Enum):
    ELIGIBLE = "eligible"
    CONDITIONAL = "conditional"  # eligible while default-off conditions stay off; the runtime falls back otherwise
    INELIGIBLE = "ineligible"
    UNKNOWN = "unknown"  # some call could not be resolved; strictness decides
    SKIPPED = "skipped"  # `# autograph-cg: skip` on the class


#: What each verdict means, for `autograph-cg explain <verdict>`.
STATUS_DOCS = {
    Status.ELIGIBLE: "Its forward, everything it calls and every sublayer it runs were read and are free of hazards "
    "that block capture. `plan` wraps it where it is built (when a graph of it pays for its wrapper).",
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
    "such flags on before the first call, or rebuild the wrapper.",
    Status.INELIGIBLE: "A hazard that blocks capture runs in its forward or in something it calls, unconditionally "
    "or under a condition that is on by default. Each reason gives the chain from its forward to the line.",
    Status.UNKNOWN: "Something its forward runs could not be resolved: a call through a value the analyzer cannot "
    "follow, a layer of another library, or a framework layer not on the reviewed list. Declare what you know "
    "in [tool.autograph-cg] (`capturable`, `not-capturable`); `plan` lists the names left unresolved most often.",
    Status.SKIPPED: "`# autograph-cg: skip` on the class: left out of the report and the plan, and its parents with it.",
}


@dataclass(frozen=True)
class Reason:
    """One blocking (or unresolved) fact, reached from the class's forward through `chain`."""

    chain: tuple[str, ...]  # e.g. ("Decoder.forward", "self.blocks", "Block.forward", "Attention.forward")
    code: str
    message: str
    path: str
    line: int
    condition: str = ""  # it applies only when this holds, and it is off by default: `self.grad_checkpointing`

    def render(self) -> str:
        where = " → ".join(self.chain)
        when = f" (only when `{self.condition}`, off by default)" if self.condition else ""
        return f"{where}:{self.line} {self.code} {self.message}{when}"


@dataclass(frozen=True)
class Verdict:
    qualname: str  # "pkg.module.Class"
    path: str
    line: int
    status: Status
    reasons: tuple[Reason, ...] = field(default=())
    hard: bool = False  # a reason no condition can waive (side effects): never conditional through a caller
    kernels: int = 0  # about how many kernels one forward launches (sublayers included): what a graph saves

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]
