"""The probe before a capture, and the check of a new graph against it: exact or eager.

Before each capture the layer runs once eagerly on the static inputs (the *probe*): it finds which
outputs are differentiable, which inputs and parameters each output's gradient reaches, and it is
the eager run a new graph is held against. In training its backward runs on random output gradients
and leaves eager's parameter gradients, negated, in the gradient bank's views (input gradients are
kept aside), so the probe's activations are freed before the capture allocates the graph's own.
After the capture, with the RNG and buffers as they were before the probe, the forward graph replays
once and its outputs are compared with the probe's; in training the backward graph replays once on
the same output gradients and adds into the bank, which then holds the graph's difference from eager.
A difference beyond what eager differs from itself makes the layer eager, with the reason. Docs:
docs/runtime.md, "Exact or eager".
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
NOISE_SAMPLES = 3
# Relative to at least this share of the largest value of the group (outputs, or gradients): a
# gradient that is zero in exact arithmetic holds rounding noise of its neighbours' size.
FLOOR = 1e-4


class Mismatch(Exception):
    """A new graph computed something other than eager did."""


@dataclass(eq=False)
class Probe:
    """What the probe found, and (checked) its outputs and what the check holds the new graph against."""

    flat: list
    nondiff: tuple = ()
    diff_outputs: tuple = ()
    used_inputs: tuple = ()
    used_params: tuple = ()
    # Per differentiable output, which of the backward's leaves (used inputs, then used parameters)
    # its gradient reaches; None when every output reaches all of them.
    reach: tuple | None = None
    # Kept for the check: the probe's leaves (used inputs, then used parameters), the output
    # gradients its backward ran on, eager's input gradients, and the largest value of each
    # parameter gradient (on the device) that it left negated in the bank.
    leaves: list = field(default_factory=list)
    grad_outputs: list = field(default_factory=list)
    input_grads: list = field(default_factory=list)
    param_scales: list = field(default_factory=list)


def probe(
    ops: Ops,
    run_layer: Callable[[], list],
    static: list,
    params: list,
    train: bool,
    bank_views: list | None,
    layouts: dict,
) -> Probe:
    """One eager run of the layer on the static inputs, on the caller's stream (a run on the capture
    stream would give that stream lasting library workspaces of its own); it also leaves nothing
    lazily initialised for the capture to meet. ``bank_views``: the gradient bank's views (one per
    parameter) when the new graph is to be checked, None otherwise; ``layouts``: per output, the
    memory layout its gradients arrive in, where it is not the output's."""
    flat = run_layer()
    check = bank_views is not None
    kept = flat if check else []
    if not train:
        return Probe(kept, tuple(range(len(flat))))
    diff = tuple(i for i, o in enumerate(flat) if ops.requires_grad(o))
    nondiff = tuple(i for i in range(len(flat)) if i not in diff)
    cand = [i for i, t in enumerate(static) if ops.requires_grad(t)]
    if not diff or not (cand or params):
        return Probe(kept, nondiff, diff)
    leaves = [static[i] for i in cand] + params
    outs = [flat[i] for i in diff]
    reach = ops.reach(outs, leaves) if len(diff) > 1 else None
    grads = [ops.zeros_in_layout(o, layouts.get(i)) for i, o in zip(diff, outs)]
    if check:  # random, in the layout the backward graph will read them in
        for g, o in zip(grads, outs):
            ops.copy_(g, ops.randn_like(o))
    got: dict[int, Any] = {}  # leaf -> eager's input gradient (None for parameters: in the bank)

    def take(k: int, grad: Any) -> None:
        got[k] = grad if check and k < len(cand) else None
        if check and k >= len(cand):
            ops.copy_(bank_views[k - len(cand)], grad)  # type: ignore[index]

    ops.backward_into(outs, grads, leaves, take, retain=False)  # frees the probe's activations
    used = sorted(got)
    used_inputs = tuple(cand[k] for k in used if k < len(cand))
    used_params = tuple(k - len(cand) for k in used if k >= len(cand))
    if reach is not None:
        position = {k: n for n, k in enumerate(used)}
        reach = tuple(frozenset(position[k] for k in r if k in position) for r in reach)
        if all(len(r) == len(used) for r in reach):
            reach = None
    found = Probe(kept, nondiff, diff, used_inputs, used_params, reach)
    if check:
        found.leaves = [leaves[k] for k in used]
        found.grad_outputs = grads
        found.input_grads = [got[k] for k in used if k < len(cand)]
        mine = [bank_views[j] for j in used_params]  # type: ignore[index]
        if mine:
            ops.foreach_neg_(mine)
            found.param_scales = ops.abs_maxima(mine)
    return found


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
    (for eager's own noise); ``bank_views`` are the parameter gradients the backward graph adds into,
    holding eager's negated."""
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
    for buf, g in zip(slot.grad_outputs, found.grad_outputs):
        ops.copy_(buf, g)
    slot.zeroed = [False] * len(slot.grad_outputs)
    views = bank_views()
    slot.bwd.replay()  # adds into the views, which then hold the graph's gradients less eager's
    graph = list(slot.bwd.outputs) + views
    rows = [ops.gap(a, b) for a, b in zip(slot.bwd.outputs, found.input_grads)]
    rows.extend(zip(ops.abs_maxima(views), found.param_scales))
    n = len(slot.used_inputs)
    _judge(
        ops,
        ops.to_host(rows),
        graph,
        lambda: _noise_of_backwards(ops, found, restore, rerun, len(graph)),
        lambda k: f"the gradient of input {slot.used_inputs[k]}" if k < n else f"the gradient of {name_of(k - n)}",
    )
    for buf in slot.grad_outputs:
        ops.zero_(buf)
    slot.zeroed = [True] * len(slot.grad_outputs)


def _judge(ops: Ops, rows: list, tensors: list, noise: Callable[[], list], label: Callable[[int], str]) -> None:
    """``rows``: (largest absolute difference, largest absolute value of eager's) per tensor. Eager's
    noise is sampled again (up to NOISE_SAMPLES times, the largest kept per tensor) while a tensor is
    past what the samples allow but within LOOSE: one sample of a kernel's run-to-run noise can be
    several times smaller than the next, and a graph differs from eager by one more such sample."""
    rel = _relative(rows)
    sizes = [ops.itemsize(t) for t in tensors]
    if all(r <= TIGHT.get(size, 1e-5) for r, size in zip(rel, sizes)):
        return
    measured = [0.0] * len(rel)
    for _ in range(NOISE_SAMPLES):
        measured = [max(a, b) for a, b in zip(measured, _relative(noise()))]
        beyond = [i for i, (r, size, m) in enumerate(zip(rel, sizes, measured)) if not r <= _allowed(size, m)]
        if not beyond:
            return
        if any(not rel[i] <= LOOSE.get(sizes[i], 1e-2) for i in beyond):
            break
    i = beyond[0]
    raise Mismatch(f"{label(i)} differs from eager by {rel[i]:.1e} (eager differs from itself by {measured[i]:.1e})")


def _allowed(size: int, noise: float) -> float:
    return max(TIGHT.get(size, 1e-5), min(NOISE_MARGIN * noise, LOOSE.get(size, 1e-2)))


def _relative(rows: list) -> list[float]:
    """Each difference over its tensor's scale, floored; a NaN (on either side) is an infinite one."""
    floor = FLOOR * max((m for _, m in rows if m == m), default=0.0)
    return [math.inf if d != d or m != m else d / max(m, floor, 1e-30) if d else 0.0 for d, m in rows]


def _noise_of_runs(ops: Ops, first: list, restore: Callable[[], None], rerun: Callable[[], list]) -> list:
    restore()
    again = rerun()
    restore()
    return ops.to_host([ops.gap(a, b) for a, b in zip(again, first)])


def _noise_of_backwards(ops: Ops, found: Probe, restore: Callable[[], None], rerun: Callable[[], list], n: int) -> list:
    """The layer run eagerly again and differentiated twice on the probe's output gradients: how much
    the two backwards differ from each other. (Only past the tight bound: this holds the activations
    of an eager run beside the graph's.)"""
    restore()
    flat = rerun()
    restore()
    outs = [flat[i] for i in found.diff_outputs]
    kept: dict[int, Any] = {}
    ops.backward_into(outs, found.grad_outputs, found.leaves, lambda k, g: kept.__setitem__(k, g), True)
    rows: dict[int, Any] = {}
    ops.backward_into(outs, found.grad_outputs, found.leaves, lambda k, g: rows.__setitem__(k, ops.gap(g, kept[k])), False)
    return ops.to_host([rows.get(k, (0.0, 0.0)) for k in range(n)])
