"""Per-layer counters of the runtime and ``report()``, which prints them: what was graphed, what fell back, and why."""

from __future__ import annotations

import itertools
import sys
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any

from .settings import logger

_registry: "weakref.WeakValueDictionary[int, LayerStats]" = weakref.WeakValueDictionary()
_ids = itertools.count(1)


@dataclass(eq=False)
class LayerStats:
    """Counters of one wrapped layer; reasons are counted, and logged the first time each is seen."""

    name: str
    captures: int = 0
    recaptures: int = 0
    capture_seconds: float = 0.0
    check_seconds: float = 0.0  # of capture_seconds: the first replay's check against eager
    forward_replays: int = 0
    backward_replays: int = 0
    warmup_calls: int = 0
    eager_calls: int = 0
    eager_backwards: int = 0
    nested_calls: int = 0  # calls while an outer wrapped layer captured: part of the outer graph
    fused_calls: int = 0  # calls served by a fused run of wrapped layers (its own line counts the replays)
    runs_ended: int = 0  # fused runs this layer headed that ended before their last layer
    disabled_reason: str | None = None
    fallbacks: Counter = field(default_factory=Counter)
    recapture_reasons: Counter = field(default_factory=Counter)
    uid: int = field(default_factory=lambda: next(_ids))

    def __post_init__(self) -> None:
        _registry[self.uid] = self

    def fallback(self, reason: str, detail: str = "") -> None:
        """Count one eager run for ``reason``; the first of each reason is logged with its detail."""
        self.fallbacks[reason] += 1
        if self.fallbacks[reason] == 1:
            logger.warning("%s runs eagerly: %s%s", self.name, reason, f" ({detail})" if detail else "")

    def recapture(self, reason: str) -> None:
        """Count one drop of graphs for ``reason``, logged the first time (the next call captures again)."""
        self.recaptures += 1
        self.recapture_reasons[reason] += 1
        if self.recapture_reasons[reason] == 1:
            logger.warning("%s captures again: %s", self.name, reason)

    def run_ended(self, reason: str) -> None:
        """Count one fused run that ended early; the first is logged."""
        self.runs_ended += 1
        if self.runs_ended == 1:
            logger.warning("%s: a fused run ended early (%s); its layers run on their own", self.name, reason)

    def disable(self, reason: str) -> None:
        if self.disabled_reason is None:
            self.disabled_reason = reason
            logger.warning("%s is eager from now on: %s", self.name, reason)

    def state(self) -> str:
        if self.disabled_reason:
            return "eager"
        return "graphed" if self.captures or self.fused_calls else "warmup"  # a run's members hold no graph of their own

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state(),
            "captures": self.captures,
            "recaptures": self.recaptures,
            "capture_ms": round(self.capture_seconds * 1e3, 3),
            "check_ms": round(self.check_seconds * 1e3, 3),
            "forward_replays": self.forward_replays,
            "backward_replays": self.backward_replays,
            "warmup_calls": self.warmup_calls,
            "eager_calls": self.eager_calls,
            "eager_backwards": self.eager_backwards,
            "nested_calls": self.nested_calls,
            "fused_calls": self.fused_calls,
            "runs_ended": self.runs_ended,
            "disabled_reason": self.disabled_reason,
            "fallbacks": dict(self.fallbacks),
            "recapture_reasons": dict(self.recapture_reasons),
        }


def layer_stats() -> list[dict[str, Any]]:
    """The counters of every live wrapped layer, oldest first."""
    return [_registry[uid].as_dict() for uid in sorted(_registry.keys())]


def report(file: IO[str] | None = None) -> str:
    """Print one line per wrapped layer (and one per fallback reason) and return the text."""
    rows = layer_stats()
    head = ("layer", "state", "captures", "fwd replays", "bwd replays", "fused", "warmup", "eager", "capture ms")
    table = [head] + [
        (
            r["name"],
            r["state"],
            str(r["captures"]),
            str(r["forward_replays"]),
            str(r["backward_replays"]),
            str(r["fused_calls"]),
            str(r["warmup_calls"]),
            str(r["eager_calls"]),
            f"{r['capture_ms']:.1f}",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    for r in rows:
        if r["disabled_reason"]:
            lines.append(f"  {r['name']}: eager because {r['disabled_reason']}")
        for reason, count in sorted(r["fallbacks"].items()):
            lines.append(f"  {r['name']}: {count} eager call(s): {reason}")
        for reason, count in sorted(r["recapture_reasons"].items()):
            lines.append(f"  {r['name']}: {count} recapture(s): {reason}")
        if r["runs_ended"]:
            lines.append(f"  {r['name']}: {r['runs_ended']} fused run(s) ended early")
        if r["eager_backwards"]:
            lines.append(f"  {r['name']}: {r['eager_backwards']} backward(s) run eagerly on the captured graph")
    if not rows:
        lines = ["no CUDAGraphedLayer in this process"]
    text = "\n".join(lines) + "\n"
    (file or sys.stdout).write(text)
    return text
