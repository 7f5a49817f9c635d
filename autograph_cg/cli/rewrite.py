"""`autograph-cg rewrite PATH...`: flags and printing only; the work is done by `autograph_cg.rewrite`."""

from __future__ import annotations

import json
import sys

import click

from autograph_cg.api import Options, analyze
from autograph_cg.config import ConfigError, load
from autograph_cg.rewrite import RewriteReport, Status, WrapSettings, rewrite_files, undo_files
from autograph_cg.rewrite.results import plural
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
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when a rewrite would change a file.")
@click.option("--diff", is_flag=True, help="Print a unified diff of the changes; write nothing.")
@click.option("--undo", is_flag=True, help="Remove the wrappers and the import that rewrite added.")
@click.option("--warmup-steps", type=click.IntRange(min=0), default=None, help="Pass num_warmup_steps=N to each new wrapper.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None, help="Read settings from this pyproject.toml.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Analysis processes (default: one per core).")
@click.option("--no-cache", is_flag=True, help="Analyze every file afresh.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too.")
@click.option("--quiet", "-q", is_flag=True, help="Print only problems and the diff.")
@click.pass_context
def rewrite(
    ctx: click.Context,
    paths: tuple[str, ...],
    check: bool,
    diff: bool,
    undo: bool,
    warmup_steps: int | None,
    fmt: str,
    config_path: str | None,
    jobs: int | None,
    no_cache: bool,
    force_exclude: bool,
    quiet: bool,
) -> None:
    """Wrap the eligible sublayers of the plan in CUDAGraphedLayer (--undo takes them off again)."""
    if undo and warmup_steps is not None:
        raise click.UsageError("--warmup-steps applies to new wrappers, not to --undo")
    try:
        config = load(list(paths), config_path)
    except ConfigError as exc:
        click.echo(f"autograph-cg: {exc}", err=True)
        ctx.exit(2)
    for warning in config.warnings:
        click.echo(f"autograph-cg: warning: {warning}", err=True)
    write = not (check or diff)
    if undo:
        sources, errors = discover(list(paths), config.exclude, force_exclude)
        report = undo_files([s.path for s in sources], write=write, diff=diff, errors=errors)
    else:
        steps = warmup_steps if warmup_steps is not None else config.warmup_steps
        try:
            settings = WrapSettings(num_warmup_steps=steps)
        except ValueError as exc:
            click.echo(f"autograph-cg: warmup-steps: {exc}", err=True)
            ctx.exit(2)
        options = Options(config=config, jobs=jobs, use_cache=not no_cache, force_exclude=force_exclude)
        analysis = analyze(list(paths), options)
        report = rewrite_files(
            analysis.plan.sites, len(analysis.files), write=write, diff=diff, settings=settings, errors=analysis.errors
        )
    _print(report, fmt, check, quiet)
    ctx.exit(report.exit_code(check))
