"""What the analyzer decides on the model libraries most users bring, and whether the default plan wraps their blocks.

    python bench/reach.py [--only transformers timm ...] [--json FILE] [--corpus DIR]

Per distribution (each analyzed alone, from its own package folder, as `autograph-cg plan PKG --no-cache` does):
layer classes with a forward, how many are unknown (the share the issue's goal bounds), eligible, conditional (and
of those guarded), ineligible; plan sites (and of those guarded). Then, for the layers named in `BLOCKS` (the
decoder layers and encoder layers of the architectures most trained), the verdict, the guard, and whether the
default plan wraps it: `wrapped` (a site builds it), `in graph` (inside a wrapped parent), or `no`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from corpus import DISTRIBUTIONS, WIDE_DISTRIBUTIONS, fetch_one

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograph_cg.analysis.plan import Plan, TreeNode  # noqa: E402
from autograph_cg.analysis.verdicts import Status, render_guard  # noqa: E402
from autograph_cg.api import Options, analyze  # noqa: E402

DEFAULT = ("transformers", "timm", "torchvision", "paddlenlp")
#: The blocks the default plan should wrap (issue 22's list), by distribution.
BLOCKS: dict[str, tuple[str, ...]] = {
    "transformers": tuple(
        f"transformers.models.{m}"
        for m in (
            "llama.modeling_llama.LlamaDecoderLayer", "mistral.modeling_mistral.MistralDecoderLayer",
            "qwen2.modeling_qwen2.Qwen2DecoderLayer", "gemma.modeling_gemma.GemmaDecoderLayer",
            "phi.modeling_phi.PhiDecoderLayer", "gpt_neox.modeling_gpt_neox.GPTNeoXLayer",
            "gpt2.modeling_gpt2.GPT2Block", "bert.modeling_bert.BertLayer", "roberta.modeling_roberta.RobertaLayer",
            "vit.modeling_vit.ViTLayer", "clip.modeling_clip.CLIPEncoderLayer",
        )
    ),
    "paddlenlp": tuple(
        f"paddlenlp.transformers.{m}"
        for m in (
            "llama.modeling.LlamaDecoderLayer", "gpt.modeling.GPTDecoderLayer", "qwen.modeling.QWenBlock",
        )
    ),
}  # fmt: skip


def _package(name: str, corpus: Path | None) -> Path:
    versions = dict(DISTRIBUTIONS + WIDE_DISTRIBUTIONS)
    root = fetch_one(name, versions[name], corpus)
    wanted = name.replace("-", "_")
    return root.path / (wanted if wanted in root.top_level else max(root.top_level, key=lambda t: len(list((root.path / t).rglob("*.py")))))


def _placed(plan: Plan) -> dict[str, str]:
    """Per class, the best the plan does with it anywhere: wrapped at a site, inside a graph, or nothing."""
    found: dict[str, str] = {}
    order = {"no": 0, "in graph": 1, "wrapped": 2}

    def visit(node: TreeNode) -> None:
        place = "wrapped" if node.wrapped else "in graph" if node.in_graph else "no"
        if order[place] > order[found.get(node.qualname, "no")]:
            found[node.qualname] = place
        for child in node.children:
            visit(child)

    for root in plan.roots:
        visit(root)
    return found


def measure(name: str, path: Path) -> dict:
    start = time.perf_counter()
    analysis = analyze([str(path)], Options(use_cache=False))
    seconds = time.perf_counter() - start
    plan = analysis.plan
    assert plan is not None
    with_forward = [v for v in plan.verdicts.values() if not any(r.message == "no forward method found" for r in v.reasons)]
    counts = Counter(v.status.value for v in with_forward)
    placed = _placed(plan)
    blocks = []
    for qual in BLOCKS.get(name, ()):
        verdict = plan.verdicts.get(qual)
        blocks.append({
            "class": qual,
            "verdict": verdict.status.value if verdict else "absent",
            "guard": render_guard(verdict.guard) if verdict and verdict.guard else "",
            "plan": placed.get(qual, "no"),
            "reason": verdict.reasons[0].render() if verdict and verdict.reasons and verdict.status in (Status.INELIGIBLE, Status.UNKNOWN) else "",
        })  # fmt: skip
    return {
        "distribution": name,
        "seconds": round(seconds, 1),
        "classes": len(with_forward),
        "verdicts": dict(counts),
        "unknown_percent": round(100 * counts["unknown"] / max(1, len(with_forward)), 2),
        "guarded": sum(1 for v in with_forward if v.guard),
        "sites": len(plan.sites),
        "guarded_sites": sum(1 for s in plan.sites if s.guard),
        "internal_errors": sum(1 for e in analysis.errors if e.internal),
        "blocks": blocks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=list(DEFAULT), help=f"distributions (default: {' '.join(DEFAULT)})")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--corpus", type=Path, default=None, help="corpus cache (default: see bench/corpus.py)")
    args = parser.parse_args(argv)
    results = []
    for name in args.only:
        result = measure(name, _package(name, args.corpus))
        results.append(result)
        v = result["verdicts"]
        print(
            f"{name:14s} {result['classes']:6d} classes with a forward: unknown {v.get('unknown', 0)} ({result['unknown_percent']:.1f} %), "
            f"eligible {v.get('eligible', 0)}, conditional {v.get('conditional', 0)} (guarded {result['guarded']}), "
            f"ineligible {v.get('ineligible', 0)}; plan {result['sites']} sites ({result['guarded_sites']} guarded); "
            f"internal errors {result['internal_errors']}; {result['seconds']} s"
        )
        for block in result["blocks"]:
            guard = f"  guard: {block['guard']}" if block["guard"] else ""
            print(f"    {block['plan']:8s} {block['verdict']:11s} {block['class']}{guard}")
            if block["reason"]:
                print(f"             {block['reason'][:200]}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
