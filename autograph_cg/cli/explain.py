"""`autograph-cg explain CODE` and `autograph-cg rules`: the catalogue, rendered from the rules themselves."""

from __future__ import annotations

import click

from autograph_cg.rules.registry import ALL_RULES, rule


@click.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation: what it finds, why it breaks a CUDA graph, and what to write instead."""
    try:
        found = rule(code)
    except KeyError:
        raise click.UsageError(f"unknown rule {code!r}; `autograph-cg rules` lists them") from None
    click.echo(found.docs(), nl=False)


@click.command()
def rules() -> None:
    """List every rule: code, name, severity, family and whether it blocks capture."""
    for r in ALL_RULES:
        blocks = "blocks" if r.blocks else "      "
        click.echo(f"{r.code}  {r.name:<32} {r.severity.value:<8} {blocks}  {r.family.title}")
