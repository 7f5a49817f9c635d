"""The HTML report: one self-contained page with the package's layer tree, for people deciding what to fix.

Everything is inline (CSS and JS from `html.css` / `html.js` beside this module) and a Content Security
Policy forbids any fetch, so the file can be mailed, attached to a CI run or opened offline. The tree is
the plan's instantiation tree: each layer is coloured by its class's verdict and expands (a native
`<details>`, so it works with scripts off) to the reasons with their source lines, the site the plan wraps,
and its sublayers. Totals on top: layer classes per verdict, findings per family, and the share of layer
instantiations that would run inside a CUDA graph. Written piece by piece to the stream.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from html import escape
from importlib import resources
from itertools import groupby
from typing import Any, Iterable, Iterator, TextIO

from autograph_cg import __version__
from autograph_cg.analysis.plan import Plan, TreeNode, WrapSite
from autograph_cg.analysis.verdicts import Status, Verdict, render_guard
from autograph_cg.findings import Finding
from autograph_cg.report.identity import relative_path
from autograph_cg.rules.base import FAMILIES
from autograph_cg.rules.registry import family_of

EXTERNAL = "external"  # a layer with no verdict of its own: a framework layer or one defined elsewhere
STATUS_ORDER = (Status.INELIGIBLE, Status.UNKNOWN, Status.CONDITIONAL, Status.ELIGIBLE, Status.SKIPPED)
LABELS = {
    "eligible": "eligible",
    "conditional": "conditional",
    "ineligible": "ineligible",
    "unknown": "unknown",
    "skipped": "skipped",
    EXTERNAL: "library",
}
MAX_REASONS_PER_NODE = 20
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _asset(name: str) -> str:
    return resources.files("autograph_cg.report").joinpath(name).read_text(encoding="utf-8")


_CODE_SPAN = re.compile(r"`([^`]+)`")


def message(text: str) -> str:
    """A finding or reason message as HTML: escaped, with its `code spans` set as code."""
    return _CODE_SPAN.sub(r"<code>\1</code>", escape(text))


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def walk(roots: Iterable[TreeNode]) -> Iterator[TreeNode]:
    """Every node of the instantiation tree, parents before children."""
    stack = list(reversed(tuple(roots)))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def graphed_share(plan: Plan) -> tuple[int, int]:
    """(instantiations inside a graph, all instantiations) over the plan's tree."""
    nodes = list(walk(plan.roots))
    return sum(1 for n in nodes if n.wrapped or n.in_graph), len(nodes)


def display_root(files: Iterable[str]) -> str:
    """The working directory when every file is under it; else the folder the files share (shown in the header)."""
    cwd = os.getcwd()
    folders = {os.path.dirname(os.path.abspath(f)) for f in files}
    if not folders or all(os.path.commonpath([cwd, d]) == cwd for d in folders):
        return cwd
    return os.path.commonpath(sorted(folders))


def summary(analysis: Any) -> str:
    """One line for stderr: what the page shows on top."""
    counts = Counter(v.status for v in analysis.plan.verdicts.values())
    graphed, nodes = graphed_share(analysis.plan)
    share = f"{100.0 * graphed / nodes:.1f}%" if nodes else "none"
    verdicts = ", ".join(f"{counts.get(s, 0)} {s.value}" for s in STATUS_ORDER)
    return (
        f"{_count(len(analysis.plan.verdicts), 'layer class', 'layer classes')} ({verdicts}), "
        f"{share} of {_count(nodes, 'layer instantiation')} graphed, {_count(len(analysis.findings), 'finding')}"
    )


class _Page:
    """Renders one analysis; holds what every part needs (root for paths, verdicts, a source-line cache)."""

    def __init__(self, analysis: Any, stream: TextIO) -> None:
        self.analysis = analysis
        self.plan: Plan = analysis.plan
        self.out = stream
        self.root = display_root(analysis.files)
        self._lines: dict[str, list[str]] = {}
        self._rel: dict[str, str] = {}

    # Helpers -----------------------------------------------------------------------------------------------
    def write(self, *parts: str) -> None:
        self.out.write("".join(parts))

    def rel(self, path: str) -> str:
        shown = self._rel.get(path)
        if shown is None:
            shown = self._rel[path] = relative_path(path, self.root)
        return shown

    def source(self, path: str, line: int) -> str:
        if path not in self._lines:
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    self._lines[path] = f.read().splitlines()
            except OSError:
                self._lines[path] = []
        lines = self._lines[path]
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def snippet(self, path: str, line: int) -> str:
        text = self.source(path, line)
        return f"<pre>{line:>5} | {escape(text)}</pre>" if text.strip() else ""

    def where(self, path: str, line: int) -> str:
        return f'<span class="muted">{escape(self.rel(path))}:{line}</span>'

    def root_note(self) -> str:
        if self.root == os.getcwd():
            return ""
        return f'<p class="muted">Paths are relative to <code>{escape(self.root)}</code>.</p>'

    @staticmethod
    def badge(status: str) -> str:
        return f'<span class="badge st-{status}">{LABELS[status]}</span>'

    # Parts -------------------------------------------------------------------------------------------------
    def render(self, title: str) -> None:
        css, js = _asset("html.css"), _asset("html.js")
        self.write(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            '<link rel="icon" href="data:,">\n',
            f"<title>autograph-cg report: {escape(title)}</title>\n<style>\n{css}</style>\n</head>\n<body>\n",
            f"<header><h1>CUDA-graph report</h1><p class=\"muted\">{escape(title)} · "
            f"{len(self.analysis.files)} files · autograph-cg {__version__}</p>{self.root_note()}</header>\n",
        )
        self.totals()
        self.tree()
        self.classes()
        self.sites()
        self.findings()
        self.errors()
        self.write(
            '<footer>Generated by autograph-cg. Colours: verdict of each layer class; '
            "“library” layers are framework layers or classes defined outside the analyzed paths.</footer>\n",
            f"<script>\n{js}</script>\n</body>\n</html>\n",
        )

    def totals(self) -> None:
        counts = Counter(v.status for v in self.plan.verdicts.values())
        graphed, nodes = graphed_share(self.plan)
        share = 100.0 * graphed / nodes if nodes else 0.0
        families = Counter(family_of(f.code).prefix for f in self.analysis.findings)
        self.write('<section id="totals"><h2>Totals</h2><div class="cards">\n')
        self.write('<div class="card" id="verdict-counts"><h3>Layer classes</h3><table>')
        for status in STATUS_ORDER:
            self.write(f'<tr><td>{self.badge(status.value)}</td><td class="n" data-status="{status.value}">'
                       f"{counts.get(status, 0)}</td></tr>")
        self.write(f'<tr><td>total</td><td class="n">{len(self.plan.verdicts)}</td></tr></table></div>\n')
        self.write(
            '<div class="card" id="graphed-share"><h3>Layer instantiations graphed</h3>'
            f'<div class="big">{share:.1f}%</div><div>{graphed} of {nodes} instantiations, '
            f"{_count(sum(1 for s in self.plan.sites if not s.existing), 'site')} to wrap</div>"
            f'<div class="meter"><span style="width:{share:.1f}%"></span></div></div>\n'
        )
        self.write('<div class="card" id="family-counts"><h3>Findings per family</h3><table>')
        for family in FAMILIES:
            self.write(f'<tr><td>{escape(family.title)} <span class="muted">{family.prefix}xx</span></td>'
                       f'<td class="n" data-family="{family.prefix}">{families.get(family.prefix, 0)}</td></tr>')
        self.write(f'<tr><td>total</td><td class="n">{len(self.analysis.findings)}</td></tr></table></div>\n')
        self.write("</div></section>\n")

    def tree(self) -> None:
        self.write(
            '<section><h2>Layer tree</h2><div class="controls">'
            '<button type="button" id="expand-all">Expand all</button>'
            '<button type="button" id="collapse-all">Collapse all</button>'
            '<input type="search" id="search" placeholder="Find a layer class" aria-label="Find a layer class">'
            '<span id="search-count" class="muted"></span></div>\n'
        )
        if not self.plan.roots:
            self.write('<p class="muted">No layer classes found.</p>')
        self.write('<ul class="tree" id="tree">\n')
        for root in self.plan.roots:
            self.node(root)
        self.write("</ul></section>\n")

    def node(self, node: TreeNode) -> None:
        verdict = node.verdict
        status = verdict.status.value if verdict else EXTERNAL
        name = node.qualname.rsplit(".", 1)[-1]
        tags = ""
        if node.site is not None and node.site.existing:
            tags += '<span class="tag existing">already wrapped</span>'
        elif node.wrapped:
            tags += '<span class="tag wrapped">graphed here</span>'
        elif node.in_graph:
            tags += '<span class="tag in-graph">in graph</span>'
        if node.shown_above:
            tags += '<span class="tag">sublayers listed above</span>'
        target = f'<span class="target">{escape(node.target)}</span>' if node.target else ""
        label = f'{self.badge(status)}<code title="{escape(node.qualname)}">{escape(name)}</code>{target}{tags}'
        attrs = f'class="{{kind}} st-{status}" data-name="{escape(node.qualname)}"'
        if not (node.children or node.site or verdict):
            self.write(f"<li><div {attrs.format(kind='leaf')}>{label}</div></li>\n")
            return
        self.write(f"<li><details {attrs.format(kind='node')}><summary>{label}</summary>\n<div class=\"detail\">")
        if verdict is not None:
            self.write(f"<div>class {escape(node.qualname)} defined at {self.where(verdict.path, verdict.line)}</div>")
            self.reasons(verdict, MAX_REASONS_PER_NODE)
        if node.site is not None:
            self.site(node.site)
        self.write("</div>\n")
        if node.children:
            self.write("<ul>\n")
            for child in node.children:
                self.node(child)
            self.write("</ul>\n")
        self.write("</details></li>\n")

    def reasons(self, verdict: Verdict, limit: int | None = None) -> None:
        if not verdict.reasons:
            return
        heading = {
            Status.INELIGIBLE: "Why it cannot be graphed",
            Status.CONDITIONAL: "Capturable while these default-off conditions stay off",
        }.get(verdict.status, "Unresolved")
        self.write(f"<h3>{heading}</h3><ol class=\"reasons\">")
        shown = verdict.reasons if limit is None else verdict.reasons[:limit]
        for reason in shown:
            when = f' <span class="condition">only when <code>{escape(reason.condition)}</code></span>' if reason.condition else ""
            if reason.guard:
                when += f' <span class="condition">kept out by the guard <code>{escape(render_guard(reason.guard))}</code></span>'
            self.write(
                f"<li><code>{escape(reason.code)}</code> {message(reason.message)}{when} {self.where(reason.path, reason.line)}"
                f'<div class="chain">{escape(" → ".join(reason.chain))}</div>'
                f"{self.snippet(reason.path, reason.line)}</li>"
            )
        self.write("</ol>")
        if len(shown) < len(verdict.reasons):
            self.write(f'<p class="muted">and {len(verdict.reasons) - len(shown)} more (see Layer classes)</p>')

    def site(self, site: WrapSite) -> None:
        action = "Already wrapped" if site.existing else "Wrapped in CUDAGraphedLayer"
        container = f" in a {escape(site.container)}" if site.container else ""
        guard = f', under the guard <code>{escape(render_guard(site.guard))}</code>' if site.guard else ""
        self.write(
            f"<h3>{action}</h3><div>at {self.where(site.path, site.span.line)}: "
            f"<code>{escape(site.target)}</code>{container}{guard}</div>{self.snippet(site.path, site.span.line)}"
        )

    def classes(self) -> None:
        order = {status: i for i, status in enumerate(STATUS_ORDER)}
        verdicts = sorted(self.plan.verdicts.values(), key=lambda v: (order[v.status], v.qualname))
        self.write('<section id="classes"><h2>Layer classes</h2><table class="list"><tr><th>verdict</th>'
                   "<th>class</th><th>defined at</th><th>reasons</th></tr>\n")
        for v in verdicts:
            self.write(f"<tr><td>{self.badge(v.status.value)}</td><td><code>{escape(v.qualname)}</code></td>"
                       f"<td>{self.where(v.path, v.line)}</td><td>")
            if v.reasons:
                self.write(f"<details><summary>{len(v.reasons)}</summary>")
                self.reasons(v)
                self.write("</details>")
            self.write("</td></tr>\n")
        self.write("</table></section>\n")

    def sites(self) -> None:
        self.write('<section id="sites"><h2>Wrap sites</h2>')
        if not self.plan.sites:
            self.write('<p class="muted">The plan wraps nothing.</p>')
        else:
            self.write('<table class="list"><tr><th>where</th><th>layer</th><th>in</th><th>as</th><th>kernels</th>'
                       "<th></th></tr>\n")
            for s in self.plan.sites:
                note = "already wrapped" if s.existing else ""
                self.write(
                    f"<tr><td>{self.where(s.path, s.span.line)}</td><td><code>{escape(s.wrapped_class)}</code></td>"
                    f"<td><code>{escape(s.owner)}</code></td><td><code>{escape(s.target)}</code>"
                    f"{(' in a ' + escape(s.container)) if s.container else ''}</td><td class=\"n\">~{s.kernels}</td>"
                    f"<td>{note}</td></tr>\n"
                )
            self.write("</table>")
        if self.plan.skipped:
            self.write(f'<h3 id="skipped">Left unwrapped: too small to pay for a wrapper ({len(self.plan.skipped)})</h3>'
                       '<table class="list"><tr><th>where</th><th>layer</th><th>as</th><th>why</th></tr>\n')
            for s in self.plan.skipped:
                self.write(f"<tr><td>{self.where(s.path, s.span.line)}</td><td><code>{escape(s.wrapped_class)}</code></td>"
                           f"<td><code>{escape(s.target)}</code></td><td>{escape(s.reason)}</td></tr>\n")
            self.write("</table>")
        if self.plan.unresolved:
            self.write('<h3 id="unresolved">Most often unresolved</h3><p class="muted">By the places that call them. Declare the ones you know in '
                       "<code>[tool.autograph-cg]</code> <code>capturable</code> or <code>not-capturable</code>.</p><ul>")
            for name, count in self.plan.unresolved:
                self.write(f"<li><code>{escape(name)}</code> <span class=\"muted\">{count}</span></li>")
            self.write("</ul>")
        for note in self.plan.notes:
            self.write(f'<p class="muted">{escape(note.text)}</p>')
        self.write("</section>\n")

    def findings(self) -> None:
        findings = sorted(self.analysis.findings, key=Finding.sort_key)
        self.write(f'<section id="findings"><h2>Findings ({len(findings)})</h2>\n')
        for path, group in groupby(findings, key=lambda f: f.path):
            rows = list(group)
            self.write(f'<details class="file"><summary><code>{escape(self.rel(path))}</code> '
                       f'<span class="muted">{len(rows)}</span></summary><table class="list">\n')
            for f in rows:
                self.write(
                    f"<tr><td>{f.span.line}:{f.span.col}</td><td><code>{escape(f.code)}</code></td>"
                    f"<td>{message(f.message)}<div class=\"chain\">{escape(f.function)}</div>"
                    f"{self.snippet(f.path, f.span.line)}</td></tr>\n"
                )
            self.write("</table></details>\n")
        self.write("</section>\n")

    def errors(self) -> None:
        if not self.analysis.errors:
            return
        self.write('<section id="errors"><h2>Not analyzed</h2><ul>')
        for e in self.analysis.errors:
            self.write(f"<li><code>{escape(self.rel(e.path))}</code>: {escape(e.message)}</li>")
        self.write("</ul></section>\n")


def emit(analysis: Any, stream: TextIO, options: Any = None, *, title: str = "") -> None:
    """Write the HTML report of `analysis` to `stream`; `title` names what was analyzed."""
    _Page(analysis, stream).render(title or "analysis")
