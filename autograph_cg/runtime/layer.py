"""``CUDAGraphedLayer``: one name for both frameworks; the wrapped layer's type picks the adapter."""

from __future__ import annotations

from typing import Any

from . import graphed
from .options import settings_from


class _Graphed(type):
    """``isinstance(x, CUDAGraphedLayer)`` holds for every wrapped layer, of either framework."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return graphed.is_graphed(obj)

    def __subclasscheck__(cls, sub: type) -> bool:
        return getattr(sub, graphed.ORIGINAL, None) is not None


class CUDAGraphedLayer(metaclass=_Graphed):
    """Capture a layer's forward (and backward) into CUDA graphs and replay them; a drop-in for
    ``paddle.device.cuda.cuda_graphed_layer.CUDAGraphedLayer`` that also takes PyTorch modules.

    ``CUDAGraphedLayer(layer, num_warmup_steps=3, *, max_graphs=32, backend="auto", name=None,
    fuse=True, guard=None, verify=True, compile=False)`` returns ``layer`` itself, wrapped in place:
    the same object, an instance of its own class, with the same parameters, buffers, sublayers and
    names; only its forward now runs through the graph runtime. ``backend``: ``"auto"`` graphs CUDA
    tensors and runs anything else eagerly, ``"cuda"`` insists on CUDA, ``"standin"`` uses the CPU
    stand-in with graph semantics (tests). ``fuse``: wrapped layers that always run back to back are
    captured and replayed as one graph. ``guard``: ``{"past_key_values": "is None", ...}``, calls
    that fail a test run eagerly. ``verify``: the first replay of each new graph is compared with an
    eager run of the same step and the layer runs eagerly if they differ. ``compile``: compile the
    layer before capture (``True`` or ``torch.compile``'s keyword arguments). The framework is
    imported only here, when a layer of it is wrapped. Semantics: docs/runtime.md.
    """

    def __new__(cls, layer: Any, num_warmup_steps: int = 3, **options: Any) -> Any:  # type: ignore[misc]
        adapter = graphed.adapter_for_class(type(layer))
        return graphed.wrap(layer, adapter, settings_from(num_warmup_steps, options))


def unwrap(layer: Any) -> Any:
    """Undo ``CUDAGraphedLayer(layer)`` in place (class and ``__dict__`` as before) and return the layer."""
    return graphed.unwrap(layer)


def stats_of(layer: Any) -> dict[str, Any]:
    """One wrapped layer's counters (``report()`` prints every layer's)."""
    state = graphed.state_of(layer)
    if state is None or state.runner is None:
        raise TypeError(f"{type(layer).__name__} is not wrapped by CUDAGraphedLayer")
    return state.runner.stats.as_dict()
