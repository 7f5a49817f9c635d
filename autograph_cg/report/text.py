"""`--format text`: `path:line:col: CODE message`, one finding a line, like ruff and compilers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TextIO

from autograph_cg.report.style import Style
from autograph_cg.rules.registry import RULES


@dataclass(frozen=True)
class EmitOptions:
    style: Style = Style(False)
    show_source: bool = False


def emit(analysis: Any, stream: TextIO, options: EmitOptions | None = None) -> None:
    style = (options or EmitOptions()).style
    for f in analysis.findings:
        rule = RULES[f.code]
        stream.write(
            f"{style(f.path, 'path')}:{f.span.line}:{f.span.col}: {style(f.code, rule.severity.value)} {f.message} "
            f"{style('[' + rule.name + ']', 'dim')}\n"
        )


def summary_line(analysis: Any) -> str:
    """The closing line on stderr: counts, so an empty stdout is never ambiguous."""
    s = analysis.summary
    failed = sum(1 for e in analysis.errors if not e.internal)  # files named but missing count too
    errors = f", {failed} not analyzed" if failed else ""
    if s.internal_errors:
        errors += f", {s.internal_errors} internal error{'s' if s.internal_errors != 1 else ''}"
    verdicts = ", ".join(f"{n} {name}" for name, n in s.verdicts.items() if n)
    return f"{s.findings} finding{'s' if s.findings != 1 else ''} in {s.analyzed} file{'s' if s.analyzed != 1 else ''}{errors}; layers: {verdicts or 'none'}"
