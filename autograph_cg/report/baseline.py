"""Baselines for legacy code: record today's findings once, then report only the new ones.

A baseline is a JSON file listing finding identities (file, code, enclosing function, normalized source
line; see `identity.py`) with a count each. Paths are stored relative to the baseline file's directory, so
the file works from any working directory and in any checkout. Matching consumes counts: a line that
held two `.item()` calls and now holds three reports one.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from autograph_cg.findings import Finding
from autograph_cg.report.identity import Identity, normalize_source, numbered
from autograph_cg.report.output import open_output

FORMAT_KEY = "autograph-cg-baseline"
FORMAT_VERSION = 1
_FIELDS = ("path", "code", "function", "source")


class BaselineError(Exception):
    """The baseline file is missing or not a baseline; the message is one line for stderr (exit 2)."""


@dataclass(frozen=True)
class Baseline:
    root: Path  # the directory the stored paths are relative to
    counts: Counter[Identity]

    def filter(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings the baseline does not account for, in their original order."""
        findings = list(findings)
        remaining = Counter(self.counts)
        known: set[int] = set()
        for finding, key, _ in numbered(findings, self.root):
            if remaining[key] > 0:
                remaining[key] -= 1
                known.add(id(finding))
        return [f for f in findings if id(f) not in known]


def load(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline written by `write`; a missing, unreadable or malformed file raises `BaselineError`."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BaselineError(f"cannot read baseline {source}: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"corrupt baseline {source}: line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict) or data.get(FORMAT_KEY) != FORMAT_VERSION:
        raise BaselineError(
            f"{source} is not an autograph-cg baseline (expected {{\"{FORMAT_KEY}\": {FORMAT_VERSION}, ...}})"
        )
    entries = data.get("findings")
    if not isinstance(entries, list):
        raise BaselineError(f"corrupt baseline {source}: \"findings\" must be a list")
    counts: Counter[Identity] = Counter()
    for number, entry in enumerate(entries, 1):
        if not _valid_entry(entry):
            raise BaselineError(
                f"corrupt baseline {source}: entry {number} needs string "
                + ", ".join(_FIELDS)
                + " and a positive integer count"
            )
        key = Identity(entry["path"], entry["code"], entry["function"], normalize_source(entry["source"]))
        counts[key] += entry["count"]
    return Baseline(Path(os.path.abspath(source)).parent, counts)


def _valid_entry(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and all(isinstance(entry.get(name), str) for name in _FIELDS)
        and type(entry.get("count")) is int
        and entry["count"] > 0
    )


def write(path: str | os.PathLike[str], findings: Iterable[Finding]) -> int:
    """Write a baseline of `findings` atomically (see `open_output`); returns the number of findings recorded."""
    root = Path(os.path.abspath(path)).parent
    counts: Counter[Identity] = Counter()
    shown: dict[Identity, str] = {}  # the line as written (spaces collapsed), for people reading the file
    for finding, key, _ in numbered(findings, root):
        counts[key] += 1
        shown.setdefault(key, " ".join(finding.source_line.split()))
    with open_output(path) as stream:
        stream.write(f'{{\n  "{FORMAT_KEY}": {FORMAT_VERSION},\n  "findings": [')
        for index, key in enumerate(sorted(counts)):
            entry = {"path": key.path, "code": key.code, "function": key.function, "source": shown[key]}
            entry["count"] = counts[key]
            stream.write(("," if index else "") + "\n    " + json.dumps(entry, ensure_ascii=False))
        stream.write("\n  ]\n}\n" if counts else "]\n}\n")
    return sum(counts.values())
