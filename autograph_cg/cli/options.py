"""Options shared by the commands, and the one place that turns a run's inputs into `Options`."""

from __future__ import annotations

import sys
from typing import Any, Callable, NoReturn

import click

from autograph_cg.api import Options
from autograph_cg.config import Config, ConfigError, load
from autograph_cg.report.progress import Progress

F = Callable[..., Any]


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def paths_argument(f: F) -> F:
    return click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))(f)


def analysis_options(f: F) -> F:
    """Selection, config, exclusion, parallelism and cache: the same flags for lint, plan, rewrite, report."""
    for decorator in reversed(
        [
            click.option("--select", multiple=True, help="Rule codes, prefixes (AG1) or names to report (comma-separated)."),
            click.option("--ignore", multiple=True, help="Rule codes, prefixes or names to leave out."),
            click.option("--exclude", multiple=True, help="Glob patterns of files or folders to skip."),
            click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too."),
            click.option(
                "--files-alone",
                is_flag=True,
                help="Analyze the files named as if they were the whole package. By default a file brings its package "
                "(its top package, or the project folder holding it) and is reported as the run over that package reports it.",
            ),
            click.option("--config", "config_file", type=click.Path(dir_okay=False), help="A pyproject.toml to read instead of the nearest one."),
            click.option("--unknown", type=click.Choice(["unknown", "block", "allow"]), help="What unresolved calls make a verdict."),
            click.option("-j", "--jobs", type=click.IntRange(min=1), help="Processes (default: one per core)."),
            click.option("--no-cache", is_flag=True, help="Neither read nor write the analysis cache."),
            click.option("--cache-dir", type=click.Path(file_okay=False), help="Cache folder (default .autograph-cg-cache)."),
            click.option("-q", "--quiet", is_flag=True, help="No progress bar or summary on stderr."),
            click.option("--no-color", is_flag=True, help="No colour, even on a terminal (NO_COLOR is honoured too)."),
        ]
    ):
        f = decorator(f)
    return f


def min_kernels_option(f: F) -> F:
    """For the commands that plan: how small a layer may be and still get a graph of its own."""
    return click.option(
        "--min-kernels",
        type=click.IntRange(min=0),
        help="Wrap a site only when one call launches at least this many kernels (default 10; 0 wraps every "
        "capturable site). Also `min-kernels` in [tool.autograph-cg].",
    )(f)


def build_options(paths: tuple[str, ...], kwargs: dict[str, Any], wrap_unknown: bool = False) -> Options:
    """Config file, then flags; a bad selector or config is a usage error (exit 2)."""
    try:
        config: Config = load(list(paths), kwargs.get("config_file"))
        config = config.with_overrides(
            select=_split(kwargs.get("select") or ()),
            ignore=_split(kwargs.get("ignore") or ()),
            exclude=config.exclude + _split(kwargs.get("exclude") or ()),
            unknown=kwargs.get("unknown"),
            min_kernels=kwargs.get("min_kernels"),
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if not kwargs.get("quiet"):
        for warning in config.warnings:
            click.echo(f"autograph-cg: warning: {warning}", err=True)
    return Options(
        config=config,
        jobs=kwargs.get("jobs"),
        use_cache=not kwargs.get("no_cache"),
        cache_dir=kwargs.get("cache_dir"),
        force_exclude=bool(kwargs.get("force_exclude")),
        files_alone=bool(kwargs.get("files_alone")),
        wrap_unknown=wrap_unknown,
        progress=Progress(sys.stderr, quiet=bool(kwargs.get("quiet"))),
    )


def report_errors(errors: list[Any]) -> None:
    for error in errors:
        click.echo(f"autograph-cg: error: {error}", err=True)


def exit_after_internal_errors(analysis: Any) -> None:
    """Exit 2 when the analyzer met a bug of its own (reported above, contained): CI must notice."""
    if analysis.summary.internal_errors:
        click.echo(f"autograph-cg: error: {analysis.summary.internal_errors} internal error(s); the rest was analyzed", err=True)
        sys.exit(2)


def fail(message: str) -> NoReturn:
    """One line on stderr and exit 2: the contract for input and output errors."""
    click.echo(f"autograph-cg: error: {message}", err=True)
    sys.exit(2)
