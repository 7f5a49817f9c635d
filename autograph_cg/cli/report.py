"""`autograph-cg report`: the HTML layer-tree report, one self-contained file to open in a browser."""

from __future__ import annotations

import time
from typing import Any

import click

from autograph_cg.api import analyze
from autograph_cg.cli.options import (
    analysis_options,
    build_options,
    exit_after_internal_errors,
    fail,
    min_kernels_option,
    paths_argument,
    report_errors,
)
from autograph_cg.report import html
from autograph_cg.report.output import OutputError, open_output


@click.command()
@paths_argument
@analysis_options
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Write the HTML report here (one self-contained file).")
@click.option("--wrap-unknown", is_flag=True, help="Plan as `plan --wrap-unknown` does.")
@min_kernels_option
def report(paths: tuple[str, ...], html_path: str, wrap_unknown: bool, **kwargs: Any) -> None:
    """Write an HTML report: the layer tree coloured by verdict, reasons with source lines, wrap sites, totals.

    Exit 0 when the report is written (use `lint` to fail a build), 2 on usage errors, an unwritable
    --html path, or when nothing could be analyzed (no file is written then); 2 also after an internal error
    (the report is written).
    """
    started = time.perf_counter()
    options = build_options(paths, kwargs, wrap_unknown=wrap_unknown)
    analysis = analyze(list(paths), options)
    report_errors(analysis.errors)
    if analysis.summary.analyzed == 0:
        fail("nothing could be analyzed")
    try:
        with open_output(html_path) as stream:
            html.emit(analysis, stream, None, title=" ".join(paths))
    except OutputError as exc:
        fail(str(exc))
    if not kwargs.get("quiet"):
        click.echo(f"autograph-cg: wrote {html_path}: {html.summary(analysis)}; "
                   f"{time.perf_counter() - started:.2f} s", err=True)
    exit_after_internal_errors(analysis)

