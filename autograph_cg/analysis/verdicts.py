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
