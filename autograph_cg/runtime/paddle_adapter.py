"""Paddle adapter: ``paddle.device.cuda.graphs.CUDAGraph`` for capture, ``paddle.autograd.PyLayer`` for autograd.

Imported only when a ``paddle.nn.Layer`` is wrapped. On CPU Paddle the stand-in graph replaces the
CUDA graph; the CUDA path follows Paddle's API but has not run here (PyPI's Paddle GPU wheel has no
kernels for the H200), see docs/runtime.md.
"""

from __future__ import annotations

import functools
import math
import sys
from contextlib import nullcontext
from typing import Any, ContextManager, Sequence

import paddle
from paddle.autograd import PyLayer

from . import attributes, graphed, structure
from .chains import ChainLayer
from .core import Runner, Slot, replay_backward, replay_forward
from .ops import DeviceGraph
from .parallel import paddle_reason
from .standin import HostTensors, StandInGraph
from .tree import Tree

_PLACE_TYPES = tuple(
    getattr(paddle.base.core, n) for n in ("Place", "CPUPlace", "CUDAPlace", "CUDAPinnedPlace")
    if hasattr(paddle.base.core, n)
)
with paddle.utils.unique_name.guard():  # the layer made to look takes no name from the model's layers
    _BOOKKEEPING = frozenset(vars(paddle.nn.Layer()))  # a layer's __dict__ entries of Paddle's own (attributes.py)
_SYNC_TARGETS = [
    (paddle.Tensor, name)
    for name in ("item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__", "nonzero")
] + [(paddle, "nonzero")]
# What says a graph is being captured; a stand-in capture answers yes, as a capturing CUDA stream does.
_CAPTURE_QUERIES = [(paddle.base.core, "is_cuda_graph_capturing")] if hasattr(paddle.base.core, "is_cuda_graph_capturing") else []
# Tensors in host memory on a GPU (standin.HostTensors): what `shape` makes, and what is made of them alone.
_HOST = HostTensors(
    lambda t: isinstance(t, paddle.Tensor),
    [(owner, "shape") for owner in map(sys.modules.get, ("paddle", "paddle.tensor", "paddle.tensor.attribute"))
     if owner is not None and callable(getattr(owner, "shape", None))],
    [(paddle.Tensor, name) for name in (
        "__getitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__",
        "__truediv__", "__mod__", "__neg__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "astype",
        "cast",
    )],
)


def _amp_state() -> tuple:
    tracer = paddle.base.framework._dygraph_tracer()
    return (str(getattr(tracer, "_amp_level", "")), str(getattr(tracer, "_amp_dtype", "")))


def _flag(name: str) -> Any:
    try:
        return paddle.get_flags([name])[name]
    except (ValueError, KeyError):
        return None


class _Structure:
    """Reports sublayers, parameters and buffers set, added or removed on a layer (structure.py). Paddle has
    no registration hooks (PyTorch's adapter uses those): its layer class's own methods for that are counted."""

    _layer_types: tuple = ()

    @classmethod
    def install(cls) -> None:
        layer = paddle.nn.Layer
        framework = paddle.base.framework
        cls._layer_types = (layer, *(getattr(framework, n) for n in ("EagerParamBase", "Parameter") if hasattr(framework, n)))
        setattr_, delattr_ = layer.__setattr__, layer.__delattr__

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if isinstance(value, cls._layer_types) or name in (self.__dict__.get("_buffers") or ()):
                structure.bump(self)
            setattr_(self, name, value)

        def __delattr__(self: Any, name: str) -> None:
            structure.bump(self)
            delattr_(self, name)

        layer.__setattr__, layer.__delattr__ = functools.wraps(setattr_)(__setattr__), functools.wraps(delattr_)(__delattr__)
        for method in ("add_sublayer", "add_parameter", "register_buffer"):
            setattr(layer, method, cls._counted(getattr(layer, method)))

    @classmethod
    def _counted(cls, method: Any) -> Any:
        @functools.wraps(method)
        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            structure.bump(self)
            return method(self, *args, **kwargs)

        return counted


_Structure.install()


class _SavedHooks:
    """Whether saved-tensor hooks are set (non-reentrant ``recompute``, offloading). Paddle has one pair at
    a time and no call that tells: its two setters are watched instead."""

    active = False

    @classmethod
    def install(cls) -> None:
        eager = paddle.base.core.eager
        register, reset = eager.register_saved_tensors_hooks, eager.reset_saved_tensors_hooks

        def registered(*args: Any, **kwargs: Any) -> Any:
            out = register(*args, **kwargs)
            cls.active = True
            return out

        def cleared(*args: Any, **kwargs: Any) -> Any:
            cls.active = False
            return reset(*args, **kwargs)

        eager.register_saved_tensors_hooks, eager.reset_saved_tensors_hooks = registered, cleared


_SavedHooks.install()


class PaddleCudaGraph(DeviceGraph):
    """A Paddle CUDA graph in thread-local mode in the shared pool, reset cleanly when capture fails."""

    def __init__(self, place: Any, pool: Any) -> None:
        from paddle.device.cuda.graphs import CUDAGraph

        self._graph = CUDAGraph(place=place, mode="thread_local", pool_id=pool)
        self.outputs: list = []

    def capture(self, fn: Any) -> list:
        self._graph.capture_begin()
        try:
            outputs = list(fn())
        except BaseException:
            for step in (self._graph.capture_end, self._graph.reset):
                try:
                    step()
                except Exception:
                    pass
            raise
        self._graph.capture_end()
        self.outputs = outputs
        return outputs


class PaddleOps:
    """The tensor operations the core needs, in Paddle."""

    name = "paddle"

    tree = Tree(lambda x: isinstance(x, paddle.Tensor), lambda x: isinstance(x, (paddle.dtype, *_PLACE_TYPES)))
    requires_grad = staticmethod(lambda t: not t.stop_gradient)
    data_ptr = staticmethod(paddle.Tensor.data_ptr)
    versions = staticmethod(lambda ts: [t.inplace_version for t in ts])
    device = staticmethod(lambda t: t.place)
    zeros_like = staticmethod(paddle.zeros_like)
    # Paddle's zeros_like and copies are contiguous whatever the source's strides, and its backward kernels
    # read a strided gradient as a contiguous copy: one layout for every buffer.
    layout = staticmethod(lambda t: ())
    zeros_in_layout = staticmethod(lambda t, layout: paddle.zeros_like(t))
    grad_of = staticmethod(lambda p: p.grad)
    recompute_errors = ()  # Paddle's recompute does not compare what it recomputes

    @staticmethod
    def gap(a: paddle.Tensor, b: paddle.Tensor) -> tuple[float, float]:
        """(max |a - b|, max |b|), NaN where either holds a NaN. (The stand-in runs on the CPU: a host
        value costs no wait there.)"""
        a, b = a.detach(), b.detach()
        if tuple(a.shape) != tuple(b.shape):
            return math.inf, 0.0
        if not (a.is_floating_point() or a.is_complex()):
            return (0.0 if bool(paddle.equal_all(a, b)) else math.inf), 0.0
        if not a.numel():
            return 0.0, 0.0
        return float((a - b).abs().max()), float(b.abs().max())

    to_host = staticmethod(list)

    @staticmethod
    def abs_maxima(ts: list) -> list:
        return [float(t.detach().abs().max()) if t.numel() else 0.0 for t in ts]

    itemsize = staticmethod(lambda t: t.element_size())
    randn_like = staticmethod(lambda t: paddle.randn(t.shape, dtype=t.dtype))

    @staticmethod
    def reach(outputs: list, leaves: list) -> list:
        """Paddle does not show its autograd graph: one backward per output, of zeros."""
        result = []
        for out in outputs:
            grads = paddle.grad([out], leaves, [paddle.zeros_like(out)], retain_graph=True, allow_unused=True)
            result.append(frozenset(k for k, g in enumerate(grads) if g is not None))
        return result

    @staticmethod
    def meta(t: paddle.Tensor) -> tuple:
        return (tuple(t.shape), t.dtype, str(t.place), not t.stop_gradient)

    @staticmethod
    def context() -> tuple:
        return (paddle.is_grad_enabled(), _amp_state())

    @staticmethod
    def saved_tensor_hooks() -> bool:
        return _SavedHooks.active
    @staticmethod
    def structure_epoch() -> int:
        return structure.epoch

    watch = staticmethod(structure.watch)

    sublayers = staticmethod(lambda layer: layer.sublayers(include_self=True))
    named_sublayers = staticmethod(lambda layer: list(layer.named_sublayers(include_self=True)))
    # Batch-norm statistics are parameters that take no gradient, changed in place by forward.
    state = staticmethod(lambda layer: [*layer.buffers(), *(p for p in layer.parameters() if p.stop_gradient)])

    def snapshot(self, layers: list) -> attributes.Snapshot:
        return attributes.Snapshot(layers, _BOOKKEEPING, self.tree.is_static)

    @staticmethod
    def compile(forward: Any, options: Any) -> Any:
        """``paddle.jit.to_static`` of the forward (its options as keyword arguments)."""
        return paddle.jit.to_static(forward, **(options if isinstance(options, dict) else {}))

    @staticmethod
    def grad_mode(enabled: bool) -> ContextManager:
        return paddle.enable_grad() if enabled else paddle.no_grad()

    @staticmethod
    def capture_context() -> ContextManager:
        return nullcontext()

    layer_context = capture_context

    @staticmethod
    def input_reason(t: paddle.Tensor, backend: str) -> str | None:
        if backend == "cuda" and not t.place.is_gpu_place():
            return f"is on {t.place}, not CUDA"
        return None

    @staticmethod
    def make_static(t: paddle.Tensor, requires_grad: bool) -> paddle.Tensor:
        with paddle.no_grad():
            static = t.detach().clone()
        static.stop_gradient = not requires_grad
        return static

    @staticmethod
    def writer(t: paddle.Tensor) -> paddle.Tensor:
        return t

    @staticmethod
    def twin_leaf(t: paddle.Tensor) -> paddle.Tensor:
        twin = t.detach()  # the same memory
        twin.stop_gradient = t.stop_gradient
        return twin

    @staticmethod
    def bind(layer: paddle.nn.Layer, plain: Any, params: list) -> tuple[list, Any]:
        return params, lambda args, kwargs: plain(*args, **kwargs)

    @staticmethod
    def copy_(dst: paddle.Tensor, src: paddle.Tensor) -> None:
        with paddle.no_grad():
            dst.detach().copy_(src.detach(), False)

    @staticmethod
    def clone(t: paddle.Tensor) -> paddle.Tensor:
        with paddle.no_grad():
            return t.detach().clone()

    @staticmethod
    def zero_(t: paddle.Tensor) -> None:
        with paddle.no_grad():
            t.detach().zero_()

    @staticmethod
    def autograd_grad(outputs: list, inputs: list, grad_outputs: list) -> list:
        return list(paddle.grad(outputs, inputs, grad_outputs, retain_graph=True, allow_unused=True))

    @staticmethod
    def backward_into(outputs: list, grad_outputs: list, leaves: list, take: Any, retain: bool) -> None:
        # Paddle runs no hook after accumulation: all grads come at once, then are handed over.
        grads = paddle.grad(outputs, leaves, grad_outputs, retain_graph=retain, allow_unused=True)
        for k, grad in enumerate(grads):
            if grad is not None:
                take(k, grad)

    @staticmethod
    def flat_views(params: list) -> tuple[list, list]:
        groups: dict[tuple, list[int]] = {}
        for j, p in enumerate(params):
            groups.setdefault((p.dtype, str(p.place)), []).append(j)
        flats, views = [], [None] * len(params)
        for idx in groups.values():
            first = params[idx[0]]
            sizes = [int(params[j].numel()) for j in idx]
            flat = paddle.zeros([sum(sizes)], dtype=first.dtype).to(first.place)
            offset = 0
            for j, n in zip(idx, sizes):
                views[j] = flat[offset : offset + n].reshape(params[j].shape)
                offset += n
            flats.append(flat)
        return flats, views

    @staticmethod
    def set_grads(params: list, grads: list) -> None:
        # Shares g's memory (the ``grad`` setter would copy). A fresh view, because clearing a grad
        # with set_to_zero=False releases the tensor it was given.
        for p, g in zip(params, grads):
            p._copy_gradient_from(g.view(g.shape))

    @staticmethod
    def clear_grads(params: list) -> None:
        for p in params:
            p.clear_gradient(False)

    @staticmethod
    def is_same(a: paddle.Tensor | None, b: paddle.Tensor) -> bool:
        return a is not None and a.data_ptr() == b.data_ptr() and a.shape == b.shape

    @staticmethod
    def equal(a: paddle.Tensor, b: paddle.Tensor) -> bool:
        return bool(paddle.equal_all(a, b))

    @staticmethod
    def held_elsewhere(flats: list, views: list, idx: Sequence[int]) -> bool:
        return False  # Paddle exposes no storage use count; see docs/runtime.md

    @staticmethod
    def foreach_add_(dsts: list, srcs: list) -> None:
        with paddle.no_grad():
            for d, s in zip(dsts, srcs):
                d.add_(s)

    @staticmethod
    def foreach_zero_(ts: list) -> None:
        with paddle.no_grad():
            for t in ts:
                t.zero_()

    @staticmethod
    def foreach_copy_(dsts: list, srcs: list) -> None:
        for d, s in zip(dsts, srcs):
            PaddleOps.copy_(d, s)

    @staticmethod
    def foreach_neg_(ts: list) -> None:
        with paddle.no_grad():
            for t in ts:
                t.scale_(-1.0)

    @staticmethod
    def rng_state(device: Any) -> tuple:
        gpu = paddle.get_cuda_rng_state() if device.is_gpu_place() else None
        return paddle.get_rng_state("cpu"), gpu

    @staticmethod
    def set_rng_state(state: tuple, device: Any) -> None:
        cpu, gpu = state
        paddle.set_rng_state(cpu, "cpu")
        if gpu is not None:
            paddle.set_cuda_rng_state(gpu)

    @staticmethod
    def hooks_reason(layer: paddle.nn.Layer) -> str | None:
        # The layer's own hooks run around its forward, outside the graph; its sublayers' would not.
        for name, sub in layer.named_sublayers():
            for attr in ("_forward_pre_hooks", "_forward_post_hooks"):
                if getattr(sub, attr, None):
                    return f"layer hooks on {name} ({attr}) would run only at capture"
        return None

    engine_reason = staticmethod(paddle_reason)

    @staticmethod
    def listened(params: list) -> bool:
        return False  # Paddle shows no hooks on gradient accumulation; its reducer needs a process group

    distributed = staticmethod(paddle.distributed.is_initialized)

    @staticmethod
    def prerequisites_reason(backend: str, device: Any) -> str | None:
        if backend != "cuda":
            return None
        strategy = _flag("FLAGS_allocator_strategy")
        if strategy not in (None, "auto_growth"):
            return f"FLAGS_allocator_strategy={strategy}; CUDA graphs need auto_growth"
        if _flag("FLAGS_cudnn_exhaustive_search"):
            return "FLAGS_cudnn_exhaustive_search is on; it picks kernels during capture"
        return None

    @staticmethod
    def new_pool(backend: str, device: Any) -> Any:
        if backend != "cuda":
            return object()
        from paddle.device.cuda.graphs import CoreCUDAGraph

        make = getattr(CoreCUDAGraph, "gen_new_memory_pool_id", None)
        return make() if make else None

    def new_graph(self, backend: str, device: Any, pool: Any, layers: list) -> Any:
        if backend == "cuda":
            return PaddleCudaGraph(device, pool)
        return StandInGraph(
            self.copy_, _SYNC_TARGETS, _CAPTURE_QUERIES, functools.partial(self.snapshot, layers), _HOST
        )

    @staticmethod
    def capture_stream(backend: str, device: Any) -> ContextManager:
        return nullcontext()  # Paddle captures on the place's current stream, never the legacy one

    @staticmethod
    def anchor(device: Any) -> paddle.Tensor:
        anchor = paddle.zeros([1]).to(device)
        anchor.stop_gradient = False
        return anchor

    @staticmethod
    def anchor_node(anchor: paddle.Tensor) -> Any:
        return anchor

    @staticmethod
    def partial_backward(node: Any) -> bool:
        return False  # Paddle does not say what a backward asks for (docs/runtime.md)

    @staticmethod
    def chain_layer(layers: list, forward: Any) -> paddle.nn.Layer:
        return _Chain(layers, forward)

    @staticmethod
    def grad_hooks(t: paddle.Tensor) -> bool:
        return False  # Paddle does not expose a tensor's hooks (docs/runtime.md)

    @staticmethod
    def apply(runner: Runner, slot: Slot, anchor: paddle.Tensor, tensors: list) -> tuple:
        outs = _GraphedCall.apply(runner, slot, anchor, *tensors)
        return tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)


class _Chain(ChainLayer, paddle.nn.Layer):
    """The layers of a fused run as a ``paddle.nn.Layer``."""

    _list = paddle.nn.LayerList


class _GraphedCall(PyLayer):
    """The autograd boundary of one replayed call."""

    @staticmethod
    def forward(ctx: Any, runner: Runner, slot: Slot, anchor: paddle.Tensor, *tensors: paddle.Tensor) -> tuple:
        return replay_forward(ctx, runner, slot, tensors)

    @staticmethod
    def backward(ctx: Any, *grads: paddle.Tensor) -> tuple:
        return (None, *replay_backward(ctx, grads))


class PaddleAdapter(graphed.Adapter):
    """The wrapper's Paddle side."""

    ops = PaddleOps()
    layer_base = paddle.nn.Layer

    @staticmethod
    def bypass() -> bool:
        # paddle.jit.to_static (its AST and its bytecode translators) sees the original forward.
        return _to_static() or _sot() or not _dygraph()


_to_static = paddle.base.dygraph.base.in_to_static_mode
_sot = paddle.base.dygraph.base.in_sot_simulation_mode
_dygraph = paddle.base.framework.in_dygraph_mode
ADAPTER = PaddleAdapter()
