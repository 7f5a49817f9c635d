"""`# autograph-cg: ignore[AG101,AG2]`, bare `# autograph-cg: ignore`, and `# autograph-cg: skip`.

A comment applies to its own line, or, alone on a line, to the line below it. Codes may be prefixes (`AG2`)
or rule names (`host-sync-item`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_COMMENT = re.compile(r"#\s*autograph-cg:\s*(ignore|skip)\b(?:\[([^\]]*)\])?")
ALL = "*"


@dataclass
class Suppressions:
    ignores: dict[int, frozenset[str]] = field(default_factory=dict)  # line -> codes/names/prefixes, or {ALL}
    skips: set[int] = field(default_factory=set)  # lines a skip applies to

    def ignored(self, line: int, end_line: int, code: str, name: str) -> bool:
        for ln in (line, end_line) if end_line != line else (line,):
            marks = self.ignores.get(ln)
            if marks and (ALL in marks or name in marks or any(code.startswith(m) for m in marks)):
                return True
        return False

    def skipped(self, line: int) -> bool:
        return line in self.skips


def scan(lines: list[str]) -> Suppressions:
    """Suppression marks of a file; callers skip this when the text has no 'autograph-cg:' at all."""
    found = Suppressions()
    for number, text in enumerate(lines, start=1):
        if "autograph-cg:" not in text:
            continue
        for match in _COMMENT.finditer(text):
            own_line = text[: match.start()].strip() == ""
            target = number + 1 if own_line else number
            if match.group(1) == "skip":
                found.skips.add(target)
                found.skips.add(number)
                continue
            codes = match.group(2)
            marks = frozenset(c.strip() for c in codes.split(",") if c.strip()) if codes else frozenset({ALL})
            found.ignores[target] = found.ignores.get(target, frozenset()) | marks
    return found
