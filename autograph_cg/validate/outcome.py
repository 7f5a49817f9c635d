"""What a pass amounts to (captured, failed, differs...), and where the run contradicts the static verdict."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

from autograph_cg.analysis.verdicts import Status
from autograph_cg.validate.passes import Diff, RunStats


class Outcome(str, enum.Enum):
    CAPTURED = "captured"  # captured, replayed, and the results match eager
    FAILED = "failed"  # a capture failed (or was refused) and the layer went eager
    MISMATCH = "mismatch"  # replayed, but the results differ from eager
    DROPIN = "drop-in difference"  # wrapping changed names, keys or classes, or which parameters get gradients
    ERROR = "error"  # the wrapped model raised
    EAGER = "eager"  # every call ran eagerly for a reason of the runtime (unsupported argument, ...)
    WARMUP = "warmup"  # called, but never past the warmup calls of a key
    NOT_CALLED = "not called"  # built but never called by the forward
    NOTHING = "nothing wrapped"

    @property
    def bad(self) -> bool:
        return self in (Outcome.FAILED, Outcome.MISMATCH, Outcome.DROPIN, Outcome.ERROR)


@dataclass(frozen=True)
class PassResult:
    stats: RunStats
    diff: Diff
    outcome: Outcome
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "detail": self.detail,
            "max_rel_diff": {"outputs": _number(self.diff.outputs), "grads": _number(self.diff.grads)},
            "bitwise": self.diff.bitwise,
            "runtime": self.stats.as_dict(),
        }


def _number(x: float) -> float | str:
    """JSON has no infinity: a pass that produced nothing comparable says so in words."""
    return x if math.isfinite(x) else "inf"


def judge(
    stats: RunStats,
    diff: Diff,
    error: str | None,
    tolerance: float,
    noise: Diff | None = None,
    dropin: tuple[str, ...] = (),
) -> PassResult:
    """The worst thing that happened wins: an error, a drop-in difference, a failed capture, wrong
    numbers, then the good cases. `noise`: how much eager differs from itself (see `Diff.within`);
    `dropin`: what wrapping changed that code holding the model could see."""
    if error:
        return PassResult(stats, diff, Outcome.ERROR, error)
    if dropin:
        return PassResult(stats, diff, Outcome.DROPIN, "; ".join(dropin))
    if stats.disabled:
        return PassResult(stats, diff, Outcome.FAILED, "; ".join(stats.disabled))
    if not diff.within(tolerance, noise):
        detail = f"outputs differ by {diff.outputs:.1e}, gradients by {diff.grads:.1e} (relative)"
        return PassResult(stats, diff, Outcome.MISMATCH, detail)
    if not stats.wrapped:
        return PassResult(stats, diff, Outcome.NOTHING, "")
    fallbacks = "; ".join(f"{n} eager call(s): {reason}" for reason, n in sorted(stats.fallbacks.items()))
    if stats["captures"] or stats["fused_calls"]:
        detail = f"{stats['captures']} graph(s), {stats['forward_replays']} forward and {stats['backward_replays']} backward replays"
        if stats["fused_calls"]:
            detail += f", {stats['fused_calls']} call(s) served by fused runs"
        if stats["eager_backwards"]:
            detail += f", {stats['eager_backwards']} backward(s) eagerly"
        return PassResult(stats, diff, Outcome.CAPTURED, f"{detail}; {fallbacks}" if fallbacks else detail)
    if not stats.calls:
        return PassResult(stats, diff, Outcome.NOT_CALLED, "never called by the model's forward")
    if stats.fallbacks:
        return PassResult(stats, diff, Outcome.EAGER, fallbacks)
    return PassResult(stats, diff, Outcome.WARMUP, f"{stats.calls} call(s), none past the warmup of its key")


class Disagreement(str, enum.Enum):
    ANALYZER_BUG = "analyzer bug"  # called eligible, but the run failed or gave other numbers
    MISSED = "missed opportunity"  # called ineligible or unknown, but it captured and matched eager
    RUNTIME_BUG = "runtime bug"  # whatever the verdict, the wrapped run gave other numbers or a drop-in difference


@dataclass(frozen=True)
class ClassResult:
    qualname: str
    verdict: Status
    reasons: tuple[str, ...]
    run: PassResult

    @property
    def disagreement(self) -> Disagreement | None:
        if self.run.outcome in (Outcome.MISMATCH, Outcome.DROPIN):  # exact or eager, never wrong
            return Disagreement.RUNTIME_BUG
        if self.verdict is Status.ELIGIBLE and self.run.outcome.bad:
            return Disagreement.ANALYZER_BUG
        if self.verdict in (Status.INELIGIBLE, Status.UNKNOWN) and self.run.outcome is Outcome.CAPTURED:
            return Disagreement.MISSED
        return None

    def as_dict(self) -> dict[str, Any]:
        gap = self.disagreement
        return {
            "class": self.qualname,
            "verdict": self.verdict.value,
            "reasons": list(self.reasons),
            **self.run.as_dict(),
            "disagreement": gap.value if gap else None,
        }


@dataclass(frozen=True)
class Validation:
    target: str
    framework: str
    backend: str
    steps: int
    tolerance: float
    package: str
    sites: int
    share: tuple[int, int]  # (layers inside graphs, all layers) in the plan pass
    plan: PassResult
    classes: tuple[ClassResult, ...]
    noise: Diff = Diff(0.0, 0.0, True)  # a second eager run against the first

    @property
    def disagreements(self) -> list[ClassResult]:
        return [c for c in self.classes if c.disagreement]

    @property
    def exit_code(self) -> int:
        """0 when the planned wrapping matches eager, no eligible class failed and no class replayed
        wrong; 1 otherwise."""
        failing = (Disagreement.ANALYZER_BUG, Disagreement.RUNTIME_BUG)
        if self.plan.outcome.bad or any(c.disagreement in failing for c in self.classes):
            return 1
        return 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "target": self.target,
            "framework": self.framework,
            "backend": self.backend,
            "steps": self.steps,
            "tolerance": self.tolerance,
            "package": self.package,
            "eager_noise": {"outputs": _number(self.noise.outputs), "grads": _number(self.noise.grads), "bitwise": self.noise.bitwise},
            "plan": {"sites": self.sites, "layers_in_graphs": self.share[0], "layers": self.share[1], **self.plan.as_dict()},
            "classes": [c.as_dict() for c in self.classes],
            "disagreements": [
                {"class": c.qualname, "kind": c.disagreement.value, "verdict": c.verdict.value, "outcome": c.run.outcome.value}
                for c in self.disagreements
                if c.disagreement
            ],
            "exit_code": self.exit_code,
        }
