import dataclasses
import io
import re
from html.parser import HTMLParser

from autograph_cg.analysis.plan import TreeNode
from autograph_cg.report import html

from .conftest import HandMade


def render(analysis, title="fixtures/paddle_lm") -> str:
    out = io.StringIO()
    html.emit(analysis, out, None, title=title)
    return out.getvalue()


class Collect(HTMLParser):
    """Every tag with its attributes, and whether the nesting of the page is balanced."""

    VOID = {"meta", "link", "input", "br", "img"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.mismatched: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.mismatched.append(tag)


def parse(text: str) -> Collect:
    parser = Collect()
    parser.feed(text)
    parser.close()
    return parser


def test_page_is_balanced_and_self_contained(analysis):
    page = parse(render(analysis))
    assert page.mismatched == [] and page.stack == []
    for tag, attrs in page.tags:
        for name in ("src", "href", "action", "data", "poster"):
            value = attrs.get(name)
            assert value is None or value.startswith(("data:", "#")), (tag, name, value)
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
    csp = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [html.CSP] and "default-src 'none'" in csp[0]
    assert [t for t, _ in page.tags].count("script") == 1 and [t for t, _ in page.tags].count("style") == 1


def test_totals(analysis):
    text = render(analysis)
    counts = dict(re.findall(r'data-status="(\w+)">(\d+)<', text))
    assert counts == {"ineligible": "2", "unknown": "1", "conditional": "0", "eligible": "2", "skipped": "0"}
    families = dict(re.findall(r'data-family="(AG\d)">(\d+)<', text))
    assert families == {"AG1": "3", "AG2": "1", "AG3": "1", "AG4": "0", "AG5": "0", "AG9": "1"}
    # 7 instantiations in the tree; DecoderBlock and RMSNorm wrapped, attention and its Linear inside the graph
    assert '<div class="big">57.1%</div><div>4 of 7 instantiations, 2 sites to wrap</div>' in text


def test_tree_nodes_carry_verdicts_reasons_sources_and_sites(analysis):
    text = render(analysis)
    page = parse(text)
    nodes = {a["data-name"]: a["class"] for t, a in page.tags if "data-name" in a}
    assert nodes == {
        "paddle_lm.model.DecoderLM": "node st-ineligible",
        "paddle.nn.Embedding": "leaf st-external",
        "paddle_lm.block.DecoderBlock": "node st-eligible",
        "paddle_lm.attention.MultiHeadAttention": "node st-external",
        "paddle.nn.Linear": "leaf st-external",
        "paddle_lm.norm.RMSNorm": "node st-eligible",
        "paddle_lm.heads.TopPSampler": "node st-ineligible",
    }
    # the reason of DecoderLM, with its chain and the source line read from ops.py
    assert "DecoderLM.forward → lengths_to_mask" in text
    assert "<pre>   31 |         max_len = lengths.max().item()</pre>" in text
    # the wrap site of the blocks, with the line from model.py
    assert "<code>self.blocks[*]</code> in a LayerList" in text
    assert "MoEDecoderBlock(config) if i in config.moe_layers else DecoderBlock(config)" in text
    assert text.count('<span class="tag wrapped">graphed here</span>') == 2
    assert text.count('<span class="tag in-graph">in graph</span>') == 2
    assert "DecoderLM is built by make_model: wrap it there" in text
    assert "syntax error at line 3: invalid syntax" in text


def test_text_is_escaped(analysis):
    hostile = dataclasses.replace(analysis.findings[0], message="<script>alert(1)</script> & more")
    text = render(HandMade([hostile], plan=analysis.plan, files=analysis.files), title="<b>x</b>")
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in text
    assert "<title>autograph-cg report: &lt;b&gt;x&lt;/b&gt;</title>" in text


def test_reasons_per_tree_node_are_capped_but_all_listed_in_the_class_table(analysis, monkeypatch):
    monkeypatch.setattr(html, "MAX_REASONS_PER_NODE", 1)
    text = render(analysis)
    assert text.count("and 1 more (see Layer classes)") == 1  # TopPSampler has two reasons
    assert text.count("<code>nonzero</code>: output shape depends on the data") >= 2


def test_empty_analysis(analysis):
    text = render(HandMade([]))
    assert "No layer classes found." in text and "The plan wraps nothing." in text
    assert '<div class="big">0.0%</div><div>0 of 0 instantiations, 0 sites to wrap</div>' in text


def test_files_outside_the_working_directory_are_shown_relative_to_their_common_folder(analysis, tmp_path):
    inside = render(analysis)
    assert "Paths are relative to" not in inside and "fixtures/paddle_lm/ops.py:31" in inside
    moved = [dataclasses.replace(f, path=str(tmp_path / "pkg" / "sub" / f.path.rsplit("/", 1)[1]))
             for f in analysis.findings]
    files = [str(tmp_path / "pkg" / "a.py"), str(tmp_path / "pkg" / "sub" / "b.py")]
    outside = render(HandMade(moved, files=files))
    assert f"Paths are relative to <code>{tmp_path / 'pkg'}</code>." in outside
    assert "<code>sub/ops.py</code>" in outside and str(tmp_path / "pkg" / "sub") not in outside.replace(
        f"<code>{tmp_path / 'pkg'}</code>", "")


def test_code_spans_in_messages_become_code():
    assert html.message("`.item()` copies <x> & `a<b`") == "<code>.item()</code> copies &lt;x&gt; &amp; <code>a&lt;b</code>"
    assert html.message("no spans ` here") == "no spans ` here"


def test_walk_visits_parents_before_children():
    leaf = TreeNode("c", "x", False, False)
    tree = (TreeNode("a", "", False, False, None, (TreeNode("b", "y", False, False, None, (leaf,)),)),
            TreeNode("d", "", False, False))
    assert [n.qualname for n in html.walk(tree)] == ["a", "b", "c", "d"]


def test_a_guard_is_shown_on_its_reasons_and_on_the_site_that_passes_it(analysis):
    guard = (("past_key_values", "is None"),)
    plan = analysis.plan
    name = "paddle_lm.block.DecoderBlock"
    verdict = plan.verdicts[name]
    reason = dataclasses.replace(plan.verdicts["paddle_lm.model.DecoderLM"].reasons[0], guard=guard)
    verdicts = {**plan.verdicts, name: dataclasses.replace(verdict, reasons=(reason,), guard=guard)}
    sites = tuple(dataclasses.replace(s, guard=guard) if s.wrapped_class == name else s for s in plan.sites)
    roots = tuple(_with_sites(root, {id(s): g for s, g in zip(plan.sites, sites)}) for root in plan.roots)
    text = render(HandMade(analysis.findings, plan=dataclasses.replace(plan, verdicts=verdicts, sites=sites, roots=roots), files=analysis.files))
    assert "kept out by the guard <code>past_key_values is None</code>" in text
    assert "in a LayerList, under the guard <code>past_key_values is None</code>" in text


def _with_sites(node: TreeNode, new: dict) -> TreeNode:
    site = new.get(id(node.site), node.site)
    return dataclasses.replace(node, site=site, children=tuple(_with_sites(c, new) for c in node.children))
