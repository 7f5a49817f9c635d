"""A layer's graphs and what each key of it has: the runner's records, shared with the check and the fused runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from .keys import GraphKey
from .ops import Graph
from .pools import PoolLedger


@dataclass(eq=False)
class Slot:
    """One captured forward graph (and its backward graph) with its static buffers."""

    ledger: PoolLedger
    fwd: Graph
    fwd_seq: int
    static_inputs: list
    out_spec: tuple
    nondiff: tuple = ()
    diff_outputs: tuple = ()
    used_inputs: tuple = ()
    used_params: tuple = ()
    reach: tuple | None = None  # per differentiable output, the backward's leaves it reaches (verify.Probe)
    grad_outputs: list = field(default_factory=list)
    zeroed: list = field(default_factory=list)  # per grad_outputs buffer: all zeros (nothing else writes them)
    params: list = field(default_factory=list)  # autograd leaves standing for the parameters
    targets: list = field(default_factory=list)  # the parameters whose .grad receives the grads
    listened: bool = False  # hooks wait on the targets' accumulation: it must run after each backward
    writers: list = field(default_factory=list)  # where new inputs are copied (static_inputs' memory)
    bwd: Graph | None = None  # adds parameter grads into the bank (zeroed first where they were cleared)
    bwd_seq: int = 0
    busy: bool = False
    stale: bool = False
    generation: int = 0
    release_epoch: int = -1
    entry: "Entry | None" = None  # the key's entry it serves


@dataclass(eq=False)
class Entry:
    key: GraphKey
    warm: int = 0
    slots: list = field(default_factory=list)
    placement: tuple | None = None  # (backend, device, reason to stay eager), fixed by the key
    mutates_buffers: bool = False  # its forward changes buffers (seen at capture)
    # Per differentiable output, the memory layout its gradient arrives in, learned at a backward: the backward
    # graph's buffer for it takes that layout, since the kernels of the backward (a batch norm's reductions)
    # add up in another order on another layout.
    grad_layouts: dict = field(default_factory=dict)
    relayouts: int = 0  # captures dropped for a layout learned
    state_changes: int = 0  # captures that changed layer attributes: put back, the call run eagerly (attributes.py)
