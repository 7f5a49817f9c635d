"""What makes a finding "the same finding" from one run to the next, whatever lines moved around it.

Baselines match on it and SARIF `partialFingerprints` hash it: the file (relative to a root, so a moved
checkout still matches), the rule code, the enclosing function and the source line with its whitespace
removed. Line and column numbers are left out on purpose: inserting code above a finding must not
make it new.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Iterable, Iterator

from autograph_cg.findings import Finding


@dataclass(frozen=True, slots=True, order=True)
class Identity:
    path: str  # posix, relative to the root when the file is under it
    code: str
    function: str
    source: str  # the normalized source line


def normalize_source(line: str) -> str:
    """Whitespace-insensitive: re-indenting or reformatting a line (`a=b` / `a = b`) keeps its identity."""
    return "".join(line.split())


def relative_path(path: str, root: str | os.PathLike[str]) -> str:
    """`path` as a posix path relative to `root`; absolute (posix) when it lies outside."""
    absolute = os.path.abspath(path)
    base = os.path.abspath(root)
    try:
        common = os.path.commonpath([absolute, base])
    except ValueError:  # different drives
        common = ""
    if common == base:
        return PurePath(os.path.relpath(absolute, base)).as_posix()
    return Path(absolute).as_posix()


def identity(finding: Finding, root: str | os.PathLike[str]) -> Identity:
    return Identity(
        relative_path(finding.path, root), finding.code, finding.function, normalize_source(finding.source_line)
    )


def numbered(findings: Iterable[Finding], root: str | os.PathLike[str]) -> Iterator[tuple[Finding, Identity, int]]:
    """Each finding with its identity and its occurrence number among findings of the same identity (from 0)."""
    seen: Counter[Identity] = Counter()
    for finding in sorted(findings, key=Finding.sort_key):
        key = identity(finding, root)
        yield finding, key, seen[key]
        seen[key] += 1


def fingerprint(key: Identity, occurrence: int) -> str:
    """A stable hex digest of an identity and its occurrence number (for SARIF `partialFingerprints`)."""
    text = "\0".join((key.path, key.code, key.function, key.source, str(occurrence)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
