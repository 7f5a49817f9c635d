"""Runs of wrapped layers that always follow each other, captured and replayed as one graph.

A wrapped layer notes which wrapped call follows it: a call whose tensor arguments are the outputs
it handed out (the very objects) or arguments of the run's first call. Once the same successor has
followed a warmup or replayed call ``STABLE`` times in a row, the first layer of the run (the head)
captures the whole run as one graph and replays it at once (a run stable through the warmup is
captured as the run from the start: its members hold no graphs of their own, and no memory for them); the layers after it find their outputs ready
and hand them out, after checking that they were called with exactly what the run expected. Any
other call ends the run: the layer runs as it would alone, and the head stops fusing after
``MAX_BREAKS`` such ends. Docs: docs/runtime.md, "Runs of wrapped layers".
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import replace
from typing import Any, Callable, ClassVar, NamedTuple

from .slots import Entry
from .tree import unflatten

# core's Runner: named in annotations only (core imports this module, not the other way round).
Runner = Any

STABLE = 2  # replayed calls in a row with the same successor before a run is fused
MAX_BREAKS = 2  # runs of one head that ended early before that head stops fusing
OUT, ARG = 0, 1  # where a member's tensor argument comes from: the previous output, the run's arguments
MISS = object()


class Member(NamedTuple):
    """One layer of a run: its runner, its key's entry, and where its tensor arguments come from."""

    runner: Runner
    entry: Entry
    mapping: tuple  # per tensor argument: (OUT, index into the previous member's outputs) or (ARG, index)


class Call:
    """A replayed call as the next call sees it, all weakly (a layer deleted afterwards, and its
    graphs, must not live on here): the layer and key, what it handed out, the run's arguments."""

    __slots__ = ("runner", "entry", "outs", "run_args")

    def __init__(self, runner: Runner, entry: Entry, outs: list, run_args: list) -> None:
        self.runner, self.entry = weakref.ref(runner), weakref.ref(entry)
        self.outs, self.run_args = [weakref.ref(t) for t in outs], run_args


class Link(NamedTuple):
    """How a call follows the previous one: that call's layer and key, and where each tensor
    argument comes from."""

    runner: Runner
    entry: Entry
    mapping: tuple
    run_args: list


class Edge:
    """The call that followed a layer's replays with one key, and how many times in a row."""

    __slots__ = ("target", "count")

    def __init__(self, target: Member) -> None:
        self.target, self.count = target, 1


class _Track(threading.local):
    last: Call | None = None  # the previous replayed call of this thread
    pending: "Pending | None" = None  # the outputs of a fused run not handed out yet


TRACK = _Track()


def link(tensors: list) -> Link | None:
    """How ``tensors`` come from the previous call of this thread, or None unless at least one is
    one of its outputs and each of the others an output or an argument of the run."""
    last = TRACK.last
    if last is None:
        return None
    runner, entry = last.runner(), last.entry()
    if runner is None or entry is None:
        return None
    outs = [r() for r in last.outs]
    args = [r() for r in last.run_args]
    mapping, chained = [], False
    for t in tensors:
        source = _index(outs, t)
        if source is not None:
            mapping.append((OUT, source))
            chained = True
            continue
        source = _index(args, t)
        if source is None:
            return None
        mapping.append((ARG, source))
    return Link(runner, entry, tuple(mapping), last.run_args) if chained else None


def _index(items: list, t: Any) -> int | None:
    for i, item in enumerate(items):
        if item is t:
            return i
    return None


def note(runner: Runner, entry: Entry, tensors: list, outs: list, came: Link | None) -> None:
    """After a replayed (or warmup) call: learn the edge from the previous call and become the previous call."""
    if came is not None:
        target = Member(runner, entry, came.mapping)
        edge = came.runner.edges.get(came.entry)
        if edge is not None and edge.target == target:
            edge.count += 1
        else:
            came.runner.edges[came.entry] = Edge(target)
        run_args = came.run_args
    else:
        run_args = [weakref.ref(t) for t in tensors]
    TRACK.last = Call(runner, entry, outs, run_args)


def fusable(runner: Runner, entry: Entry) -> bool:
    """A layer's key may be part of a run once it has warmed up on a device where graphs go."""
    return (
        runner.fuse
        and not runner.stats.disabled_reason
        and entry.warm >= runner.num_warmup_steps
        and entry.placement is not None
        and not entry.placement[2]
        and entry not in runner.no_fuse
    )


def members_from(head: Runner, entry: Entry) -> list[Member]:
    """The run that starts at ``head``'s call with ``entry``, following stable edges."""
    members = [Member(head, entry, ())]
    runner, current = head, entry
    while True:
        edge = runner.edges.get(current)
        if edge is None or edge.count < STABLE:
            return members
        target = edge.target
        if (
            any(m.runner is target.runner for m in members)
            or not fusable(target.runner, target.entry)
            or target.entry.placement != entry.placement
        ):
            return members
        members.append(target)
        runner, current = target.runner, target.entry


class ChainLayer:
    """The layers of a fused run as one layer of their framework (each adapter mixes this into its
    layer class): its parameters are theirs, its training mode theirs."""

    _list: ClassVar[type]  # the framework's list of layers

    def __init__(self, layers: list, forward: Callable[[tuple, dict], tuple]) -> None:
        super().__init__()
        self.layers = self._list(layers)
        self._run = forward

    @property
    def training(self) -> tuple:
        return tuple(layer.training for layer in self.layers)

    @training.setter
    def training(self, mode: bool) -> None:
        pass  # the members' own modes count

    def forward(self, *args: Any, **kwargs: Any) -> tuple:
        return self._run(args, kwargs)


class Chain:
    """A fused run: one runner over a layer that runs the members' forwards in turn."""

    def __init__(self, head: Runner, members: list[Member], new_runner: Callable[..., Runner]) -> None:
        self.members = members
        ops = head.ops
        layer = ops.chain_layer([m.runner.layer for m in members], self._forward)
        names = [m.runner.stats.name for m in members]
        name = f"run {names[0]} .. {names[-1]} ({len(members)} layers)"
        options = replace(head.options, num_warmup_steps=0, fuse=False, guard=(), name=name)
        self.runner = new_runner(ops, layer, layer.forward, options, name)
        # An eager run of a member (or of the run) while the run holds graphs is watched for changed attributes.
        self.runner.inside = [m.runner for m in members]
        for member in members:
            member.runner.runs.add(self)
        # Members after the head whose forward changes buffers (batch-norm statistics): their buffers as
        # they were before the replay, put back where the run ends before their call.
        self.changing = [i for i, m in enumerate(members) if i and m.entry.mutates_buffers]
        self._epoch = -1  # the structure epoch `_kept` was read at
        self._kept: list[tuple[int, Any, Any]] = []  # (member index, buffer, its backup) of the changing members
        self._copy: tuple[list, list] = ([], [])  # the backups and the buffers, for one batched copy per replay

    def holds_graphs(self) -> bool:
        """Its graphs may replay: it is still its head's run, and its runner holds graphs."""
        head = self.members[0]
        return head.runner.chains.get(head.entry) is self and self.runner.holds_graphs()

    def kept(self) -> list[tuple[int, Any, Any]]:
        """The changing members' buffers and their backups, re-read when any layer's structure changed."""
        ops = self.runner.ops
        epoch = ops.structure_epoch()
        if self._epoch != epoch:
            self._kept = [(i, b, ops.clone(b)) for i in self.changing for b in ops.state(self.members[i].runner.layer)]
            self._copy = ([saved for _, _, saved in self._kept], [b for _, b, _ in self._kept])
            self._epoch = epoch
        return self._kept

    def restore_from(self, pos: int) -> None:
        """The run ended before member ``pos`` was called: the members from there on did not run."""
        ops = self.runner.ops
        for i, b, saved in self.kept() if self.changing else ():
            if i >= pos:
                ops.copy_(ops.writer(b), saved)  # through an alias: autograd may have saved b

    def _forward(self, args: tuple, kwargs: dict) -> tuple:
        """Each member's own forward (past its router: the run is one graph, not several)."""
        tree = self.runner.ops.tree
        head_args, _ = tree.flatten((args, kwargs))
        members = self.members
        out = members[0].runner.plain(*args, **kwargs)
        outs = [out]
        for member in members[1:]:
            prev, _ = tree.flatten(out)
            flat = [prev[i] if source == OUT else head_args[i] for source, i in member.mapping]
            a, kw = unflatten(member.entry.key.spec, flat)
            out = member.runner.plain(*a, **kw)
            outs.append(out)
        return tuple(outs)

    def run(self, args: tuple, kwargs: dict, tensors: list) -> Any:
        """Replay the whole run; hand out the head's outputs now, the others when their layers are called."""
        if self.changing:
            self.kept()
            self.runner.ops.foreach_copy_(*self._copy)
        outs = self.runner(args, kwargs)
        ops = self.runner.ops
        flats = [ops.tree.flatten(out)[0] for out in outs]
        TRACK.pending = Pending(self, outs, flats, tensors, ops.context())
        TRACK.last = None
        self.members[0].runner.stats.fused_calls += 1
        return outs[0]

    def end(self, why: str) -> None:
        """The run ended early: the head forgets it (and stops fusing after MAX_BREAKS ends)."""
        head = self.members[0]
        head.runner.chains.pop(head.entry, None)
        head.runner.chain_breaks[head.entry] = breaks = head.runner.chain_breaks.get(head.entry, 0) + 1
        for member in self.members[:-1]:
            member.runner.edges.pop(member.entry, None)
        if breaks >= MAX_BREAKS:
            head.runner.no_fuse.add(head.entry)
        head.runner.stats.run_ended(why)


def drop_pending() -> None:
    """Forget the outputs of a fused run not handed out yet: their layers did not run."""
    pending, TRACK.pending = TRACK.pending, None
    if pending is not None:
        pending.chain.restore_from(pending.pos)


class Pending:
    """The outputs of a fused run that the layers after the head hand out, in order."""

    __slots__ = ("chain", "outs", "flats", "versions", "head_args", "head_versions", "params", "context", "pos")

    def __init__(self, chain: Chain, outs: tuple, flats: list, head_args: list, context: tuple) -> None:
        ops = chain.runner.ops
        self.chain, self.outs, self.flats, self.head_args, self.context = chain, outs, flats, head_args, context
        self.versions = list(map(ops.versions, flats))
        self.head_versions = ops.versions(head_args)
        # The members' parameters as the replay used them: an optimizer step or a loaded checkpoint
        # before a member's call makes its ready output stale.
        self.params = [ops.versions(m.runner._params or ()) for m in chain.members]
        self.pos = 1

    def take(self, runner: Runner, args: tuple, kwargs: dict) -> Any:
        """The output for this call of the next member, or MISS (the run ends here)."""
        member = self.chain.members[self.pos]
        why = self._mismatch(member, runner, args, kwargs)
        TRACK.pending = None
        if why:
            self.chain.restore_from(self.pos)
            self.chain.end(why)
            return MISS
        out = self.outs[self.pos]
        self.pos += 1
        if self.pos < len(self.outs):
            TRACK.pending = self
        runner.stats.fused_calls += 1
        return out

    def _mismatch(self, member: Member, runner: Runner, args: tuple, kwargs: dict) -> str:
        if runner is not member.runner:
            return f"{runner.stats.name} called instead of {member.runner.stats.name}"
        ops = runner.ops
        try:
            tensors, spec = ops.tree.flatten_call(args, kwargs)
        except TypeError:
            return "unsupported argument"
        if spec != member.entry.key.spec or len(tensors) != len(member.mapping):
            return "other arguments"
        prev, prev_versions = self.flats[self.pos - 1], self.versions[self.pos - 1]
        versions = []
        for t, (source, i) in zip(tensors, member.mapping):
            want, version = (prev[i], prev_versions[i]) if source == OUT else (self.head_args[i], self.head_versions[i])
            if t is not want:
                return "other tensor arguments"
            if source == OUT and ops.grad_hooks(t):
                return "a hook on a tensor argument"
            versions.append(version)
        if ops.versions(tensors) != versions:
            return "a tensor argument was modified in place"
        if ops.context() != self.context or runner.training() != member.entry.key.training:
            return "grad mode, autocast or training mode changed"
        if ops.versions(runner._params or ()) != self.params[self.pos]:
            return "its parameters changed"
        return ""
