"""Parameter gradients of graphed layers: a flat buffer the runtime owns, whose views are ``param.grad``."""

from __future__ import annotations

import math
from functools import partial
from operator import is_
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from .ops import Ops


_ADD: tuple = ([], [])  # accumulating into the bank's own grads: nothing to zero or adopt
_is_none = partial(is_, None)


class GradBank:
    """Flat gradient storage the runtime owns. Its views become ``param.grad`` and every backward
    graph accumulates into them, so replays add no launch per parameter; grads that the user set to
    None are re-adopted, grads that someone else allocated get one grouped add."""

    def __init__(self, ops: Ops, params: list) -> None:
        self.ops, self.params = ops, params
        self.flats, self.views = ops.flat_views(params)
        self.sizes = [math.prod(ops.meta(v)[0]) for v in self.views]
        # A backward graph stores parameter grads a group at a time: at most about this many
        # elements of them exist at once beside the bank.
        self.group_size = max(sum(self.sizes) // 8, 1)

    def prepare(self, used: tuple, targets: list) -> tuple[list, list] | None:
        """Get the views ready for the next backward graph of the parameters ``used`` (their indices;
        ``targets`` the parameters): returns (cleared, foreign), whose regions are zeroed for the
        adding graph (one memset per flat buffer when every grad was cleared, the usual step: cheaper
        than a second, writing backward graph whose buffers would live as long as the layer). None
        when a region can't be reused. (No lasting reference to a view is kept here: held_elsewhere
        counts them.)"""
        ops, views = self.ops, self.views
        grads = list(map(ops.grad_of, targets))
        if all(map(ops.is_same, grads, [views[j] for j in used])):  # accumulating into the bank's grads
            return _ADD
        if all(map(_is_none, grads)):  # all cleared (zero_grad(set_to_none=True)): the usual step
            none, foreign = list(used), []
        else:
            none = [j for g, j in zip(grads, used) if g is None]
            foreign = [j for g, j in zip(grads, used) if g is not None and not ops.is_same(g, views[j])]
        if none and ops.held_elsewhere(self.flats, views, none):
            return None
        fresh = none + foreign
        if len(fresh) == len(views):
            for flat in self.flats:
                ops.zero_(flat)
        elif fresh:
            ops.foreach_zero_([views[j] for j in fresh])
        return none, foreign

    def finish(self, plan: tuple[list, list], skip: Sequence[int] = ()) -> None:
        """After the backward graph: adopt the views of grads that were None, add into foreign grads;
        ``skip``: parameters this backward did not reach, which eager leaves as they were."""
        ops, params, views = self.ops, self.params, self.views
        none, foreign = plan
        if skip:
            skipped = set(skip)
            none = [j for j in none if j not in skipped]
            foreign = [j for j in foreign if j not in skipped]
        if none:
            ops.set_grads([params[j] for j in none], [views[j] for j in none])
        if foreign:
            ops.foreach_add_([ops.grad_of(params[j]) for j in foreign], [views[j] for j in foreign])


def accumulate_eagerly(ops: Ops, params: list, grads: list) -> None:
    """What AccumulateGrad does, grouped: adopt fresh grads where none exist, add the rest at once."""
    adopt, dsts, srcs = [], [], []
    for p, g in zip(params, grads):
        if g is None:
            continue
        current = ops.grad_of(p)
        if current is None:
            adopt.append((p, g))
        else:
            dsts.append(current)
            srcs.append(g)
    if adopt:
        ops.set_grads(*map(list, zip(*adopt)))
    if dsts:
        ops.foreach_add_(dsts, srcs)
