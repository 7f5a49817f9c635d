"""`autograph-cg rewrite PATH...`: flags and printing only; the work is done by `autograph_cg.rewrite`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from autograph_cg.api import analyze
from autograph_cg.cli.options import min_kernels_option, analysis_options, build_options, paths_argument
from autograph_cg.rewrite.files import edit_pool, rewrite_files, undo_files
from autograph_cg.rewrite.results import RewriteReport, Status, plural
from autograph_cg.rewrite.settings import WrapSettings
from autograph_cg.sources import discover


def _print(report: RewriteReport, fmt: str, check: bool, quiet: bool) -> None:
    for result in report.files:
        if result.status is Status.SKIPPED:
            click.echo(f"{result.path}: skipped ({result.kind}): {result.reason}", err=True)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    verb = {"rewrite": ("rewrote", "would rewrite"), "undo": ("undid", "would undo")}[report.action][not report.write]
    for result in report.changed:
        sys.stdout.write(result.diff)
        if not quiet:
            click.echo(f"{verb} {result.path} ({plural(result.sites, 'site')})", err=True)
    if not quiet or report.skipped or (check and report.changed):
        click.echo(report.summary(), err=True)


@click.command()
@paths_argument
@analysis_options
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when a rewrite would change a file.")
@click.option("--diff", is_flag=True, help="Print a unified diff of the changes; write nothing.")
@click.option("--undo", is_flag=True, help="Remove the wrappers and the import that rewrite added.")
@click.option("--warmup-steps", type=click.IntRange(min=0), help="Pass num_warmup_steps=N to each new wrapper.")
@click.option(
    "--compile",
    "compile_",
    is_flag=True,
    help="New wrappers compile their layer before capture (compile=True: Inductor, then graphs); "
    "[tool.autograph-cg] compile takes true or class name patterns.",
)
@click.option("--wrap-unknown", is_flag=True, help="Also wrap layers whose verdict is unknown.")
@min_kernels_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rewrite(
    paths: tuple[str, ...],
    check: bool,
    diff: bool,
    undo: bool,
    warmup_steps: int | None,
    compile_: bool,
    wrap_unknown: bool,
    fmt: str,
    **kwargs: Any,
) -> None:
    """Wrap the plan's sites in CUDAGraphedLayer, in place; --undo takes rewrite's wrappers off again.

    Exit 0 when done or nothing to do, 1 when --check finds files to change, 2 on usage errors or when a
    file had to be skipped (syntax error, undecodable, not reproducible by libcst, read-only, changed).
    """
    if undo and (warmup_steps is not None or wrap_unknown or compile_):
        raise click.UsageError("--warmup-steps, --compile and --wrap-unknown apply to rewriting, not to --undo")
    options = build_options(paths, kwargs, wrap_unknown=wrap_unknown)
    write = not (check or diff)
    if undo:
        sources, errors = discover(list(paths), options.config.exclude, options.force_exclude)
        report = undo_files([s.path for s in sources], write=write, diff=diff, errors=errors, jobs=options.jobs)
    else:
        steps = warmup_steps if warmup_steps is not None else options.config.warmup_steps
        try:
            settings = WrapSettings(num_warmup_steps=steps, compile=("*",) if compile_ else options.config.compile)
        except (TypeError, ValueError) as exc:
            raise click.UsageError(str(exc)) from None
        # the plan of files named alone has sites in those files only
        most = len(paths) if all(os.path.isfile(p) for p in paths) else None
        with edit_pool(options.jobs, most) as pool:  # forked before the analysis grows this process
            analysis = analyze(list(paths), options)
            assert analysis.plan is not None  # planned: the options ask for a plan
            report = rewrite_files(
                analysis.plan.sites,
                len(analysis.files),
                write=write,
                diff=diff,
                settings=settings,
                errors=analysis.errors,
                jobs=options.jobs,
                pool=pool,
            )
    _print(report, fmt, check, bool(kwargs.get("quiet")))
    sys.exit(report.exit_code(check))
