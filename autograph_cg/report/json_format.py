"""`--format json`: one object with findings, errors and a summary, for tools and the benchmarks."""

from __future__ import annotations

import json
from typing import Any, TextIO

from autograph_cg.rules.registry import RULES, family_of

VERSION = 1


def finding_dict(f: Any) -> dict[str, Any]:
    rule = RULES[f.code]
    return {
        "path": f.path,
        "line": f.span.line,
        "col": f.span.col,
        "end_line": f.span.end_line,
        "end_col": f.span.end_col,
        "code": f.code,
        "name": rule.name,
        "family": family_of(f.code).name,
        "severity": rule.severity.value,
        "message": f.message,
        "function": f.function,
        **({"condition": f.condition} if f.condition else {}),
        **({"guard": dict(f.guard)} if f.guard else {}),
        **({"refresh": f.refresh} if f.refresh else {}),
    }


def emit(analysis: Any, stream: TextIO, options: Any = None) -> None:
    stream.write('{"version": %d, "findings": [' % VERSION)
    for index, finding in enumerate(analysis.findings):
        stream.write(("\n  " if index == 0 else ",\n  ") + json.dumps(finding_dict(finding)))
    stream.write('\n], "errors": ')
    stream.write(json.dumps([{"path": e.path, "message": e.message} for e in analysis.errors]))
    stream.write(', "summary": ')
    stream.write(json.dumps(analysis.summary.as_dict()))
    stream.write("}\n")
