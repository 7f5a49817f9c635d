"""`autograph-cg plan`: the layer tree, each class's verdict and why, and the sites `rewrite` would wrap."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import click

from autograph_cg.analysis.guards import literal
from autograph_cg.analysis.plan import Plan, TreeNode
from autograph_cg.analysis.verdicts import render_guard
from autograph_cg.api import analyze
from autograph_cg.cli.options import min_kernels_option, analysis_options, build_options, exit_after_internal_errors, paths_argument, report_errors
from autograph_cg.report.output import OutputError, open_output
from autograph_cg.report.style import Style


@click.command()
@paths_argument
@analysis_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the plan here instead of stdout.")
@click.option("--wrap-unknown", is_flag=True, help="Also wrap layers whose verdict is unknown.")
@min_kernels_option
def plan(paths: tuple[str, ...], fmt: str, output: str | None, wrap_unknown: bool, **kwargs: Any) -> None:
    """Show which layer classes can be captured, why not, and what `rewrite` would wrap.

    Exit 0 on success, 2 on usage errors, when nothing could be analyzed, or after an internal error.
    """
    options = build_options(paths, kwargs, wrap_unknown=wrap_unknown)
    analysis = analyze(list(paths), options)
    report_errors(analysis.errors)
    assert analysis.plan is not None  # planned: the options ask for a plan
    try:
        with open_output(output) as stream:
            if fmt == "json":
                json.dump(plan_dict(analysis.plan), stream, indent=1)
                stream.write("\n")
            else:
                write_text(analysis.plan, stream, Style.for_stream(stream, bool(kwargs.get("no_color"))))
    except OutputError as exc:
        click.echo(f"autograph-cg: error: {exc}", err=True)
        sys.exit(2)
    if analysis.summary.analyzed == 0:
        click.echo("autograph-cg: error: nothing could be analyzed", err=True)
        sys.exit(2)
    exit_after_internal_errors(analysis)


def plan_dict(plan: Plan) -> dict[str, Any]:
    return {
        "version": 1,
        "verdicts": [
            {
                "class": v.qualname,
                "path": v.path,
                "line": v.line,
                "verdict": v.status.value,
                "kernels": v.kernels,
                **({"guard": dict(v.guard)} if v.guard else {}),
                "reasons": [
                    {"chain": list(r.chain), "code": r.code, "message": r.message, "path": r.path, "line": r.line,
                     **({"condition": r.condition} if r.condition else {}), **({"guard": dict(r.guard)} if r.guard else {})}
                    for r in v.reasons
                ],
            }
            for v in sorted(plan.verdicts.values(), key=lambda v: v.qualname)
        ],
        "sites": [
            {
                "path": s.path,
                "line": s.span.line,
                "col": s.span.col,
                "end_line": s.span.end_line,
                "end_col": s.span.end_col,
                "class": s.wrapped_class,
                "owner": s.owner,
                "target": s.target,
                "container": s.container,
                "existing": s.existing,
                "kernels": s.kernels,
                **({"guard": dict(s.guard)} if s.guard else {}),
                **({"update": True} if s.update else {}),
            }
            for s in plan.sites
        ],
        "min_kernels": plan.min_kernels,
        "skipped": [
            {"path": s.path, "line": s.span.line, "col": s.span.col, "class": s.wrapped_class, "owner": s.owner,
             "target": s.target, "kernels": s.kernels, "reason": s.reason}
            for s in plan.skipped
        ],
        "unresolved": [{"name": name, "count": count} for name, count in plan.unresolved],
        "notes": [note.text for note in plan.notes],
    }


def write_text(plan: Plan, stream: TextIO, style: Style) -> None:
    stream.write(style("Layer tree", "bold") + "\n")
    for root in plan.roots:
        _node(plan, root, stream, style, "", True, True)
    stream.write("\n" + style("Verdicts", "bold") + "\n")
    for verdict in sorted(plan.verdicts.values(), key=lambda v: v.qualname):
        guarded = f"  guard: {render_guard(verdict.guard)}" if verdict.guard else ""
        stream.write(f"  {style(verdict.status.value, verdict.status.value):<12} {verdict.qualname}  ({verdict.path}:{verdict.line}){guarded}\n")
        for reason in verdict.reasons:
            stream.write(f"      {reason.render()}\n")
    new = [s for s in plan.sites if not s.existing]
    stream.write("\n" + style(f"Sites to wrap ({len(new)})", "bold") + "\n")
    for site in plan.sites:
        tag = " (already wrapped)" if site.existing else " (wrapped; its guard is updated)" if site.update else ""
        name = " | ".join(n.rsplit(".", 1)[-1] for n in site.wrapped_class.split(" | "))
        guard = f", guard={literal(site.guard)}" if site.guard else ""
        stream.write(f"  {site.path}:{site.span.line}:{site.span.col}  {site.target or '<expr>'} = CUDAGraphedLayer({name}(...){guard})"
                     f"  ~{site.kernels} kernels{tag}\n")
    if plan.skipped:
        stream.write("\n" + style(f"Left unwrapped, too small to pay for a wrapper ({len(plan.skipped)})", "bold") + "\n")
        for skipped in plan.skipped:
            name = " | ".join(n.rsplit(".", 1)[-1] for n in skipped.wrapped_class.split(" | "))
            stream.write(f"  {skipped.path}:{skipped.span.line}:{skipped.span.col}  {skipped.target or '<expr>'}: {name}: {skipped.reason}\n")
    if plan.unresolved:
        stream.write("\n" + style("Most often unresolved, by the places that call them (declare them in [tool.autograph-cg] capturable / not-capturable)", "bold") + "\n")
        for name, count in plan.unresolved:
            stream.write(f"  {count:5d}  {name}\n")
    for note in plan.notes:
        stream.write(f"\nnote: {note.text}\n")


def _node(plan: Plan, node: TreeNode, stream: TextIO, style: Style, prefix: str, last: bool, root: bool) -> None:
    verdict = node.verdict
    assert verdict is not None  # the plan's tree holds package classes only
    label = node.qualname if root else f"{node.target}: {node.qualname.rsplit('.', 1)[-1]}"
    guard = f", guard: {render_guard(node.site.guard)}" if node.site is not None and node.site.guard else ""
    mark = f"  [wrapped{guard}]" if node.wrapped else "  (in graph)" if node.in_graph else ""
    mark += "  (sublayers above)" if node.shown_above else ""
    branch = "" if root else ("└─ " if last else "├─ ")
    stream.write(f"{prefix}{branch}{label}  {style(verdict.status.value, verdict.status.value)}{style(mark, 'bold')}\n")
    child_prefix = prefix + ("" if root else ("   " if last else "│  "))
    for index, child in enumerate(node.children):
        _node(plan, child, stream, style, child_prefix, index == len(node.children) - 1, False)
