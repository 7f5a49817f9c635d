"""The plan: which instantiation sites get wrapped in `CUDAGraphedLayer` (the largest eligible layers, never nested)."""

from __future__ import annotations

from dataclasses import dataclass, field

from autograph_cg.analysis.verdicts import Verdict
from autograph_cg.findings import Span


@dataclass(frozen=True, slots=True)
class WrapSite:
    """One constructor call to wrap: `span` covers exactly the call expression, e.g. `MLP(cfg)`."""

    path: str
    span: Span
    wrapped_class: str  # qualified name of the class constructed
    owner: str  # qualified name of the class whose __init__ holds the call; "" outside classes
    target: str  # what receives the layer, as written: "self.mlp", "self.blocks[*]", "model"
    container: str = ""  # "" or the container it sits in: "LayerList", "Sequential", "list", ...
    existing: bool = False  # already `CUDAGraphedLayer(...)` in the source: nothing to do


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One layer in the instantiation tree, for `plan` output and reports."""

    qualname: str
    target: str  # attribute path from the parent, "" for a root
    wrapped: bool  # this node is captured as one graph (at `site`)
    in_graph: bool  # inside a graph wrapped higher up
    site: WrapSite | None = None
    children: tuple["TreeNode", ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Plan:
    sites: tuple[WrapSite, ...]
    verdicts: dict[str, Verdict]
    roots: tuple[TreeNode, ...]
    notes: tuple[str, ...] = ()  # e.g. eligible roots the user can wrap where they build them
