"""What a rewrite run did, per file and in total, for the summary line and `--format json`."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


class Unsafe(Exception):
    """Why a file is left untouched: a short kind for the summary and a one-line message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Status(str, enum.Enum):
    CHANGED = "changed"  # written
    WOULD_CHANGE = "would-change"  # --check / --diff: a write would change it
    UNCHANGED = "unchanged"  # touched by the plan, nothing to do (already wrapped, kept by a pragma)
    SKIPPED = "skipped"  # left untouched because of a problem, see `kind` and `reason`


@dataclass(frozen=True, slots=True)
class FileResult:
    path: str
    status: Status
    sites: int = 0  # wrappers added (rewrite) or removed (undo)
    kept: int = 0  # sites left alone by `# autograph-cg: skip` or a comment inside a wrapper
    kind: str = ""  # skipped: syntax-error, undecodable, not-reproducible, read-only, changed, conflict, ...
    reason: str = ""
    diff: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "status": self.status.value, "sites": self.sites, "kept": self.kept}
        if self.status is Status.SKIPPED:
            out.update(kind=self.kind, reason=self.reason)
        if self.diff:
            out["diff"] = self.diff
        return out


@dataclass
class RewriteReport:
    action: str  # "rewrite" or "undo"
    write: bool  # False under --check / --diff
    files_scanned: int = 0
    files: list[FileResult] = field(default_factory=list)

    @property
    def skipped(self) -> list[FileResult]:
        return [f for f in self.files if f.status is Status.SKIPPED]

    @property
    def changed(self) -> list[FileResult]:
        return [f for f in self.files if f.status in (Status.CHANGED, Status.WOULD_CHANGE)]

    @property
    def sites(self) -> int:
        return sum(f.sites for f in self.changed)

    def exit_code(self, check: bool) -> int:
        """2 when a file had to be skipped, 1 when --check finds work to do, else 0."""
        if self.skipped:
            return 2
        return 1 if check and self.changed else 0

    def summary(self) -> str:
        verb = "wrapped" if self.action == "rewrite" else "unwrapped"
        if not self.write:
            verb = f"would be {verb}"
        kept = sum(f.kept for f in self.files)
        parts = [
            f"{plural(self.files_scanned, 'file')} scanned",
            f"{plural(self.sites, 'site')} {verb}",
            f"{plural(len(self.changed), 'file')} {'changed' if self.write else 'would change'}",
        ]
        if kept:
            parts.append(f"{plural(kept, 'site')} kept by pragma")
        skipped = self.skipped
        kinds = Counter(f.kind for f in skipped)
        detail = f" ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})" if skipped else ""
        parts.append(f"{len(skipped)} skipped{detail}")
        return f"{self.action}: " + ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "write": self.write,
            "files_scanned": self.files_scanned,
            "sites": self.sites,
            "files_changed": len(self.changed),
            "files_skipped": len(self.skipped),
            "files": [f.to_json() for f in self.files],
        }
