"""One validation pass: wrap some layers of a model in memory, run inference and SGD training, keep what came out.

Wrapping happens on live objects (no source is rewritten): the chosen layers are wrapped in place by
`CUDAGraphedLayer`. A class's pass wraps the top-most layers of the class, so a graph never holds another; the
plan's pass wraps every layer a site of the plan builds, nested ones too, each with the site's guard, as the
rewritten source would.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from autograph_cg.analysis.plan import Plan
from autograph_cg.analysis.verdicts import Guard
from autograph_cg.findings import Span
from autograph_cg.runtime import CUDAGraphedLayer, stats_of
from autograph_cg.runtime import unwrap as runtime_unwrap
from autograph_cg.validate.births import Births, inside, real
from autograph_cg.validate.frameworks import Framework
from autograph_cg.validate.target import Subject

# A layer with the chain of (layer, attribute name) that leads to it from the root: ((root, ""), (blocks, "blocks"), (block, "0")).
Path = tuple[tuple[Any, str], ...]
# What a picker says of a layer: None (left alone), or the guard its wrapper gets (() for none).
Picker = Callable[[Path], "Guard | None"]
FRAMEWORK_PACKAGES = ("torch", "paddle", "autograph_cg")


def qualname(cls: type) -> str:
    """The name the analyzer gives a class: its module's dotted name and the class name."""
    return f"{cls.__module__}.{cls.__qualname__}"


def layers(fw: Framework, model: Any) -> list[Path]:
    """Every layer under `model` (the root included), depth first, each path once."""
    out: list[Path] = []

    def visit(path: Path) -> None:
        out.append(path)
        for name, child in fw.children(path[-1][0]):
            visit((*path, (child, name)))

    visit(((model, ""),))
    return out


def unwrap(fw: Framework, model: Any) -> Any:
    """Take out wrapping already in the model (rewritten code), so every pass starts from eager layers."""
    for path in layers(fw, model):
        if isinstance(path[-1][0], CUDAGraphedLayer):
            runtime_unwrap(path[-1][0])
    return model


def wrap_where(
    fw: Framework, model: Any, pick: Picker, wrap: Callable[[Any, str, Guard], Any], nested: bool = False
) -> tuple[Any, list[Any]]:
    """Wrap the top-most layers `pick` selects (with `nested`, those under them too, innermost first); returns
    what to call in place of the model, and the wrapped layers. A layer held in two places is wrapped once."""
    made: dict[int, Any] = {}

    def visit(path: Path) -> Any:
        module = path[-1][0]
        guard = pick(path)
        if guard is not None and id(module) in made:
            return made[id(module)]
        if guard is None or nested:
            for name, child in fw.children(module):
                new = visit((*path, (child, name)))
                if new is not child:
                    setattr(module, name, new)
        if guard is not None:
            made[id(module)] = wrap(module, ".".join(name for _, name in path[1:]) or "model", guard)
            return made[id(module)]
        return module

    return visit(((model, ""),)), list(made.values())


def graphed_share(fw: Framework, model: Any) -> tuple[int, int]:
    """(layers that run inside a graph, all layers), each layer counted once."""
    inside: dict[int, bool] = {}

    def visit(module: Any, in_graph: bool) -> None:
        in_graph = in_graph or isinstance(module, CUDAGraphedLayer)
        inside[id(module)] = inside.get(id(module), False) or in_graph
        for _, child in fw.children(module):
            visit(child, in_graph)

    visit(model, False)
    return sum(inside.values()), len(inside)


def _same_class(site_class: str, cls: type, package_classes: set[str]) -> bool:
    """A package class by its exact name; a framework class (`torch.nn.Sequential`) by framework and short name."""
    name = qualname(cls)
    if site_class == name:
        return True
    if site_class in package_classes:
        return False
    return site_class.rsplit(".", 1)[-1] == cls.__name__ and site_class.split(".")[0] == name.split(".")[0]


def plan_picker(plan: Plan, births: Births | None = None) -> Picker:
    """Select the layers that `rewrite` would wrap, with the guard it would pass. With `births` of the build, a
    layer is selected when a site's call was running as it was made and the site builds its class (in
    `__init__`, a builder function or through a factory alike). Besides, a site in `Owner.__init__` (`self.x =
    C(...)`, `self.xs = List([C(...) ...])`) matches a C held there by an instance of Owner or a subclass; a site
    outside `__init__` matches a C of the package made where no record tells (a deep copy) not already inside a
    graph; such a site of a framework class (`return nn.Sequential(...)`) is then left out."""
    package_classes = set(plan.verdicts)
    owned: dict[tuple[str, str, bool], list[tuple[str, Guard]]] = {}
    loose: dict[str, Guard] = {}
    spans: dict[str, list[tuple[Span, tuple[str, ...], Guard]]] = {}
    for site in plan.sites:
        spans.setdefault(real(site.path), []).append((site.span, tuple(site.wrapped_class.split(" | ")), site.guard))
        if site.owner and site.target.startswith("self."):
            attr = site.target[len("self.") :]
            item = attr.endswith("[*]")
            owned.setdefault((site.owner, attr.removesuffix("[*]"), item), []).append((site.wrapped_class, site.guard))
        elif not site.owner and site.wrapped_class in package_classes:
            loose.setdefault(site.wrapped_class, site.guard)

    def held_by(owner: Any, attr: str, item: bool, cls: type) -> Guard | None:
        for base in type(owner).__mro__:
            for site_class, guard in owned.get((qualname(base), attr, item), ()):
                if _same_class(site_class, cls, package_classes):
                    return guard
        return None

    def made_at_site(layer: Any) -> Guard | bool | None:
        """The guard of the site that made `layer`; False when the records tell no site did, None when there are none."""
        positions = births.of(layer) if births is not None else None
        if positions is None:
            return None
        cls = type(layer)
        for position in positions:
            for span, classes, guard in spans.get(real(position[0]), ()):
                if inside(span, position) and any(_same_class(c, cls, package_classes) for c in classes):
                    return guard
        return False

    def pick(path: Path) -> Guard | None:
        cls = type(path[-1][0])
        found = held_by(path[-2][0], path[-1][1], False, cls) if len(path) >= 2 else None
        if found is None and len(path) >= 3:
            found = held_by(path[-3][0], path[-2][1], True, cls)
        if found is not None:
            return found
        made = made_at_site(path[-1][0])
        if made is None:
            return loose.get(qualname(cls))
        return None if made is False else made

    return pick


def class_picker(name: str) -> Picker:
    """Select every layer whose class is exactly `name` (not its subclasses), without a guard."""
    return lambda path: () if qualname(type(path[-1][0])) == name else None


@dataclass
class Trace:
    """What one pass produced: per inference call and per training step, the outputs as arrays (a
    training step's loss first), and per training step the gradient of every trainable parameter and
    (in a run that others follow) the parameters after the optimizer step."""

    outputs: list[list[np.ndarray]] = field(default_factory=list)
    grads: list[list[np.ndarray | None]] = field(default_factory=list)
    params: list[list[np.ndarray]] = field(default_factory=list)
    error: str | None = None


def tensors_in(fw: Framework, obj: Any) -> list[Any]:
    """The tensors of a model's output, in order, through tuples, lists and dicts."""
    if fw.is_tensor(obj):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in tensors_in(fw, item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in tensors_in(fw, item)]
    return []


def loss_of(fw: Framework, subject: Subject, outs: Any) -> Any:
    """The factory's loss of a training step's outputs, or validate's default over them."""
    if subject.loss_fn is None:
        return fw.default_loss(tensors_in(fw, outs))
    return subject.loss_fn(subject.model, outs, *subject.inputs)


def run(fw: Framework, subject: Subject, call: Any, steps: int, seed: int, lr: float, follow: Trace | None = None) -> Trace:
    """`steps` inference calls in eval mode, then `steps` SGD steps in train mode, each phase from `seed`.

    With `follow`, the parameters are set to the followed run's after each optimizer step (in place, as
    an optimizer writes them), so every step starts from the same parameters in both runs: a step's
    difference is then that step's own, not rounding (a summation order, a strided copy) that SGD
    compounds over the steps before it."""
    trace = Trace()
    params = fw.trainable(subject.model)
    try:
        call.eval()
        fw.seed(seed)
        with fw.no_grad():
            for _ in range(steps):
                trace.outputs.append([fw.numpy(t) for t in tensors_in(fw, call(*subject.inputs))])
        call.train()
        fw.seed(seed + 1)
        opt = fw.optimizer(params, lr)
        for _ in range(steps):
            opt.zero_grad()
            outs = call(*subject.inputs)
            tensors = tensors_in(fw, outs)
            loss = loss_of(fw, subject, outs)
            loss.backward()
            trace.outputs.append([fw.numpy(t) for t in [loss, *tensors]])
            trace.grads.append([None if fw.grad(p) is None else fw.numpy(fw.grad(p)) for p in params])
            opt.step()
            if follow is None:
                trace.params.append([fw.numpy(p) for p in params])
            else:
                for p, value in zip(params, follow.params[len(trace.grads) - 1]):
                    fw.assign(p, value)
    except Exception as exc:  # the model's own code: any error ends the pass and is reported
        text = str(exc).strip().splitlines()
        trace.error = f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
    return trace


# A tensor is compared relative to its own largest value, but never to less than this share of the
# largest value of its step: gradients that are zero in exact arithmetic (a bias feeding a LayerNorm)
# hold rounding noise, which differs between any two summation orders.
NOISE_FLOOR = 1e-4
# How many times eager's own run-to-run difference a wrapped run may differ by: the largest difference of two
# samples of the same rounding noise varies from sample to sample.
NOISE_MARGIN = 4.0


@dataclass(frozen=True)
class Diff:
    """Largest relative difference (max |got - want| / max |want|) of outputs and losses, and of gradients."""

    outputs: float
    grads: float
    bitwise: bool

    def within(self, tolerance: float, noise: "Diff | None" = None) -> bool:
        """Within `tolerance`, or within NOISE_MARGIN times what eager differs from itself (`noise`: kernels that
        add in a different order on every run, such as cuDNN's weight gradients, make any two runs differ)."""
        return self.outputs <= _allowed(tolerance, noise.outputs if noise else 0.0) and self.grads <= _allowed(
            tolerance, noise.grads if noise else 0.0
        )


def _allowed(tolerance: float, noise: float) -> float:
    return max(tolerance, NOISE_MARGIN * noise) if math.isfinite(noise) else tolerance


def _magnitude(x: np.ndarray | None) -> float:
    if x is None or x.dtype.kind not in "biufc":
        return 0.0
    values = np.abs(np.atleast_1d(x).astype(np.float64))
    return float(values[np.isfinite(values)].max(initial=0.0))


def _relative(got: np.ndarray | None, want: np.ndarray | None, floor: float) -> tuple[float, bool]:
    if got is None or want is None:
        return (0.0, True) if got is None and want is None else (float("inf"), False)
    if got.shape != want.shape:
        return float("inf"), False
    if np.array_equal(got, want, equal_nan=got.dtype.kind in "fc"):
        return 0.0, True
    a, b = np.atleast_1d(got).astype(np.float64), np.atleast_1d(want).astype(np.float64)
    delta = np.abs(a - b)
    delta[np.isnan(a) & np.isnan(b)] = 0.0
    if np.isnan(delta).any():
        return float("inf"), False
    return float(delta.max(initial=0.0)) / max(_magnitude(want), floor, 1e-30), False


def compare(got: Trace, want: Trace) -> Diff:
    """A pass that stopped early or produced other structures differs infinitely."""
    worst = {"outputs": 0.0, "grads": 0.0}
    bitwise = True
    for kind in worst:
        mine, ref = getattr(got, kind), getattr(want, kind)
        if len(mine) != len(ref) or any(len(m) != len(r) for m, r in zip(mine, ref)):
            worst[kind], bitwise = float("inf"), False
            continue
        for m, r in zip(mine, ref):
            floor = NOISE_FLOOR * max(map(_magnitude, r), default=0.0)
            for a, b in zip(m, r):
                rel, same = _relative(a, b, floor)
                worst[kind] = max(worst[kind], rel)
                bitwise = bitwise and same
    return Diff(worst["outputs"], worst["grads"], bitwise)


def dropin_differences(before: dict[str, list], after: dict[str, list]) -> tuple[str, ...]:
    """What wrapping changed of the names code finds a model by (`Framework.names`), one line each."""
    out = []
    for what, old in before.items():
        new = after.get(what, [])
        if new != old:
            gone = [x for x in old if x not in new][:2]
            added = [x for x in new if x not in old][:2]
            out.append(f"{what} changed (was {_few(gone)}, now {_few(added)})")
    return tuple(out)


def _few(items: list) -> str:
    return ", ".join(map(str, items)) or "in another order"


def presence_differences(fw: Framework, model: Any, got: Trace, want: Trace) -> tuple[str, ...]:
    """Parameters that have a gradient in one run and none in the other, at the first step they do."""
    names = {id(p): n for n, p in model.named_parameters()}
    params = fw.trainable(model)
    for step, (mine, ref) in enumerate(zip(got.grads, want.grads)):
        odd = [
            f"{names.get(id(p), '?')} has {'a gradient' if r is not None else 'none'} eagerly, "
            f"{'one' if m is not None else 'none'} wrapped"
            for p, m, r in zip(params, mine, ref)
            if (m is None) != (r is None)
        ]
        if odd:
            return (f"gradient presence at training step {step + 1}: " + "; ".join(odd[:3]),)
    return ()


@dataclass(frozen=True)
class RunStats:
    """The runtime's counters (`stats_of(layer)`: captures, replays, eager calls, ...) summed over the
    wrapped layers of one pass, with the reasons they went eager."""

    wrapped: int = 0
    counts: dict[str, float] = field(default_factory=dict)
    disabled: tuple[str, ...] = ()  # distinct reasons a wrapper went eager for good
    fallbacks: dict[str, int] = field(default_factory=dict)  # eager calls per reason

    def __getitem__(self, counter: str) -> float:
        return self.counts.get(counter, 0)

    @property
    def calls(self) -> float:
        return self["warmup_calls"] + self["eager_calls"] + self["forward_replays"] + self["fused_calls"]

    def as_dict(self) -> dict[str, Any]:
        return {"wrapped": self.wrapped, **self.counts, "disabled": list(self.disabled), "fallbacks": dict(self.fallbacks)}


def run_stats(wrappers: list[Any]) -> RunStats:
    counts: Counter = Counter()
    disabled: dict[str, None] = {}
    fallbacks: Counter = Counter()
    for wrapper in wrappers:
        stats = stats_of(wrapper)
        counts.update({k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        if stats["disabled_reason"]:
            disabled[stats["disabled_reason"]] = None
        fallbacks.update(stats["fallbacks"])
    return RunStats(len(wrappers), dict(counts), tuple(disabled), dict(fallbacks))
