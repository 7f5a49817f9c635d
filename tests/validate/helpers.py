"""Running `autograph-cg validate` in-process on modules written by a test, with sys.path restored after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from autograph_cg.cli.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# Few steps keep CI fast: two warmup calls, one capture, then replays in both phases. The stand-in
# unless a test asks for CUDA, so the expected tables hold on a GPU machine too.
FAST = ("--steps", "5", "--warmup-steps", "2", "--no-cache", "-q")


def invoke(*args: str, backend: str = "standin") -> Result:
    return CliRunner().invoke(validate, [*args, *FAST, "--backend", backend], catch_exceptions=False)


def report(*args: str, backend: str = "standin") -> tuple[int, dict[str, Any]]:
    result = invoke(*args, "--format", "json", backend=backend)
    return result.exit_code, json.loads(result.stdout)


def table(data: dict[str, Any]) -> dict[str, tuple[str, str, str | None]]:
    """Per class: (static verdict, run outcome, disagreement)."""
    return {c["class"]: (c["verdict"], c["outcome"], c["disagreement"]) for c in data["classes"]}
