"""`--format github`: workflow commands that GitHub Actions turns into annotations on the pull request.

`::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=AG101 host-sync-item::message`, one per
finding (`notice` for info-level rules), plus one `::error` per file that could not be analyzed. Paths are
relative to the working directory, which is the repository root in a workflow. Escaping follows the
Actions toolkit: `%`, CR and LF in the message; also `:` and `,` in properties.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from autograph_cg.findings import Finding, Severity
from autograph_cg.report.identity import relative_path
from autograph_cg.rules.registry import rule

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def emit(analysis: Any, stream: TextIO, options: Any = None) -> None:
    root = os.getcwd()
    for f in sorted(analysis.findings, key=Finding.sort_key):
        r = rule(f.code)
        props = {
            "file": relative_path(f.path, root),
            "line": f.span.line,
            "col": f.span.col,
            "endLine": f.span.end_line,
            "endColumn": f.span.end_col,
            "title": f"{f.code} {r.name}",
        }
        stream.write(_command(COMMANDS[r.severity], props, f.message))
    for error in analysis.errors:
        props = {"file": relative_path(error.path, root), "title": "autograph-cg: not analyzed"}
        stream.write(_command("error", props, error.message))


def _command(name: str, props: dict[str, object], message: str) -> str:
    fields = ",".join(f"{key}={escape_property(str(value))}" for key, value in props.items())
    return f"::{name} {fields}::{escape_data(message)}\n"
