"""The `autograph-cg` command: a click group, one module per subcommand. The library does the work.

Subcommands are imported when used, so `lint` never pays for libcst, which only `rewrite` needs.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any

import click

from autograph_cg import __version__

COMMANDS = {
    "lint": "autograph_cg.cli.lint:lint",
    "plan": "autograph_cg.cli.plan:plan",
    "rewrite": "autograph_cg.cli.rewrite:rewrite",
    "report": "autograph_cg.cli.report:report",
    "explain": "autograph_cg.cli.explain:explain",
    "rules": "autograph_cg.cli.explain:rules",
    "validate": "autograph_cg.cli.validate:validate",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The command as a process of its own (the console script, `python -m autograph_cg`; click's test runner calls
        `main.main` and is left alone): its heap frozen when it ends. The interpreter's last collection then skips the
        millions of objects a run over a large package leaves (0.4-0.5 s after the answer was printed, for a process
        about to exit)."""
        try:
            return super().__call__(*args, **kwargs)
        finally:
            gc.freeze()


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autograph-cg")
def main() -> None:
    """Find CUDA-graph hazards in Paddle and PyTorch model code, plan and apply CUDA-graph wrapping.

    Exit codes: 0 clean, 1 findings (or changes with --check), 2 usage errors or nothing could be analyzed.
    """
