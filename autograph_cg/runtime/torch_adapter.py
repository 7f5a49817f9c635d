"""PyTorch adapter: ``torch.cuda.CUDAGraph`` for capture, ``torch.autograd.Function`` for the autograd boundary.

Imported only when a ``torch.nn.Module`` is wrapped.
"""

from __future__ import annotations

import functools
import gc
import math
import operator
import sys
from contextlib import contextmanager, nullcontext
from typing import Any, ContextManager, Iterator, Sequence

import torch
import torch._functorch.config
import torch.utils.checkpoint
from torch.autograd.function import once_differentiable
from torch.nn.utils.stateless import _reparametrize_module
from torch.utils import _pytree

from . import attributes, graphed, structure
from .chains import ChainLayer
from .core import Runner, Slot, replay_backward, replay_forward
from .ops import DeviceGraph
from .parallel import torch_reason
from .standin import StandInGraph
from .tree import Tree

_VERSION = operator.attrgetter("_version")
_STATIC_TYPES = (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format)
# A module's __dict__ entries of torch's own (attributes.py); the RNNs' lists of their own parameters, which they
# rebuild while a stream captures (parameters are the registration counter's).
_BOOKKEEPING = frozenset(vars(torch.nn.Module())) | {"_flat_weights", "_flat_weight_refs"}
# Host-syncing calls refused while a stand-in graph captures (a capturing CUDA stream refuses them).
_SYNC_TARGETS = [
    (torch.Tensor, name)
    for name in ("item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__", "nonzero")
] + [(torch, "nonzero")]
# What says a graph is being captured; a stand-in capture answers yes, as a capturing CUDA stream does.
_CAPTURE_QUERIES = [(torch.cuda, "is_current_stream_capturing")]


_ANY_AUTOCAST = getattr(torch._C, "_is_any_autocast_enabled", None)
_will_execute = torch._C._will_engine_execute_node
_top_hooks = torch._C._autograd._top_saved_tensors_default_hooks


for _register in ("parameter", "buffer", "module"):
    getattr(torch.nn.modules.module, f"register_module_{_register}_registration_hook")(structure.bump)


def _autocast_state() -> tuple:
    if _ANY_AUTOCAST is not None and not _ANY_AUTOCAST():
        return ()  # the common case, read in one call
    try:  # torch >= 2.4
        return (
            torch.is_autocast_enabled("cuda"),
            torch.get_autocast_dtype("cuda"),
            torch.is_autocast_enabled("cpu"),
            torch.get_autocast_dtype("cpu"),
        )
    except TypeError:
        return (
            torch.is_autocast_enabled(),
            torch.get_autocast_gpu_dtype(),
            torch.is_autocast_cpu_enabled(),
            torch.get_autocast_cpu_dtype(),
        )


# AOTAutograd (torch.compile) lets a compiled backward reuse the memory of the activations it
# saved ("donated buffers"), which allows one backward only. The runtime runs backward more than
# once over one forward: the probe's, the two captured backward graphs', and an eager backward
# when a replay would not be safe. Compiled code first compiled while the wrapped layer runs
# donates nothing.
_DONATION = hasattr(torch._functorch.config, "donated_buffer")


@contextmanager
def _no_donated_buffers() -> Iterator[None]:
    config = torch._functorch.config
    saved = config.donated_buffer
    config.donated_buffer = False
    try:
        yield
    finally:
        config.donated_buffer = saved


_clear_blas_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)
# Graphs whose capture never ended: PyTorch keeps pointers to them (its table of capturing graphs,
# the pinned-memory allocator's routing), so they must outlive those pointers. One per failed capture.
_UNENDED: list = []


class CudaGraph(DeviceGraph):
    """A ``torch.cuda.CUDAGraph`` captured on the runtime's side stream into a shared pool,
    in thread-local mode, with garbage collection paused and a clean abort on failure."""

    def __init__(self, device: torch.device, pool: Any) -> None:
        self._device, self._pool = device, pool
        self._graph = torch.cuda.CUDAGraph()
        self.outputs: list = []

    def capture(self, fn: Any) -> list:
        gc_enabled = gc.isenabled()
        gc.disable()
        # cuBLAS keeps one workspace per stream. Dropped before the capture, the capture's own lands
        # in the graph pool; dropped after, it is a temporary of this graph like any other, shared
        # with the pool's other graphs, instead of a second lasting workspace for the side stream.
        _clear_blas_workspaces()
        try:
            try:
                self._graph.capture_begin(pool=self._pool, capture_error_mode="thread_local")
            except BaseException:
                self._abort(began=False, end_capture=False)
                raise
            try:
                outputs = list(fn())
            except BaseException:
                self._abort(began=True, end_capture=True)
                raise
            try:
                self._graph.capture_end()
            except BaseException:
                self._abort(began=True, end_capture=False)
                raise
        finally:
            _clear_blas_workspaces()
            if gc_enabled:
                gc.enable()
        self.outputs = outputs
        return outputs

    def _abort(self, began: bool, end_capture: bool) -> None:
        """Leave no capture, allocator routing, pool reference or generator capture state behind."""
        graph, index = self._graph, self._device.index
        if end_capture:
            try:
                graph.capture_end()
            except Exception:
                pass
        try:  # capture_end skips this when the capture was invalidated (e.g. by a host sync)
            torch._C._cuda_endAllocateToPool(index, self._pool)
            began = True  # the capture had reached the pool
        except Exception:
            pass
        try:
            graph.pool()  # succeeds only for a capture that ended: reset() then releases the pool
            ended = True
        except Exception:
            ended = False
        if ended:
            graph.reset()
        else:
            _UNENDED.append(graph)
            if began:
                # The capture took a use of the shared pool that reset() gives back only for ended
                # captures; left taken, the pool (every graph of the model) would never be freed.
                try:
                    torch._C._cuda_releasePool(index, self._pool)
                except Exception:
                    pass
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("the capture stream is still capturing after an aborted capture")
        close_generator_capture(self._device)


def close_generator_capture(device: torch.device | None = None) -> None:
    """Some PyTorch versions leave the default generator in capture mode when a capture dies (eager
    RNG then refuses to advance: "Offset increment outside graph capture"); one small complete
    capture with an RNG op, in a private pool, closes it."""
    heal = torch.cuda.CUDAGraph()
    try:
        heal.capture_begin(capture_error_mode="thread_local")
        try:
            torch.rand(1, device=device or "cuda")
        finally:
            heal.capture_end()
    except Exception:
        pass
    finally:
        heal.reset()


class TorchOps:
    """The tensor operations the core needs, in PyTorch."""

    name = "torch"

    def __init__(self) -> None:
        self._streams: dict[Any, torch.cuda.Stream] = {}

    # Containers registered with torch's pytree utilities (model libraries register their outputs)
    # flatten and rebuild through their registration.
    tree = Tree(
        lambda x: isinstance(x, torch.Tensor),
        lambda x: isinstance(x, _STATIC_TYPES),
        _pytree.SUPPORTED_NODES.get,
    )
    requires_grad = staticmethod(operator.attrgetter("requires_grad"))
    data_ptr = staticmethod(torch.Tensor.data_ptr)
    recompute_errors = (torch.utils.checkpoint.CheckpointError,)

    @staticmethod
    def versions(ts: Sequence[torch.Tensor]) -> list:
        try:
            return list(map(_VERSION, ts))
        except RuntimeError:  # inference tensors (made under torch.inference_mode) keep no version counter
            return [-1 if t.is_inference() else t._version for t in ts]

    device = staticmethod(lambda t: t.device)
    # The hot-path copies run where autograd records nothing: inside the autograd function (grad
    # off), in backward, or on tensors that need no grad (see docs/runtime.md).
    clone = staticmethod(torch.Tensor.clone)
    copy_ = staticmethod(torch.Tensor.copy_)
    zero_ = staticmethod(torch.Tensor.zero_)
    zeros_like = staticmethod(torch.zeros_like)

    @staticmethod
    def layout(t: torch.Tensor) -> tuple | None:
        """The strides, where a buffer can have them: none for an overlapping or gapped tensor (the
        expanded gradient of a sum), which a copy cannot write. Read at every replayed backward: a contiguous
        tensor, the usual gradient, answers without the walk."""
        strides, dense = t.stride(), 1
        if t.is_contiguous():
            return strides
        for size, stride in sorted(zip(t.shape, strides), key=operator.itemgetter(1)):
            if size != 1:
                if stride != dense:
                    return None
                dense *= size
        return strides

    @staticmethod
    def zeros_in_layout(t: torch.Tensor, layout: tuple | None) -> torch.Tensor:
        if layout is None:
            return torch.zeros_like(t)
        return torch.empty_strided(t.shape, layout, dtype=t.dtype, device=t.device).zero_()
    grad_of = staticmethod(operator.attrgetter("grad"))
    is_same = staticmethod(operator.is_)
    equal = staticmethod(torch.equal)

    @staticmethod
    def gap(a: torch.Tensor, b: torch.Tensor) -> tuple:
        """(max |a - b|, max |b|) on the device, no host sync, two kernels: a NaN on either side makes
        the difference NaN, which the check counts as different (eager's NaN is eager's to give); for
        integer tensors the difference is true where any element differs."""
        a, b = a.detach(), b.detach()
        if a.shape != b.shape:
            return (math.inf, 0.0)
        if not a.numel():
            return (0.0, 0.0)
        if not (a.is_floating_point() or a.is_complex()):
            return ((a != b).any(), 0.0)
        norm = torch.linalg.vector_norm
        return (norm(a - b, math.inf), norm(b, math.inf))

    @staticmethod
    def abs_maxima(ts: list) -> list:
        """max |t| per tensor, on the device, in a few multi-tensor kernels."""
        full = [t.detach() for t in ts if t.numel()]
        norms = iter(torch._foreach_norm(full, ord=math.inf) if full else ())
        return [next(norms) if t.numel() else 0.0 for t in ts]

    @staticmethod
    def to_host(rows: list) -> list[tuple[float, float]]:
        """Rows of device scalars (or floats) as floats: one host sync per device and dtype."""
        cells = [list(row) for row in rows]
        groups: dict[tuple, list[tuple[int, int]]] = {}
        for i, row in enumerate(cells):
            for j, x in enumerate(row):
                if isinstance(x, torch.Tensor):
                    groups.setdefault((x.device, x.dtype), []).append((i, j))
        for places in groups.values():
            values = torch.stack([cells[i][j] for i, j in places]).tolist()
            for (i, j), value in zip(places, values):
                cells[i][j] = float(value)
        return [tuple(row) for row in cells]

    itemsize = staticmethod(torch.Tensor.element_size)
    randn_like = staticmethod(torch.randn_like)

    @staticmethod
    def reach(outputs: list, leaves: list) -> list:
        """A walk of each output's autograd graph to the accumulation nodes of the leaves."""
        index = {id(leaf): k for k, leaf in enumerate(leaves)}
        result = []
        for out in outputs:
            found: set[int] = set()
            if out.grad_fn is None and id(out) in index:
                found.add(index[id(out)])
            stack, seen = [out.grad_fn], set()
            while stack:
                fn = stack.pop()
                if fn is None or fn in seen:
                    continue
                seen.add(fn)
                k = index.get(id(getattr(fn, "variable", None)))
                if k is not None:
                    found.add(k)
                stack.extend(f for f, _ in fn.next_functions)
            result.append(frozenset(found))
        return result

    @staticmethod
    def meta(t: torch.Tensor) -> tuple:
        return (t.shape, t.dtype, t.device, t.requires_grad, t.stride())

    @staticmethod
    def context() -> tuple:
        return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), _autocast_state())

    @staticmethod
    def saved_tensor_hooks() -> bool:
        return _top_hooks(True) is not None

    @staticmethod
    def structure_epoch() -> int:
        return structure.epoch

    watch = staticmethod(structure.watch)

    sublayers = staticmethod(lambda layer: list(layer.modules()))
    named_sublayers = staticmethod(lambda layer: list(layer.named_modules()))
    state = staticmethod(lambda layer: list(layer.buffers()))

    def snapshot(self, layers: list) -> attributes.Snapshot:
        return attributes.Snapshot(layers, _BOOKKEEPING, self.tree.is_static)

    @staticmethod
    def compile(forward: Any, options: Any) -> Any:
        """Inductor over the forward alone (the layer's own hooks stay outside, as the graph's do);
        its default mode: ``reduce-overhead`` records graphs of its own, which a capture cannot hold."""
        return torch.compile(forward, **(options if isinstance(options, dict) else {}))

    @staticmethod
    def grad_mode(enabled: bool) -> ContextManager:
        return torch.enable_grad() if enabled else torch.no_grad()

    @staticmethod
    @contextmanager
    def capture_context() -> Iterator[None]:
        # A capture must not fill the autocast weight cache (its copies would live in the graph pool).
        # Without autocast the cache holds nothing; its switch is left alone, since torch.compile
        # guards on it and would compile the wrapped code once more.
        cached = torch.is_autocast_cache_enabled()
        if _autocast_state():
            torch.set_autocast_cache_enabled(False)
        try:
            yield
        finally:
            torch.set_autocast_cache_enabled(cached)

    @staticmethod
    def layer_context() -> ContextManager:
        return _no_donated_buffers() if _DONATION else nullcontext()

    @staticmethod
    def input_reason(t: torch.Tensor, backend: str) -> str | None:
        if backend == "cuda" and t.device.type != "cuda":
            return f"is on {t.device}, not CUDA"
        if t.layout != torch.strided:
            return "is not a strided tensor"
        return None

    @staticmethod
    def make_static(t: torch.Tensor, requires_grad: bool) -> torch.Tensor:
        with torch.no_grad():  # the input's own layout (channels-last stays so) where it is dense
            static = torch.empty_like(t).copy_(t)
        return static.requires_grad_(requires_grad)

    @staticmethod
    def writer(t: torch.Tensor) -> torch.Tensor:
        return _alias(t)

    @staticmethod
    def twin_leaf(t: torch.Tensor) -> torch.Tensor:
        return _alias(t).requires_grad_(t.requires_grad)

    @staticmethod
    def bind(layer: torch.nn.Module, plain: Any, params: list) -> tuple[list, Any]:
        """Leaves that share the parameters' memory stand in for them inside the graph: its autograd
        graph then holds no AccumulateGrad node of the real parameters (a node made on another stream
        breaks the capture) and keeps working when the optimizer bumps their version counters."""
        if not params:
            return [], lambda args, kwargs: plain(*args, **kwargs)
        index = {id(p): j for j, p in enumerate(params)}
        # Parameters (of the alias, with the alias's version counter): compiled code guards on the type.
        leaves = [torch.nn.Parameter(_alias(p)) for p in params]
        mapping = {
            name: leaves[index[id(p)]]
            for name, p in layer.named_parameters(remove_duplicate=False)
            if id(p) in index
        }

        def call(args: tuple, kwargs: dict) -> Any:
            # torch.func.functional_call's own swap, around the forward alone: the layer's hooks
            # run outside the graph, in its __call__, as they do unwrapped.
            with _reparametrize_module(layer, mapping):
                return plain(*args, **kwargs)

        return leaves, call

    @staticmethod
    def autograd_grad(outputs: list, inputs: list, grad_outputs: list) -> list:
        return list(
            torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True, allow_unused=True)
        )

    @staticmethod
    def backward_into(outputs: list, grad_outputs: list, leaves: list, take: Any, retain: bool) -> None:
        """``backward`` into the leaves, each gradient handed over and dropped as soon as its
        AccumulateGrad ran (the leaves hold no grad before or after)."""

        def hook_for(k: int) -> Any:
            def hook(leaf: torch.Tensor) -> None:
                grad, leaf.grad = leaf.grad, None
                take(k, grad)

            return hook

        handles = [leaf.register_post_accumulate_grad_hook(hook_for(k)) for k, leaf in enumerate(leaves)]
        try:
            torch.autograd.backward(outputs, grad_outputs, retain_graph=retain, inputs=leaves)
        finally:
            for handle in handles:
                handle.remove()

    @staticmethod
    def flat_views(params: list) -> tuple[list, list]:
        groups: dict[tuple, list[int]] = {}
        for j, p in enumerate(params):
            groups.setdefault((p.dtype, p.device), []).append(j)
        flats, views = [], [None] * len(params)
        for (dtype, device), idx in groups.items():
            flat = torch.zeros(sum(params[j].numel() for j in idx), dtype=dtype, device=device)
            offset = 0
            for j in idx:
                n = params[j].numel()
                views[j] = flat[offset : offset + n].view(params[j].shape)
                offset += n
            flats.append(flat)
        return flats, views

    @staticmethod
    def set_grads(params: list, grads: list) -> None:
        for p, g in zip(params, grads):
            p.grad = g

    @staticmethod
    def clear_grads(params: list) -> None:
        for p in params:
            p.grad = None

    @staticmethod
    def held_elsewhere(flats: list, views: list, idx: Sequence[int]) -> bool:
        # Our list and getrefcount's argument hold two references; a third is someone else's alias.
        if max(map(sys.getrefcount, [views[j] for j in idx])) > 3:  # + the temporary list
            return True
        users = sum(torch._C._storage_Use_Count(f.untyped_storage()._cdata) - 2 for f in flats)
        return users > len(views)  # one view per parameter

    @staticmethod
    def foreach_add_(dsts: list, srcs: list) -> None:
        with torch.no_grad():
            torch._foreach_add_(dsts, srcs)

    @staticmethod
    def foreach_zero_(ts: list) -> None:
        with torch.no_grad():
            torch._foreach_zero_(ts)

    @staticmethod
    def foreach_copy_(dsts: list, srcs: list) -> None:
        with torch.no_grad():
            torch._foreach_copy_(dsts, srcs)

    @staticmethod
    def foreach_neg_(ts: list) -> None:
        with torch.no_grad():
            torch._foreach_neg_(ts)

    @staticmethod
    def rng_state(device: torch.device) -> tuple:
        cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        return torch.get_rng_state(), cuda

    @staticmethod
    def set_rng_state(state: tuple, device: torch.device) -> None:
        cpu, cuda = state
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda, device)

    @staticmethod
    def hooks_reason(layer: torch.nn.Module) -> str | None:
        from torch.nn.modules import module as nn_module

        for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"):
            if getattr(nn_module, name, None):
                return f"global module hooks ({name}) would run only at capture"
        for name, m in layer.named_modules():
            if m is layer:  # the layer's own hooks run around its forward, outside the graph
                continue
            for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"):
                if getattr(m, attr, None):
                    return f"module hooks on {name or 'the layer'} ({attr}) would run only at capture"
        for name, p in layer.named_parameters():
            if p._backward_hooks:
                return f"gradient hooks on parameter {name} (register_hook) would not see replayed gradients"
        return None

    engine_reason = staticmethod(torch_reason)

    @staticmethod
    def listened(params: list) -> bool:
        return any(p._post_accumulate_grad_hooks for p in params)

    distributed = staticmethod(
        torch.distributed.is_initialized if torch.distributed.is_available() else lambda: False
    )

    @staticmethod
    def prerequisites_reason(backend: str, device: torch.device) -> str | None:
        return None

    def new_pool(self, backend: str, device: torch.device) -> Any:
        return torch.cuda.graph_pool_handle() if backend == "cuda" else object()

    def new_graph(self, backend: str, device: torch.device, pool: Any, layers: list) -> Any:
        if backend == "cuda":
            return CudaGraph(device, pool)
        return StandInGraph(_copy_detached, _SYNC_TARGETS, _CAPTURE_QUERIES, functools.partial(self.snapshot, layers))

    def capture_stream(self, backend: str, device: torch.device) -> ContextManager:
        if backend != "cuda":
            return nullcontext()
        stream = self._streams.get(device)
        if stream is None:
            stream = self._streams[device] = torch.cuda.Stream(device)
        return _on_stream(stream, device)

    @staticmethod
    def anchor(device: torch.device) -> torch.Tensor:
        return torch.empty(0, device=device, requires_grad=True)

    @staticmethod
    def anchor_node(anchor: torch.Tensor) -> Any:
        # A view of the anchor: its node leads to nothing anyone asks for (the engine does not say
        # whether it runs a leaf's own node while torch.autograd.grad runs).
        with torch.enable_grad():
            return anchor.view_as(anchor)

    @staticmethod
    def partial_backward(node: Any) -> bool:
        # A backward that runs everything (loss.backward()) runs every node; torch.autograd.grad and
        # backward(inputs=...) run what leads to what they ask for, which the anchor's view never does.
        return node is not None and not _will_execute(node.grad_fn)

    @staticmethod
    def chain_layer(layers: list, forward: Any) -> torch.nn.Module:
        return _Chain(layers, forward)

    @staticmethod
    def grad_hooks(t: torch.Tensor) -> bool:
        return bool(t._backward_hooks) or t.retains_grad

    @staticmethod
    def apply(runner: Runner, slot: Slot, anchor: torch.Tensor, tensors: list) -> tuple:
        if _functorch_active() or any(map(_functorch_wrapped, tensors)):
            return _GraphedCall.apply(runner, slot, anchor, *tensors)
        return _APPLY(runner, slot, anchor, *tensors)


class _Chain(ChainLayer, torch.nn.Module):
    """The layers of a fused run as a ``torch.nn.Module``."""

    _list = torch.nn.ModuleList


def _copy_detached(dst: torch.Tensor, src: torch.Tensor) -> None:
    with torch.no_grad():
        dst.detach().copy_(src)


def _alias(t: torch.Tensor) -> torch.Tensor:
    """A tensor on ``t``'s memory with a version counter of its own (``detach`` would share it)."""
    with torch.no_grad():
        alias = torch.empty(0, dtype=t.dtype, device=t.device)
        return alias.set_(t.untyped_storage(), t.storage_offset(), t.size(), t.stride())


@contextmanager
def _on_stream(stream: torch.cuda.Stream, device: torch.device) -> Iterator[None]:
    current = torch.cuda.current_stream(device)
    stream.wait_stream(current)
    try:
        with torch.cuda.stream(stream):
            yield
    finally:
        current.wait_stream(stream)


def _backward(ctx: Any, *grads: torch.Tensor) -> tuple:
    return (None, None, None, *replay_backward(ctx, grads))


_backward_once = once_differentiable(_backward)


class _GraphedCall(torch.autograd.Function):
    """The autograd boundary of one replayed call: forward replays, backward replays the backward graph."""

    @staticmethod
    def forward(ctx: Any, runner: Runner, slot: Slot, anchor: torch.Tensor, *tensors: torch.Tensor) -> tuple:
        return replay_forward(ctx, runner, slot, tensors)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple:
        # The replayed backward is not differentiable. Grad mode is on only under
        # backward(create_graph=True); once_differentiable then makes a second-order use fail
        # clearly, at a cost the usual backward does not pay.
        if torch.is_grad_enabled():
            return _backward_once(ctx, *grads)
        return _backward(ctx, *grads)


# Function.apply's Python layer binds default arguments for setup_context (which this function has
# not) and unwraps tensors left over from finished functorch transforms. Outside functorch
# transforms and without such tensors, the base class's apply is the same call, a few
# microseconds sooner.
_APPLY = super(torch.autograd.Function, _GraphedCall).apply
_functorch_active = torch._C._are_functorch_transforms_active
_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


_tracing_state = torch._C._get_tracing_state
_fx = torch.fx._symbolic_trace
_fx_tracing = getattr(_fx, "is_fx_symbolic_tracing", None) or _fx.is_fx_tracing
_compiling = torch.compiler.is_compiling


class TorchAdapter(graphed.Adapter):
    """The wrapper's PyTorch side."""

    ops = TorchOps()
    layer_base = torch.nn.Module

    @staticmethod
    def bypass() -> bool:
        # torch.compile, torch.export, torch.jit.trace and torch.fx trace the original forward.
        return _compiling() or _tracing_state() is not None or _fx_tracing()

    @staticmethod
    def is_replica(layer: torch.nn.Module) -> bool:
        return bool(layer.__dict__.get("_is_replica"))  # set on torch.nn.DataParallel's copies

    def class_methods(self, cls: type) -> dict[str, Any]:
        if cls.zero_grad is not torch.nn.Module.zero_grad:
            return {}
        return {"zero_grad": _zero_grad}


def _zero_grad(self: torch.nn.Module, set_to_none: bool = True) -> None:
    """``Module.zero_grad`` over the parameter list the runtime keeps (re-read after any
    registration), without walking every submodule on every step: for a whole model that walk
    is a large share of a graphed step's host time."""
    state = graphed.state_of(self)
    if not set_to_none or state is None or not state.serves(self) or state.runner is None:
        torch.nn.Module.zero_grad(self, set_to_none)
        return
    for p in state.runner._read_parameters():
        p.grad = None


ADAPTER = TorchAdapter()
