"""`autograph-cg validate MODULE:FACTORY`: run a model eagerly and with CUDA graphs; hold the verdicts against the run."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, TextIO

import click

from autograph_cg.cli.options import analysis_options, build_options, fail
from autograph_cg.report.output import OutputError, open_output
from autograph_cg.report.style import Style
from autograph_cg.validate import Settings, TargetError, Validation, validate as run_validation
from autograph_cg.validate.passes import NOISE_MARGIN
from autograph_cg.validate.target import add_paths, resolve


@click.command()
@click.argument("target")
@click.option("--path", "paths", multiple=True, type=click.Path(file_okay=False), help="Put this folder first on sys.path (repeatable).")
@click.option("--loss", "loss", metavar="MODULE:NAME", help="loss(model, output, *inputs); default: the factory's, else the mean square of the outputs.")
@click.option("--steps", type=click.IntRange(min=1), default=10, show_default=True, help="Inference calls, then SGD training steps, per pass.")
@click.option("--warmup-steps", type=click.IntRange(min=0), default=3, show_default=True, help="Eager calls per graph key before it is captured.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--lr", type=float, default=0.01, show_default=True, help="SGD learning rate.")
@click.option("--tolerance", type=click.FloatRange(min=0), default=1e-3, show_default=True, help="Largest relative difference to eager that still matches.")
@click.option("--backend", type=click.Choice(["auto", "cuda", "standin"]), default="auto", show_default=True, help="auto: CUDA when there is a device, else the CPU stand-in.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@analysis_options
def validate(
    target: str,
    paths: tuple[str, ...],
    loss: str | None,
    steps: int,
    warmup_steps: int,
    seed: int,
    lr: float,
    tolerance: float,
    backend: str,
    fmt: str,
    output: str | None,
    **kwargs: Any,
) -> None:
    """Check the analyzer against a real run. Unlike every other command, this IMPORTS AND RUNS YOUR CODE.

    TARGET is MODULE:FACTORY, importable from the working directory or a --path folder. FACTORY() returns
    (model, inputs), (model, inputs, loss_fn) or a dict with those keys; inputs are the positional
    arguments of the model. The model runs eagerly, then with the plan's sites wrapped in
    CUDAGraphedLayer (nested ones too, each with its guard, as the rewritten source), then once per layer class with all its top-most instances wrapped (in memory; no
    source is changed): STEPS inference calls and STEPS SGD steps each, on CUDA when there is a device,
    else on the CPU stand-in; every wrapped step starts from eager's parameters of that step. Per class it prints the static verdict, what the runtime did, the largest
    differences to eager, and where the two disagree: an eligible class that failed is an analyzer bug,
    an ineligible one that captured fine a missed opportunity, and any class whose wrapped run gave
    other numbers, changed a name, key or class, or left other parameters with gradients is a runtime bug. A second eager run measures how much eager
    differs from itself (GPU kernels that add in another order on each run): a wrapped run matches when it
    differs by at most --tolerance or 4 times that.

    Exit 0 when the planned wrapping matches eager, no eligible class failed and there is no runtime bug,
    1 otherwise, 2 when the target cannot be imported, built or run eagerly.
    """
    if steps <= warmup_steps:
        raise click.UsageError(f"--steps ({steps}) must exceed --warmup-steps ({warmup_steps}) for anything to be captured")
    quiet = bool(kwargs.get("quiet"))
    settings = Settings(steps, warmup_steps, seed, lr, tolerance, backend)
    try:
        add_paths(paths)
        factory = resolve(target)
        loss_fn = resolve(loss, "--loss") if loss else None
        result = run_validation(
            target,
            factory,
            loss_fn,
            settings,
            options_for=lambda package: build_options((package,), kwargs),
            progress=(lambda _: None) if quiet else (lambda msg: click.echo(f"validate: {msg}", err=True)),
        )
    except TargetError as exc:
        fail(str(exc))
    try:
        with open_output(output) as stream:
            if fmt == "json":
                json.dump(result.as_dict(), stream, indent=1)
                stream.write("\n")
            else:
                write_text(result, stream, Style.for_stream(stream, bool(kwargs.get("no_color"))))
    except OutputError as exc:
        fail(str(exc))
    sys.exit(result.exit_code)


def _diff(x: float) -> str:
    return "0" if x == 0 else "inf" if not math.isfinite(x) else f"{x:.1e}"


def write_text(v: Validation, stream: TextIO, style: Style) -> None:
    where = "CUDA graphs" if v.backend == "cuda" else "CPU stand-in graphs (they catch host syncs, not host-to-device copies)"
    stream.write(f"{v.target}: {v.framework} on {where}; {v.steps} inference calls and {v.steps} SGD steps per pass\n")
    stream.write(f"analyzed {v.package}: {v.sites} planned site(s); {len(v.classes)} of its layer classes are in the model\n\n")
    if not v.noise.bitwise:
        stream.write(
            f"eager against itself: outputs {_diff(v.noise.outputs)}, gradients {_diff(v.noise.grads)} (kernels that add in "
            f"another order on each run); a wrapped run may differ by {NOISE_MARGIN:g}x that, or {v.tolerance:g}\n\n"
        )
    plan, (inside, total) = v.plan, v.share
    stream.write(style("Plan", "bold") + f": {plan.stats.wrapped} layer(s) wrapped, {inside} of {total} layers inside graphs\n")
    bitwise = ", bitwise" if plan.diff.bitwise else ""
    stream.write(f"  {plan.outcome.value}: outputs {_diff(plan.diff.outputs)}, gradients {_diff(plan.diff.grads)}{bitwise}\n")
    if plan.detail:
        stream.write(f"      {plan.detail}\n")
    stream.write("\n" + style("Layer classes, each probed alone", "bold") + "\n")
    width = max([len(c.qualname) for c in v.classes] + [5])
    stream.write(f"  {'class':<{width}}  {'verdict':<10}  {'run':<15}  {'outputs':>7}  {'grads':>7}\n")
    for c in v.classes:
        verdict = style(f"{c.verdict.value:<10}", c.verdict.value)
        run = f"{c.run.outcome.value:<15}"
        stream.write(f"  {c.qualname:<{width}}  {verdict}  {run}  {_diff(c.run.diff.outputs):>7}  {_diff(c.run.diff.grads):>7}\n")
        if c.run.detail:
            stream.write(f"      {c.run.detail}\n")
    gaps = v.disagreements
    stream.write("\n" + style(f"Disagreements ({len(gaps)})", "bold") + "\n")
    for c in gaps:
        why = f" ({c.reasons[0]})" if c.reasons else ""
        stream.write(f"  {c.disagreement.value if c.disagreement else ''}: {c.qualname} is {c.verdict.value}{why}, but the run {c.run.outcome.value}")
        stream.write(f": {c.run.detail}\n" if c.run.detail else "\n")
    if v.exit_code == 0:
        stream.write(f"\nok: the planned graphs match eager within {v.tolerance:g} and no eligible class failed\n")
    else:
        stream.write(
            style("\nFAILED", "error")
            + ": the planned graphs differ from eager, an eligible class failed, or a class replayed wrong\n"
        )
