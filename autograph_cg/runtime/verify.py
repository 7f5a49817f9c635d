"""The probe before a capture, and the check of a new graph against it: exact or eager.

Before each capture the layer runs once eagerly on the static inputs (the *probe*): it finds which
outputs are differentiable, which inputs and parameters each output's gradient reaches, and it is
the eager run a new graph is held against. After the capture, with the RNG and buffers as they were
before the probe, the forward graph replays once and its outputs are compared with the probe's;
in training the backward graph replays once on random output gradients and its input and parameter
gradients are compared with an eager backward of the probe on the same gradients. A difference
beyond what eager differs from itself makes the layer eager, with the reason. Docs: docs/runtime.md,
"Exact or eager".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .ops import Ops
from .slots import Slot

# A graph replays the kernels eager ran, so it matches bitwise unless a kernel adds in a different
# order on each run (atomics, cuDNN's weight gradients). Past these relative differences (of a
# tensor's largest value) eager's own noise is measured; a graph may differ by four times that,
# but never by more than LOOSE: a forward that reads host state it changes (a call counter) makes
# two eager runs differ too, and by as much as the stale graph does.
TIGHT = {8: 1e-9, 4: 1e-5, 2: 1e-2}  # by the dtype's size in bytes
LOOSE = {8: 1e-6, 4: 1e-2, 2: 5e-2}
NOISE_MARGIN = 4.0
# Relative to at least this share of the largest value of the group (outputs, or gradients): a
# gradient that is zero in exact arithmetic holds rounding noise of its neighbours' size.
FLOOR = 1e-4


class Mismatch(Exception):
    """A new graph computed something other than eager did."""


@dataclass(eq=False)
class Probe:
    """What the probe found, and its outputs (with their autograd history in training)."""

    flat: list
    nondiff: tuple = ()
    diff_outputs: tuple = ()
    used_inputs: tuple = ()
    used_params: tuple = ()
    # Per differentiable output, which of the backward's leaves (used inputs, then used parameters)
    # its gradient reaches; None when every output reaches all of them.
    reach: tuple | None = None
    leaves: list = field(default_factory=list)  # the probe's leaves for those, in that order


def probe(
    ops: Ops, run_layer: Callable[[], list], static: list, params: list, train: bool, keep: bool
) -> Probe:
    """One eager run of the layer on the static inputs, on the caller's stream (a run on the capture
    stream would give that stream lasting library workspaces of its own); it also leaves nothing
    lazily initialised for the capture to meet. ``keep``: keep its autograd graph for the check."""
    flat = run_layer()
    kept = flat if keep else []
    if not train:
        return Probe(kept, tuple(range(len(flat))))
    diff = tuple(i for i, o in enumerate(flat) if ops.requires_grad(o))
    nondiff = tuple(i for i in range(len(flat)) if i not in diff)
    cand = [i for i, t in enumerate(static) if ops.requires_grad(t)]
    if not diff or not (cand or params):
        return Probe(kept, nondiff, diff)
    got: set[int] = set()  # which leaves received a gradient; each is dropped on arrival
    leaves = [static[i] for i in cand] + params
    outs = [flat[i] for i in diff]
    reach = ops.reach(outs, leaves) if len(diff) > 1 else None
    ops.backward_into(outs, [ops.zeros_like(o) for o in outs], leaves, lambda k, grad: got.add(k), retain=keep)
    used = sorted(got)
    used_inputs = tuple(cand[k] for k in used if k < len(cand))
    used_params = tuple(k - len(cand) for k in used if k >= len(cand))
    if reach is not None:
        position = {k: n for n, k in enumerate(used)}
        reach = tuple(frozenset(position[k] for k in r if k in position) for r in reach)
        if all(len(r) == len(used) for r in reach):
            reach = None
    return Probe(kept, nondiff, diff, used_inputs, used_params, reach, [leaves[k] for k in used] if keep else [])


def reached(reach: tuple | None, present: Sequence[bool]) -> frozenset | None:
    """The backward's leaves that the gradients of the ``present`` outputs reach; None for all."""
    if reach is None or all(present):
        return None
    return frozenset().union(*(r for r, p in zip(reach, present) if p))


def check(
    ops: Ops,
    slot: Slot,
    found: Probe,
    restore: Callable[[], None],
    rerun: Callable[[], list],
    bank_views: Callable[[], list],
    name_of: Callable[[int], str],
) -> None:
    """Replay the new graphs once and hold them against the probe; raises Mismatch. ``restore`` puts
    the RNG and buffers back as they were before the probe; ``rerun`` runs the layer eagerly again
    (for eager's own noise); ``bank_views`` are the parameter gradients the backward graph writes."""
    slot.fwd.replay()
    _judge(
        ops,
        ops.to_host([ops.gap(a, b) for a, b in zip(slot.fwd.outputs, found.flat)]),
        found.flat,
        lambda: _noise_of_runs(ops, found.flat, restore, rerun),
        lambda i: f"output {i}",
    )
    if slot.bwd is None:
        return
    outs = [found.flat[i] for i in found.diff_outputs]
    for buf, o in zip(slot.grad_outputs, outs):
        ops.copy_(buf, ops.randn_like(o))
    # Eager's gradients in the buffers' layouts (those the gradients arrive in): a backward's kernels add up
    # in another order on another layout.
    grads = list(map(ops.clone, slot.grad_outputs))
    slot.zeroed = [False] * len(grads)
    views = bank_views()
    if views:
        ops.foreach_zero_(views)
    slot.bwd.replay()  # adds into the zeroed views: they hold this backward's parameter gradients
    graph = list(slot.bwd.outputs) + views
    n = len(slot.used_inputs)
    diffs: dict[int, Any] = {}
    ops.backward_into(outs, grads, found.leaves, lambda k, g: diffs.__setitem__(k, ops.gap(graph[k], g)), True)
    _judge(
        ops,
        ops.to_host([diffs.get(k, (0.0, 0.0)) for k in range(len(graph))]),
        graph,
        lambda: _noise_of_backwards(ops, outs, grads, found.leaves, len(graph)),
        lambda k: f"the gradient of input {slot.used_inputs[k]}" if k < n else f"the gradient of {name_of(k - n)}",
    )
    for buf in slot.grad_outputs:
        ops.zero_(buf)
    slot.zeroed = [True] * len(grads)


def _judge(ops: Ops, rows: list, tensors: list, noise: Callable[[], list], label: Callable[[int], str]) -> None:
    """``rows``: (largest absolute difference, largest absolute value of eager's) per tensor."""
    rel = _relative(rows)
    sizes = [ops.itemsize(t) for t in tensors]
    if all(r <= TIGHT.get(size, 1e-5) for r, size in zip(rel, sizes)):
        return
    measured = _relative(noise())
    for i, (r, size, m) in enumerate(zip(rel, sizes, measured)):
        allowed = max(TIGHT.get(size, 1e-5), min(NOISE_MARGIN * m, LOOSE.get(size, 1e-2)))
        if not r <= allowed:
            raise Mismatch(f"{label(i)} differs from eager by {r:.1e} (eager differs from itself by {m:.1e})")


def _relative(rows: list) -> list[float]:
    """Each difference over its tensor's scale, floored; a NaN (on either side) is an infinite one."""
    floor = FLOOR * max((m for _, m in rows if m == m), default=0.0)
    return [math.inf if d != d or m != m else d / max(m, floor, 1e-30) if d else 0.0 for d, m in rows]


def _noise_of_runs(ops: Ops, first: list, restore: Callable[[], None], rerun: Callable[[], list]) -> list:
    restore()
    again = rerun()
    restore()
    return ops.to_host([ops.gap(a, b) for a, b in zip(again, first)])


def _noise_of_backwards(ops: Ops, outs: list, grads: list, leaves: list, n: int) -> list:
    """Two more eager backwards over the probe's graph: how much they differ from each other."""
    kept: dict[int, Any] = {}
    ops.backward_into(outs, grads, leaves, lambda k, g: kept.__setitem__(k, g), True)
    rows: dict[int, Any] = {}
    ops.backward_into(outs, grads, leaves, lambda k, g: rows.__setitem__(k, ops.gap(g, kept[k])), False)
    return ops.to_host([rows.get(k, (0.0, 0.0)) for k in range(n)])
