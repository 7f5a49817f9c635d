"""The `autograph-cg` command: a click group, one module per subcommand. The library does the work."""

from __future__ import annotations

import click

from autograph_cg import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autograph-cg")
def main() -> None:
    """Find CUDA-graph hazards in Paddle and PyTorch model code, plan and apply CUDA-graph wrapping.

    Exit codes: 0 clean, 1 findings (or changes with --check), 2 usage errors or nothing could be analyzed.
    """


def _register() -> None:
    from autograph_cg.cli import explain, lint, plan

    main.add_command(lint.lint)
    main.add_command(plan.plan)
    main.add_command(explain.explain)
    main.add_command(explain.rules)
    for module, name in (("rewrite", "rewrite"), ("report", "report")):
        try:
            command = getattr(__import__(f"autograph_cg.cli.{module}", fromlist=[name]), name)
        except ImportError:
            continue
        main.add_command(command)


_register()
