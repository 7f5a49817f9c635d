"""`autograph-cg lint`: what blocks CUDA graphs, per line."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import click

from autograph_cg.api import analyze
from autograph_cg.cli.options import (
    analysis_options,
    build_options,
    exit_after_internal_errors,
    fail,
    paths_argument,
    report_errors,
)
from autograph_cg.report import FORMATS
from autograph_cg.report.baseline import BaselineError
from autograph_cg.report.baseline import load as load_baseline
from autograph_cg.report.baseline import write as save_baseline
from autograph_cg.report.output import OutputError, open_output
from autograph_cg.report.style import Style
from autograph_cg.report.text import EmitOptions, summary_line


@click.command()
@paths_argument
@analysis_options
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain (report-only CI jobs).")
@click.option("--baseline", type=click.Path(dir_okay=False), help="Report only findings not recorded in this baseline.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), help="Record today's findings as the baseline.")
def lint(paths: tuple[str, ...], fmt: str, output: str | None, exit_zero: bool, baseline: str | None, write_baseline: str | None, **kwargs: Any) -> None:
    """Report CUDA-graph hazards in code reachable from layers' forward methods.

    Exit 0: no findings. 1: findings. 2: usage error, no file could be analyzed, or an internal error.
    Files that cannot be read or parsed are reported on stderr; the others are still analyzed.
    """
    options = replace(build_options(paths, kwargs), plan=False)  # lint reports findings and verdicts: no plan
    try:
        known = load_baseline(baseline) if baseline else None
    except BaselineError as exc:
        fail(str(exc))
    analysis = analyze(list(paths), options)
    report_errors(analysis.errors)
    if known is not None:
        analysis = _replace_findings(analysis, known.filter(analysis.findings))
    if write_baseline:
        try:
            count = save_baseline(write_baseline, analysis.findings)
        except OutputError as exc:
            fail(str(exc))
        if not kwargs.get("quiet"):
            click.echo(f"autograph-cg: wrote {count} findings to {write_baseline}", err=True)
    try:
        with open_output(output) as stream:
            style = Style.for_stream(stream, bool(kwargs.get("no_color"))) if fmt == "text" else Style(False)
            FORMATS[fmt](analysis, stream, EmitOptions(style=style))
    except OutputError as exc:
        fail(str(exc))
    if not kwargs.get("quiet"):
        click.echo(summary_line(analysis), err=True)
    if analysis.summary.analyzed == 0:
        fail("nothing could be analyzed")
    exit_after_internal_errors(analysis)
    sys.exit(0 if exit_zero or write_baseline or not analysis.findings else 1)


def _replace_findings(analysis: Any, findings: list[Any]) -> Any:
    summary = replace(analysis.summary, findings=len(findings))
    return replace(analysis, findings=findings, summary=summary)

