"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One `rules[]` entry per code that has results, rendered from the rule's own docs (the text `explain`
prints); results carry 1-based regions with end positions, URIs relative to `%SRCROOT%` (the working
directory, which is the repository root in CI), the enclosing function as a logical location and a
`partialFingerprints` entry built from the finding's identity, so an alert survives code moving above it.
Files that could not be analyzed become tool execution notifications. Results are streamed one per line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, TextIO
from urllib.parse import quote

from autograph_cg import __version__
from autograph_cg.findings import Severity, SourceError
from autograph_cg.report.identity import fingerprint, numbered, relative_path
from autograph_cg.rules.base import Rule
from autograph_cg.rules.registry import rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "autographCg/v1"
ROOT_ID = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_RESULTS = "@@results@@"


def emit(analysis: Any, stream: TextIO, options: Any = None) -> None:
    """Write `analysis` as one SARIF log (one run) to `stream`."""
    root = os.getcwd()
    findings = list(analysis.findings)
    codes = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    document = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "autograph-cg",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [rule_descriptor(rule(code)) for code in codes],
                    }
                },
                "invocations": [_invocation(analysis.errors, root)],
                "originalUriBaseIds": {ROOT_ID: {"uri": Path(root).as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": _RESULTS,
            }
        ],
    }
    head, tail = json.dumps(document, indent=2, ensure_ascii=False).split(json.dumps(_RESULTS))
    stream.write(head + "[")
    for number, (finding, key, occurrence) in enumerate(numbered(findings, root)):
        result = {
            "ruleId": finding.code,
            "ruleIndex": index[finding.code],
            "level": LEVELS[rule(finding.code).severity],
            "message": {"text": finding.message},
            "locations": [_location(finding.path, root, finding.span, finding.function)],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint(key, occurrence)},
        }
        if finding.condition:  # it runs only under a default-off condition: its class is conditional, not blocked
            result["properties"] = {"condition": finding.condition, "offByDefault": True}
        if finding.guard:  # it runs only when these tests of the arguments fail: a guarded wrapper keeps it out
            result.setdefault("properties", {})["guard"] = dict(finding.guard)
        if finding.refresh:  # it writes state only when this test finds that state stale: the runtime recaptures after
            result.setdefault("properties", {})["refresh"] = finding.refresh
        stream.write(("," if number else "") + "\n        " + json.dumps(result, ensure_ascii=False))
    stream.write(("\n      ]" if findings else "]") + tail + "\n")


def rule_descriptor(r: Rule) -> dict[str, Any]:
    """A `reportingDescriptor` from the rule's docs: short = first sentence of "what", help = the full docs."""
    what = " ".join(r.what.split())
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": _first_sentence(what)},
        "fullDescription": {"text": what},
        "help": {"text": r.docs(), "markdown": r.docs()},
        "defaultConfiguration": {"level": LEVELS[r.severity]},
        "properties": {
            "tags": ["cuda-graph", r.family.name],
            "family": r.family.title,
            "blocksCapture": r.blocks,
        },
    }


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _artifact(path: str, root: str) -> dict[str, str]:
    relative = relative_path(path, root)
    if Path(relative).is_absolute():
        return {"uri": Path(relative).as_uri()}
    return {"uri": quote(relative), "uriBaseId": ROOT_ID}


def _location(path: str, root: str, span: Any = None, function: str = "") -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(path, root)}
    if span is not None:
        physical["region"] = {
            "startLine": span.line,
            "startColumn": span.col,
            "endLine": span.end_line,
            "endColumn": span.end_col,
        }
    location: dict[str, Any] = {"physicalLocation": physical}
    if function:
        location["logicalLocations"] = [{"fullyQualifiedName": function, "kind": "function"}]
    return location


def _invocation(errors: Iterable[SourceError], root: str) -> dict[str, Any]:
    notes = [
        {"level": "error", "message": {"text": e.message}, "locations": [_location(e.path, root)]} for e in errors
    ]
    invocation: dict[str, Any] = {"executionSuccessful": True}  # unreadable files do not stop the run
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation
