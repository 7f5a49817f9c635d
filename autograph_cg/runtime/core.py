"""Framework-neutral runtime: warmup, graph cache, graph slots per in-flight call, pool safety, fallback.

An adapter (``torch_adapter`` / ``paddle_adapter``) supplies the tensor operations (``Ops``) and the
autograd function; everything that decides *when* to capture, replay or run eagerly lives here.
Docs: docs/runtime.md.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from typing import Any, Callable, Iterator, Sequence

from . import attributes, chains, guards, settings, verify
from .gradbank import GradBank, accumulate_eagerly
from .keys import GraphKey, explain_miss
from .ops import Ops
from .pools import PoolLedger, ledger_for
from .slots import Entry, Slot
from .stats import LayerStats
from .options import Settings
from .tree import UnsupportedArgument, unflatten


PROBATION = 3  # backwards of a layer during which its parameters are passed to learn if any asks for them
# Captures of one key dropped for gradients in another layout; past it, such backwards run eagerly (a gradient that
# alternates between layouts would otherwise be captured again at every step).
MAX_RELAYOUTS = 3
# Captures of one key that changed layer state (put back, the call run eagerly); past it, the key runs eagerly: a
# forward that changes its attributes on every call (a call counter) would otherwise capture at every call.
MAX_STATE_CHANGES = 3


class _CaptureDepth(threading.local):
    depth = 0


_CAPTURE = _CaptureDepth()
# Calls of wrapped layers (and their backwards) in progress on this thread: a wrapped layer marked as inside
# another is part of that one's call only while some wrapped call is in progress (see Runner._within_another).
_SERVING = _CaptureDepth()


@contextlib.contextmanager
def _capturing() -> Iterator[None]:
    """Mark this thread as capturing a layer, so wrapped layers inside it run plainly (nested wrapping)."""
    _CAPTURE.depth += 1
    try:
        yield
    finally:
        _CAPTURE.depth -= 1


class Token:
    """Held by the autograd context of one graphed call; frees the slot if the call's graph dies unused."""

    __slots__ = ("runner", "slot", "generation")

    def __init__(self, runner: "Runner", slot: Slot) -> None:
        self.runner, self.slot, self.generation = runner, slot, slot.generation

    def __del__(self) -> None:
        slot = self.slot
        if slot.busy and slot.generation == self.generation:
            self.runner.release(slot, self.generation)


def replay_forward(ctx: Any, runner: "Runner", slot: Slot, tensors: Sequence[Any]) -> tuple:
    """The forward of the adapters' autograd function (torch Function / Paddle PyLayer)."""
    n = len(slot.static_inputs)
    ctx.routed = len(tensors) - n  # parameters passed only for their accumulation nodes (Runner.__call__)
    outs = runner._replay_inference(slot, tensors[:n])
    slot.busy = True
    slot.generation += 1
    slot.ledger.inflight[id(slot)] = slot.fwd_seq
    ctx.set_materialize_grads(False)
    if slot.nondiff:
        ctx.mark_non_differentiable(*(outs[i] for i in slot.nondiff))
    ctx.token = runner.track(slot)
    if settings.DEBUG:
        settings.debug("%s forward replay", runner.stats.name)
    return tuple(outs)


def replay_backward(ctx: Any, grads: Sequence[Any]) -> list:
    """The backward of the adapters' autograd function: grads for the tensor arguments, then for the
    parameters passed as arguments (None, unless the backward asked for them by name)."""
    token = ctx.token
    # The layer's call goes on in its backward: a forward run again there (activation checkpointing re-runs
    # the layers inside, which a stand-in's backward replay or an eager backward reaches) is part of it.
    _SERVING.depth += 1
    try:
        in_grads, routed = token.runner.backward_replay(token, grads, ctx.routed)
    finally:
        _SERVING.depth -= 1
    if settings.DEBUG:
        settings.debug("%s backward replay", token.runner.stats.name)
    return in_grads + routed


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")


def _check_rebuilds(spec: tuple, flat: list) -> None:
    """Every replay rebuilds the outputs with their own types: find out at capture if that fails."""
    try:
        unflatten(spec, flat)
    except Exception as err:
        raise UnsupportedArgument(f"the output cannot be rebuilt: {_first_line(err)}") from err


class Runner:
    """The state machine behind one wrapped layer: per key, warm up, capture, replay, or run eagerly.

    ``layer`` is what owns the parameters and buffers; ``plain(args, kwargs)`` runs its forward
    without the runtime (for a wrapped layer, the original forward past the router)."""

    def __init__(self, ops: Ops, layer: Any, plain: Callable[..., Any], options: Settings, name: str) -> None:
        self.ops, self.layer = ops, layer
        # What eager calls, captures and nested calls run: the layer's forward, compiled first when
        # options.compile asks (the fallbacks go compiled and graphed -> graphed -> eager).
        self._uncompiled = plain
        self.plain = ops.compile(plain, options.compile) if options.compile else plain
        self.outer: Runner | None = None  # the wrapped layer this one sits inside, if any
        self.eager_depth = 0  # calls of this layer running eagerly now: the wrapped layers inside serve graphs then
        self.options = options
        self.num_warmup_steps, self.max_graphs = options.num_warmup_steps, options.max_graphs
        self.backend = options.backend
        self.guard = guards.Guard(plain, options.guard) if options.guard else None
        self.stats = LayerStats(name)
        self.entries: dict[GraphKey, Entry] = {}
        self.graph_count = 0
        self._params: list | None = None
        self._buffers: list = []
        self._sublayers: list = []  # the layer and every layer below it, read with the parameters
        self._changed = 0  # eager runs that changed the attributes of those layers, at the last read (attributes.py)
        self._ids: tuple = ()  # ids of the parameters and buffers, read with them
        self._signature: tuple | None = None
        self._epoch = -1  # ops.structure_epoch() when the parameters were read
        self._bank: GradBank | None = None
        # A tensor needing grad passed to every training call, so it has a backward even when no
        # input needs grad; a view, whose node only a backward that runs everything runs.
        self._anchor: Any = None
        # Pass the parameters to the autograd function, so that a backward asking for their gradients
        # (torch.autograd.grad(loss, params)) gets them: always once one did, and for the first
        # PROBATION backwards of every layer to find out (a backward can only be told apart from the
        # inside, and a parameter not passed is not in the autograd graph at all).
        self.route = False
        self.probation = PROBATION
        # Runs of wrapped layers (chains.py): may this layer fuse with the layers that follow it,
        # which call followed each entry's replays, the fused runs it heads, how often each broke.
        self.fuse = options.fuse
        self.edges: dict[Entry, chains.Edge] = {}
        self.chains: dict[Entry, chains.Chain] = {}
        self.chain_breaks: dict[Entry, int] = {}
        self.no_fuse: set[Entry] = set()
        self.runs: weakref.WeakSet = weakref.WeakSet()  # the fused runs this layer is a member of
        self.inside: list[Runner] = []  # of a fused run's runner: its members' runners
        self.watch_depth = 0  # eager runs of the layer whose changes to its layers' attributes are being noted

    def training(self) -> Any:
        return getattr(self.layer, "training", False)

    # ---------------------------------------------------------------- calls
    def __call__(self, args: tuple, kwargs: dict) -> Any:
        if self._within_another():
            self.stats.nested_calls += 1
            if _CAPTURE.depth:  # the capture notes and puts back what it changes
                return self.plain(*args, **kwargs)
            with self._watching():
                return self.plain(*args, **kwargs)
        _SERVING.depth += 1
        try:
            return self._serve(args, kwargs)
        finally:
            _SERVING.depth -= 1

    def _within_another(self) -> bool:
        """Called inside another wrapped layer's call (or any capture): part of its graph, unless that one runs
        eagerly (for good, or for this call: a guard it failed, an argument it cannot take). With no wrapped call
        in progress the layer it sits in covers nothing: a model may call a wrapped layer's sublayers past it
        (`self.mt5.encoder(...)` where `self.mt5` is wrapped), and they then serve graphs of their own."""
        outer = self.outer
        return bool(_CAPTURE.depth) or (
            outer is not None and _SERVING.depth > 0 and outer.stats.disabled_reason is None and not outer.eager_depth
        )

    def _serve(self, args: tuple, kwargs: dict) -> Any:
        ops = self.ops
        reason = settings.disabled_by_env()
        if reason:
            chains.drop_pending()
            return self._eager(args, kwargs, f"disabled by {reason}")
        if self.stats.disabled_reason:
            self.stats.eager_calls += 1
            return self._run_eagerly(args, kwargs)  # the layers inside see `disabled_reason`
        if ops.saved_tensor_hooks():
            # Hooks that pack what autograd saves (activation checkpointing without reentry, offloading)
            # would pack the graph's static memory; the call runs as it would unwrapped.
            chains.drop_pending()
            chains.TRACK.last = None
            return self._eager(args, kwargs, "saved-tensor hooks are active (checkpointing or offloading)")
        track = chains.TRACK
        if track.pending is not None:  # the outputs of a fused run wait for their layers
            out = track.pending.take(self, args, kwargs)
            if out is not chains.MISS:
                return out
        if self.guard is not None:
            why = self.guard.failure(args, kwargs, self.layer)
            if why:
                track.last = None
                return self._eager(args, kwargs, why)
        try:
            tensors, spec = ops.tree.flatten_call(args, kwargs)
        except UnsupportedArgument as err:
            track.last = None
            return self._eager(args, kwargs, "unsupported argument", str(err))
        trainable = self._check_parameters()
        context = ops.context()
        needs_grad = context[0] and (trainable or any(map(ops.requires_grad, tensors)))
        key = GraphKey(self.training(), needs_grad, context, spec, tuple(map(ops.meta, tensors)))
        entry = self.entries.get(key)
        if entry is None:
            entry = self._new_entry(key)
        if entry.warm < self.num_warmup_steps:
            entry.warm += 1
            return self._warmup(entry, args, kwargs, tensors)
        if entry.placement is None:
            entry.placement = self._placement(tensors)
        backend, device, why = entry.placement
        if why:
            track.last = None
            return self._eager(args, kwargs, why)
        came = None
        if self.fuse:
            came = chains.link(tensors)
            chain = self._chain(entry, came)
            if chain is not None:
                return chain.run(args, kwargs, tensors)
        graphs = self.graph_count
        slot = self._acquire(entry, tensors, spec, backend, device)
        if slot is None:
            track.last = None
            return self._run_eagerly(args, kwargs)
        if slot.bwd is None:
            outs = self._replay_inference(slot, tensors)
        else:
            if self._anchor is None:
                self._anchor = ops.anchor_node(ops.anchor(device))
            applied = tensors
            if slot.targets and (self.route or self.probation > 0 or slot.listened or ops.distributed()):
                # The parameters become inputs that receive no gradient: after the backward replay
                # has stored their grads, their accumulation nodes run, and with them the hooks
                # there (DDP's reducer), which read the grads. Only then: a node per parameter costs.
                # A backward that asks for them (torch.autograd.grad) gets them through these inputs.
                applied = tensors + slot.targets
            outs = list(ops.apply(self, slot, self._anchor, applied))
        if self.fuse and graphs == self.graph_count:  # a replay, not a capture: learn who follows
            chains.note(self, entry, tensors, outs, came)
        else:
            track.last = None
        return unflatten(slot.out_spec, outs)

    def _chain(self, entry: Entry, came: chains.Link | None) -> chains.Chain | None:
        """The fused run this call heads, formed when the run has been stable long enough. A call
        that follows a layer it could fuse with is no head: that layer's run will include it."""
        chain = self.chains.get(entry)
        if chain is not None:
            if chain.runner.stats.disabled_reason is None:
                return chain
            del self.chains[entry]  # the run cannot be captured as one: its layers graph alone
            self.no_fuse.add(entry)
            return None
        if not chains.fusable(self, entry) or (came is not None and chains.fusable(came.runner, came.entry)):
            return None
        members = chains.members_from(self, entry)
        if len(members) < 2:
            return None
        chain = self.chains[entry] = chains.Chain(self, members, Runner)
        for member in members:  # their own graphs give way to the run's (memory); a broken run recaptures
            member.runner._drop_entry(member.entry)
        settings.debug("%s fuses %s", self.stats.name, chain.runner.stats.name)
        return chain

    def _eager(self, args: tuple, kwargs: dict, reason: str, detail: str = "") -> Any:
        """This call runs eagerly, with its reason; the wrapped layers inside it serve their own graphs meanwhile
        (a root whose guard fails keeps its blocks' graphs). Uncompiled: a compiler would trace through them."""
        self.stats.eager_calls += 1
        self.stats.fallback(reason, detail)
        self.eager_depth += 1
        try:
            with self.ops.layer_context(), self._watching():
                return self._uncompiled(*args, **kwargs)
        finally:
            self.eager_depth -= 1

    def _run_eagerly(self, args: tuple, kwargs: dict) -> Any:
        with self.ops.layer_context(), self._watching():
            if self.plain is self._uncompiled:
                return self.plain(*args, **kwargs)
            try:
                return self.plain(*args, **kwargs)
            except Exception as err:  # the compiler's, if the forward runs without it
                out = self._uncompiled(*args, **kwargs)
                self._uncompile(f"compiling failed: {_first_line(err)}")
                return out

    def holds_graphs(self) -> bool:
        """Graphs that replay this layer's computation exist: its own (unless it is eager for good) or a fused
        run's that it belongs to."""
        if self.graph_count and self.stats.disabled_reason is None:
            return True
        return any(run.holds_graphs() for run in self.runs)

    def _under_graphs(self) -> bool:
        """Graphs that may read this layer's attributes exist: its own, those of the wrapped layers around it, of
        the fused runs they belong to, and, for a fused run's runner, its members'."""
        runner: Runner | None = self
        while runner is not None:
            if runner.holds_graphs():
                return True
            runner = runner.outer
        return any(member._under_graphs() for member in self.inside)

    @contextlib.contextmanager
    def _watching(self) -> Iterator[None]:
        """Around a run of the layer's Python outside a graph: where graphs may read its layers' attributes, note
        what the run changed, so that every wrapper holding a changed layer drops its graphs (attributes.py).
        Nothing is walked while no such graph exists (warmup, a layer eager for good), nor inside the eager run of
        a wrapped layer around it that notes its changes already."""
        if self._watched_around() or not self._under_graphs():
            yield
            return
        self._read_parameters()
        before = self.ops.snapshot(self._sublayers)
        self.watch_depth += 1
        try:
            yield
        finally:
            self.watch_depth -= 1
            changes = before.changes()
            if changes:
                attributes.record(changes, f"{self._describe(changes)} (in an eager call of {self.stats.name})")

    def _watched_around(self) -> bool:
        runner = self.outer
        while runner is not None:
            if runner.watch_depth:
                return True
            runner = runner.outer
        return False

    def _describe(self, changes: list) -> str:
        names = {id(layer): name for name, layer in self.ops.named_sublayers(self.layer)}
        return attributes.describe(changes, names)

    def _changed_while_capturing(self, entry: Entry, changes: list) -> None:
        """A capture changed layer state (put back by now): no graph, this call runs eagerly as a warmup call
        would, and the key captures again at a later call, or runs eagerly for good after MAX_STATE_CHANGES (a
        fused run's runner is made eager instead: its head drops the run, and its layers capture on their own)."""
        what = self._describe(changes)
        self.stats.warmup_calls += 1
        self.stats.fallback(f"forward changed layer state while capturing: {what}")
        entry.state_changes += 1
        if entry.state_changes >= MAX_STATE_CHANGES:
            reason = f"forward changes layer state at every capture: {what}"
            if self.inside:
                self.stats.disable(reason)
            else:
                entry.placement = ("", None, reason)

    def _uncompile(self, reason: str) -> None:
        """Go on without the compiler: graphs of the plain forward from the next capture on."""
        self.plain = self._uncompiled
        self.stats.fallback(reason + "; the layer runs uncompiled")

    def _new_entry(self, key: GraphKey) -> Entry:
        # Bound the bookkeeping of keys that never got a graph (e.g. every call a new shape).
        if len(self.entries) >= 4 * self.max_graphs:
            for old_key in [k for k, e in self.entries.items() if not e.slots][: len(self.entries) // 2]:
                del self.entries[old_key]
        entry = self.entries[key] = Entry(key)
        return entry

    def _warmup(self, entry: Entry, args: tuple, kwargs: dict, tensors: list) -> Any:
        """One eager call before the key captures. A layer that may fuse learns here who follows it, whether its
        forward changes buffers and where its graphs would go, so that a run stable through the warmup is captured
        as the run at once: its members never hold graphs of their own (chains.py)."""
        ops = self.ops
        track = chains.TRACK
        came = chains.link(tensors) if self.fuse else None
        versions = ops.versions(tensors)
        state = ops.state(self.layer) if self.fuse else []
        saved = [ops.clone(b) for b in state]  # values: Paddle's statistics keep their version counters
        self.stats.warmup_calls += 1
        out = self._run_eagerly(args, kwargs)
        for i, (before, after) in enumerate(zip(versions, ops.versions(tensors))):
            if before != after:
                self.stats.disable(f"forward writes into its tensor argument {i} in place")
                break
        track.last = None
        if self.fuse and not self.stats.disabled_reason:
            entry.mutates_buffers |= not all(ops.equal(b, v) for b, v in zip(state, saved))
            if entry.placement is None:
                entry.placement = self._placement(tensors)
            try:
                outs, _ = ops.tree.flatten(out)
            except UnsupportedArgument:
                return out
            chains.note(self, entry, tensors, outs, came)
        return out

    def _placement(self, tensors: list) -> tuple[str, Any, str]:
        ops = self.ops
        probe = tensors[0] if tensors else (self._params or [None])[0]
        if probe is None:
            return "", None, "no tensor argument or parameter to place the graph"
        device = ops.device(probe)
        backend = settings.backend_from_env(self.backend)
        if backend not in ("auto", "cuda", "standin"):
            return "", None, f"unknown backend {backend!r}"
        if backend == "auto":
            backend = "cuda" if ops.input_reason(probe, "cuda") is None else ""
            if not backend:
                return "", None, f"not on a CUDA device ({device})"
        for i, t in enumerate(tensors):
            why = ops.input_reason(t, backend)
            if why:
                return "", None, f"tensor argument {i} {why}"
        return backend, device, ""

    def _read_parameters(self) -> list:
        """The layer's parameters, re-read when the framework says a layer inside a wrapped layer registered
        a new parameter, buffer or sublayer since the last read (``load_state_dict(assign=True)``,
        ``block.fc = nn.Linear(...)``, an adapter library putting its layers in place of the
        originals), or an eager run changed a layer's attributes: a walk per call would cost more than the
        replay. The graphs go if an eager run changed the attributes of one of the layers since the last read."""
        epoch = self.ops.structure_epoch()
        if self._params is None or epoch != self._epoch:
            self._params = list(self.layer.parameters())  # both frameworks' layers spell these alike
            self._buffers = self.ops.state(self.layer)
            sublayers = self._sublayers = self.ops.sublayers(self.layer)
            self.ops.watch(sublayers)
            self._ids = (
                tuple(map(id, self._params)),
                tuple(map(id, self._buffers)),
                tuple(map(id, sublayers)),  # a sublayer replaced by one without parameters
            )
            self._epoch = epoch
            changed, latest = attributes.changed_in(sublayers)
            if changed != self._changed:
                if self.graph_count:  # they may read a table the eager run replaced, or bake in an old value
                    self._drop_graphs()
                    self.stats.recapture(f"an eager call changed layer state: {latest}")
                self._changed = changed
        return self._params

    def _check_parameters(self) -> bool:
        """Re-capture when a parameter or buffer was replaced, moved (``.to()``, ``param.data = ...``)
        or froze; returns whether any parameter is trainable."""
        ops = self.ops
        params = self._read_parameters()
        flags = tuple(map(ops.requires_grad, params))
        signature = (
            self._ids,  # the same tuple while no registration happened: compared by identity
            tuple(map(ops.data_ptr, params)),
            flags,
            tuple(map(ops.data_ptr, self._buffers)),
        )
        if signature != self._signature:
            if self._signature is not None and self.graph_count:
                self._drop_graphs()
                self.stats.recapture("sublayers, parameters or buffers were replaced, re-allocated or frozen")
            self._signature = signature
        return True in flags

    def _drop_graphs(self) -> None:
        for entry in self.entries.values():
            self._drop_entry(entry)
        self.chains.clear()
        self._bank = None

    def _drop_entry(self, entry: Entry) -> None:
        """Drop one key's graphs; calls in flight finish their backward eagerly."""
        for slot in entry.slots:
            slot.stale = True
            slot.ledger.inflight.pop(id(slot), None)
        self.graph_count -= len(entry.slots)
        entry.slots.clear()
        if not self.graph_count:
            self._bank = None

    # -------------------------------------------------------------- capture
    def _acquire(self, entry: Entry, tensors: list, spec: tuple, backend: str, device: Any) -> Slot | None:
        for slot in entry.slots:
            if not slot.busy and slot.ledger.may_replay(slot.fwd_seq):
                return slot
        if self.graph_count >= self.max_graphs:
            self.stats.eager_calls += 1
            others = [k for k, e in self.entries.items() if e.slots]
            self.stats.fallback(
                f"graph cache full ({self.max_graphs} graphs)", explain_miss(entry.key, others)
            )
            return None
        # What the capture changes of the layers' attributes is put back: its probe and capture ran the forward
        # twice, and a graph of a forward that changed them would read what the capture left (a table the next
        # eager refresh frees).
        before = self.ops.snapshot(self._sublayers)
        slot = self._capture(entry, tensors, spec, backend, device, before)
        changes = before.changes()
        if changes:
            before.restore(changes)
            self._changed_while_capturing(entry, changes)
            return None
        if slot is None:
            self.stats.eager_calls += 1
            return None
        self.stats.captures += 1
        self.graph_count += 1
        entry.slots.append(slot)
        settings.debug("%s captured graph %d for %s", self.stats.name, self.graph_count, entry.key.tensors)
        return slot

    def _capture(
        self, entry: Entry, tensors: list, spec: tuple, backend: str, device: Any, before: attributes.Snapshot
    ) -> Slot | None:
        """A new slot of the key, or None (the layer may have been made eager); ``before``: the layers' attributes
        before the capture, where a changed one explains a first replay that differs (the key captures again)."""
        ops, key = self.ops, entry.key
        layer = self.layer
        why = ops.engine_reason(layer) or ops.hooks_reason(layer) or ops.prerequisites_reason(backend, device)
        if why:
            self.stats.disable(why)
            return None
        train = key.needs_grad
        params = [p for p in self._params or [] if ops.requires_grad(p)] if train else []
        bank = self._grad_bank(params) if params else None
        ledger = ledger_for(ops, backend, device, len(entry.slots))
        started = time.perf_counter()
        check = self.options.verify
        state = self._save_state(device, params)
        try:
            static = [ops.make_static(t, train and meta[3]) for t, meta in zip(tensors, key.tensors)]
            leaves, call = ops.bind(self.layer, self.plain, params)
            run_layer, last_spec = self._forward_fn(spec, static, train, call)
            # The probe runs on leaves of its own (aliases of the same memory): its autograd graph,
            # kept for the check, then holds no accumulation node of the leaves the capture uses
            # (one made on the caller's stream breaks a capture on the side stream).
            probe_static = [ops.twin_leaf(t) for t in static]
            probe_leaves, probe_call = ops.bind(self.layer, self.plain, params)
            run_probe, probe_spec = self._forward_fn(spec, probe_static, train, probe_call)
            # Checked, the probe leaves eager's parameter gradients (negated) in the bank's views for the check.
            sink = (bank.views if bank else []) if check else None
            with ops.capture_context(), ops.layer_context(), _capturing():
                found = verify.probe(ops, run_probe, probe_static, probe_leaves, train, sink, entry.grad_layouts)
                # A fused run that ends before such a layer puts its buffers back (chains.py).
                entry.mutates_buffers |= not all(ops.equal(b, saved) for b, saved in state[2])  # b: an alias
                out_spec = probe_spec[0]
                # A stand-in's capture runs its backward, into the views that hold the probe's gradients.
                held = [ops.clone(bank.views[j]) for j in found.used_params] if bank and check and backend != "cuda" else []
                with ops.capture_stream(backend, device):
                    slot = self._capture_graphs(
                        entry, run_layer, (backend, device), ledger, static, out_spec, found, leaves, params, bank
                    )
                for j, kept in zip(found.used_params, held):
                    ops.copy_(bank.views[j], kept)
                if last_spec[0] != out_spec:
                    raise RuntimeError("the output structure changed between two runs")
                _check_rebuilds(out_spec, slot.fwd.outputs)
                # Gradients come back last: parameters' grads may be the views the check reads.
                self._restore_state(state, grads=False)
                if check:  # on the caller's stream, as the probe
                    checking = time.perf_counter()
                    try:
                        verify.check(
                            ops,
                            slot,
                            found,
                            lambda: self._restore_state(state, grads=False),
                            run_probe,
                            lambda: [bank.views[j] for j in slot.used_params] if bank else [],
                            lambda j: self._parameter_name(slot.targets[j]),
                        )
                    finally:
                        self.stats.check_seconds += time.perf_counter() - checking
        except verify.Mismatch as err:  # a graph that computes something else: this step and all later ones run eagerly
            self._restore_state(state)
            self.stats.capture_seconds += time.perf_counter() - started
            if not before.changes():
                self.stats.disable(f"the first replay differs from eager: {err}")
            return None
        except Exception as err:  # any capture failure: the step runs eagerly, the layer stays eager
            ledger.poison()
            self._restore_state(state)
            before.restore(before.changes())  # the failure, not the attributes it changed, decides
            self.stats.capture_seconds += time.perf_counter() - started
            if self.plain is not self._uncompiled:  # compiled code that a graph cannot hold: try without
                self._uncompile(f"the compiled layer failed to capture: {_first_line(err)}")
                entry.warm = 0
            else:
                self.stats.disable(f"capture failed: {_first_line(err)}")
            return None
        self._restore_state(state)
        self.stats.capture_seconds += time.perf_counter() - started
        return slot

    def _capture_graphs(
        self,
        entry: Entry,
        run_layer: Callable[[], list],
        place: tuple,
        ledger: PoolLedger,
        static: list,
        out_spec: tuple,
        found: verify.Probe,
        leaves: list,
        params: list,
        bank: GradBank | None,
    ) -> Slot:
        """The forward graph, and in training the backward graph, of one new slot."""
        ops, (backend, device) = self.ops, place
        fwd = ops.new_graph(backend, device, ledger.pool_for_capture(), self._sublayers)
        flat = fwd.capture(run_layer)
        ledger.adopt(fwd)
        slot = Slot(
            ledger, fwd, ledger.next_seq(), static, out_spec,
            found.nondiff, found.diff_outputs, found.used_inputs, found.used_params, found.reach, entry=entry,
        )
        slot.writers = [ops.writer(t) for t in static]
        if slot.diff_outputs and (slot.used_inputs or slot.used_params):
            slot.params = [leaves[j] for j in slot.used_params]
            slot.targets = [params[j] for j in slot.used_params]
            slot.listened = ops.listened(slot.targets)
            layouts = entry.grad_layouts
            slot.grad_outputs = [ops.zeros_in_layout(flat[i], layouts.get(i)) for i in slot.diff_outputs]
            slot.zeroed = [True] * len(slot.grad_outputs)
            slot.bwd = ops.new_graph(backend, device, ledger.pool_for_capture(), [])
            slot.bwd.capture(self._backward_fn(slot, bank, ops.foreach_add_))
            ledger.adopt(slot.bwd)
            slot.bwd_seq = ledger.next_seq()
        return slot

    def _parameter_name(self, param: Any) -> str:
        for name, p in self.layer.named_parameters():
            if p is param:
                return f"parameter {name}"
        return "a parameter"

    def _forward_fn(
        self, spec: tuple, static: list, train: bool, call: Callable[[tuple, dict], Any]
    ) -> tuple[Callable[[], list], list]:
        ops = self.ops
        last_spec: list = [None]

        def run_layer() -> list:
            args, kwargs = unflatten(spec, static)
            with ops.grad_mode(train), ops.layer_context():
                out = call(args, kwargs)
            flat, last_spec[0] = ops.tree.flatten(out)
            return flat

        return run_layer, last_spec

    def _backward_fn(
        self, slot: Slot, bank: GradBank | None, store: Callable[[list, list], None]
    ) -> Callable[[], list]:
        """The captured backward: input grads become graph outputs, parameter grads are stored
        (added or written) into the bank's views a group at a time as they complete, so the
        parameter grads never all exist at once beside the bank (eager's backward never holds them
        twice either). The views are looked up per run: a lasting reference would hide a user's
        alias from GradBank.prepare, which counts references."""
        inputs = [slot.static_inputs[i] for i in slot.used_inputs]
        n = len(inputs)

        def run_backward() -> list:
            outs = [slot.fwd.live_outputs[i] for i in slot.diff_outputs]
            in_grads: list = [None] * n
            views: list = []
            grads: list = []
            held = 0

            def take(k: int, grad: Any) -> None:
                nonlocal held
                if k < n:
                    in_grads[k] = grad
                    return
                assert bank is not None  # a parameter gradient implies trainable parameters
                j = slot.used_params[k - n]
                views.append(bank.views[j])
                grads.append(grad)
                held += bank.sizes[j]
                if held >= bank.group_size:
                    store(views, grads)
                    views.clear()
                    grads.clear()
                    held = 0

            with self.ops.layer_context():
                self.ops.backward_into(outs, slot.grad_outputs, inputs + slot.params, take, retain=True)
            if views:
                store(views, grads)
            return in_grads

        return run_backward

    def _grad_bank(self, params: list) -> GradBank:
        bank = self._bank
        if bank is None or len(bank.params) != len(params) or any(p is not q for p, q in zip(bank.params, params)):
            bank = self._bank = GradBank(self.ops, params)
        return bank

    def _save_state(self, device: Any, params: list) -> tuple:
        """What a capture may change: RNG and buffers (the probe ran the layer), and the parameters'
        gradients (the stand-in's capture runs the computation, the check replays into the bank, and
        a forward that recomputes a part of itself in its backward, as reentrant checkpointing does,
        adds into the real parameters' gradients from the probe's backward). Buffers and gradients are
        written back through aliases (``ops.writer``): a write to a buffer itself would bump its version
        counter, and autograd graphs that saved it (an embedding of a slice of registered position ids)
        would refuse to run backward."""
        ops = self.ops
        buffers = [(ops.writer(b), ops.clone(b)) for b in self._buffers]
        grads = [(p, g, None if g is None else ops.clone(g)) for p, g in zip(params, map(ops.grad_of, params))]
        return ops.rng_state(device), device, buffers, grads

    def _restore_state(self, state: tuple, grads: bool = True) -> None:
        ops = self.ops
        rng, device, buffers, saved_grads = state
        ops.set_rng_state(rng, device)
        for dst, src in buffers:
            ops.copy_(dst, src)
        for p, grad, saved in saved_grads if grads else ():
            if grad is None:
                if ops.grad_of(p) is not None:
                    ops.clear_grads([p])
                continue
            if not ops.is_same(ops.grad_of(p), grad):
                ops.set_grads([p], [grad])
            ops.copy_(ops.writer(grad), saved)

    # --------------------------------------------------------------- replay
    def _replay_inference(self, slot: Slot, tensors: Sequence[Any]) -> list:
        """Copy in, replay, hand out clones (also the training forward, inside the autograd function).
        The slot belongs to the call's key, so every input has its static buffer's shape, dtype,
        device and strides: the copies cannot broadcast."""
        copy = self.ops.copy_
        for writer, t in zip(slot.writers, tensors):
            copy(writer, t)
        slot.fwd.replay()
        slot.ledger.epoch += 1
        self.stats.forward_replays += 1
        return list(map(self.ops.clone, slot.fwd.outputs))

    def track(self, slot: Slot) -> Token:
        return Token(self, slot)

    def release(self, slot: Slot, generation: int) -> None:
        if slot.busy and slot.generation == generation:
            slot.busy = False
            slot.ledger.inflight.pop(id(slot), None)
            slot.release_epoch = slot.ledger.epoch

    def backward_replay(self, token: Token, grads: Sequence[Any], routed: int) -> tuple[list, list]:
        """Run inside the adapter's backward: copy grads in, replay (or differentiate eagerly), hand
        out grads for the inputs and for the ``routed`` parameters passed as inputs."""
        ops, slot = self.ops, token.slot
        if slot.generation != token.generation or (
            not slot.busy and slot.ledger.epoch != slot.release_epoch and not slot.stale
        ):
            raise RuntimeError(
                f"{self.stats.name}: backward through a graphed call whose buffers were reused; "
                "a second backward (retain_graph) must come before the layer runs again"
            )
        if ops.partial_backward(self._anchor):
            return self._partial_backward(token, grads, routed)
        if self.probation > 0:
            self.probation -= 1
        relaid = self._relayout(slot, grads)
        if relaid and (in_grads := self._backward_in_layout(slot, grads)) is not None:
            self._learn_layouts(slot, relaid)
            self.release(slot, token.generation)
            return self._input_grads(slot, in_grads), [None] * routed
        zeroed = slot.zeroed
        present = []
        for k, (static, i) in enumerate(zip(slot.grad_outputs, slot.diff_outputs)):
            g = grads[i]
            present.append(g is not None)
            if g is not None:
                ops.copy_(static, g)
                zeroed[k] = False
            elif not zeroed[k]:  # an output nobody differentiated (an intermediate one of a fused run)
                ops.zero_(static)
                zeroed[k] = True
        # What eager's backward would reach from the outputs that have a gradient: the rest keep
        # their gradient as it was (None stays None), as eagerly.
        reached = verify.reached(slot.reach, present)
        n = len(slot.used_inputs)
        bank = self._bank
        if reached is not None and not reached:
            in_grads: list = [None] * n
        else:
            skip = () if reached is None else [j for p, j in enumerate(slot.used_params) if n + p not in reached]
            if slot.stale or not slot.used_params:
                plan: tuple | None = ((), ())
            else:
                plan = bank.prepare(slot.used_params, slot.targets)
            graph = slot.bwd
            if slot.stale or plan is None or not slot.ledger.may_replay(slot.bwd_seq):
                in_grads = self._backward_eagerly(slot, present)
            else:
                graph.replay()
                slot.ledger.epoch += 1
                if slot.used_params:
                    bank.finish(plan, skip)
                self.stats.backward_replays += 1
                in_grads = [ops.clone(g) if reached is None or k in reached else None for k, g in enumerate(graph.outputs)]
        if relaid:
            self._learn_layouts(slot, relaid)
        self.release(slot, token.generation)
        return self._input_grads(slot, in_grads), [None] * routed

    def _relayout(self, slot: Slot, grads: Sequence[Any]) -> list:
        """The differentiable outputs whose gradient came in a layout a buffer can take, not their buffer's."""
        layout = self.ops.layout
        found = []
        for static, i in zip(slot.grad_outputs, slot.diff_outputs):
            g = grads[i]
            if g is not None and (got := layout(g)) is not None and got != layout(static):
                found.append((i, got))
        return found

    def _backward_in_layout(self, slot: Slot, grads: Sequence[Any]) -> list | None:
        """A gradient arrived in another memory layout than its buffer's: copied into the buffer, the
        backward's kernels would add up in another order than eager's. This backward differentiates the
        captured autograd graph with the gradients as they came (eager's numbers). None where that graph
        cannot be differentiated outside the capture (a block checkpointed inside the layer recomputes
        otherwise than it ran in the capture): the backward then replays, the gradients copied in."""
        present = [grads[i] is not None for i in slot.diff_outputs]
        given = [grads[i] for i, p in zip(slot.diff_outputs, present) if p]
        try:
            return self._backward_eagerly(slot, present, given)
        except self.ops.recompute_errors:
            if slot.stale:  # no graph to replay either
                raise
            return None

    def _learn_layouts(self, slot: Slot, relaid: list) -> None:
        """The key's graphs are dropped and captured again with buffers in the layouts learned, unless an
        output's gradient changed layouts too often (then such backwards stay eager). A layout may change once
        more when the layer that sends the gradient was captured again for a layout of its own."""
        entry = slot.entry
        assert entry is not None  # every captured slot has its key's entry
        if entry.relayouts >= MAX_RELAYOUTS:
            self.stats.fallback("the gradient of an output arrives in varying memory layouts: its backward runs eagerly")
        elif not slot.stale:
            entry.relayouts += 1
            entry.grad_layouts.update(relaid)
            self._drop_entry(entry)
            self.stats.recapture("a gradient arrived in another memory layout than its graph's buffer")

    def _input_grads(self, slot: Slot, in_grads: list) -> list:
        result: list = [None] * len(slot.static_inputs)
        for i, g in zip(slot.used_inputs, in_grads):
            result[i] = g
        return result

    def _partial_backward(self, token: Token, grads: Sequence[Any], routed: int) -> tuple[list, list]:
        """A backward that asks for some gradients only (``torch.autograd.grad(y, x)``,
        ``backward(inputs=...)``): the gradients, from the captured autograd graph, with no
        parameter's ``.grad`` touched, as eagerly. When the parameters were passed as inputs, theirs
        are handed over too and the autograd engine keeps those it was asked for; a call that did
        not pass them cannot, and from then on every call passes them."""
        ops, slot = self.ops, token.slot
        if not self.route:
            self.route = True
            if not routed and slot.targets:
                self.stats.fallback(
                    "a backward asked for some gradients only (torch.autograd.grad, backward(inputs=...)) "
                    "before the layer passed its parameters: from now on it passes them"
                )
        present = [grads[i] is not None for i in slot.diff_outputs]
        outs = [slot.fwd.live_outputs[i] for i, p in zip(slot.diff_outputs, present) if p]
        given = [grads[i] for i, p in zip(slot.diff_outputs, present) if p]
        inputs = [slot.static_inputs[i] for i in slot.used_inputs]
        params = slot.params if routed else []
        with ops.layer_context():
            got = ops.autograd_grad(outs, inputs + params, given) if outs else [None] * (len(inputs) + len(params))
        self.stats.eager_backwards += 1
        self.release(slot, token.generation)
        return self._input_grads(slot, list(got[: len(inputs)])), list(got[len(inputs) :]) if routed else []

    def _backward_eagerly(self, slot: Slot, present: list, given: list | None = None) -> list:
        """Differentiate the captured autograd graph without replaying it (replay would not be safe),
        from the outputs that have a gradient (``given``, or those copied into the slot's buffers):
        what they do not reach gets none, as eagerly."""
        ops = self.ops
        inputs = [slot.static_inputs[i] for i in slot.used_inputs]
        outs = [slot.fwd.live_outputs[i] for i, p in zip(slot.diff_outputs, present) if p]
        grad_outputs = given if given is not None else [g for g, p in zip(slot.grad_outputs, present) if p]
        with ops.layer_context():
            grads = ops.autograd_grad(outs, inputs + slot.params, grad_outputs)
        accumulate_eagerly(ops, slot.targets, grads[len(inputs) :])
        self.stats.eager_backwards += 1
        return list(grads[: len(inputs)])
