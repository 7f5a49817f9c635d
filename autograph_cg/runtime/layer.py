"""``CUDAGraphedLayer``: one name for both frameworks; the wrapped layer's type picks the adapter."""

from __future__ import annotations

import abc
import sys
from typing import Any, ClassVar


class CUDAGraphedLayer(abc.ABC):
    """Capture a layer's forward (and backward) into CUDA graphs and replay them; a drop-in for
    ``paddle.device.cuda.cuda_graphed_layer.CUDAGraphedLayer`` that also takes PyTorch modules.

    ``CUDAGraphedLayer(layer, num_warmup_steps=3, *, max_graphs=32, backend="auto", name=None, fuse=True)``
    returns a ``paddle.nn.Layer`` or ``torch.nn.Module`` (``isinstance(x, CUDAGraphedLayer)`` holds
    for both). ``backend``: ``"auto"`` graphs CUDA tensors and runs anything else eagerly,
    ``"cuda"`` insists on CUDA, ``"standin"`` uses the CPU stand-in with graph semantics (tests).
    ``fuse``: wrapped layers that always run back to back are captured and replayed as one graph.
    The framework is imported only here, when a layer of it is wrapped. Semantics: docs/runtime.md.
    """

    def __new__(cls, layer: Any, num_warmup_steps: int = 3, **options: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(layer, torch.nn.Module):
            from .torch_adapter import TorchGraphedLayer

            return TorchGraphedLayer(layer, num_warmup_steps, **options)
        paddle = sys.modules.get("paddle")
        if paddle is not None and isinstance(layer, paddle.nn.Layer):
            from .paddle_adapter import PaddleGraphedLayer

            return PaddleGraphedLayer(layer, num_warmup_steps, **options)
        raise TypeError(
            f"CUDAGraphedLayer wraps a paddle.nn.Layer or a torch.nn.Module, not {type(layer).__name__}"
        )


class GraphedLayerBase:
    """What the PyTorch and Paddle wrappers share; each also derives from its framework's layer."""

    _ops: ClassVar[Any]
    _children: ClassVar[str]  # the framework's dict of sublayers: "_modules" / "_sub_layers"

    def __init__(
        self,
        layer: Any,
        num_warmup_steps: int = 3,
        *,
        max_graphs: int = 32,
        backend: str = "auto",
        name: str | None = None,
        fuse: bool = True,
    ) -> None:
        from .core import Runner

        super().__init__()
        self.layer = layer
        label = name or f"{type(layer).__name__}#{id(layer) & 0xFFFF:04x}"
        self._runner = Runner(self._ops, layer, num_warmup_steps, max_graphs, backend, label, fuse=fuse)
        for inner in self._wrapped_inside(layer):  # nested wrapping: the outer graph covers them
            inner._runner.outer = self._runner

    @classmethod
    def _wrapped_inside(cls, layer: Any) -> list["GraphedLayerBase"]:
        """The top-most wrapped layers below `layer` (not below them)."""
        found, stack = [], list((layer.__dict__.get(cls._children) or {}).values())
        while stack:
            sub = stack.pop()
            if isinstance(sub, GraphedLayerBase):
                found.append(sub)
            elif sub is not None:
                stack.extend((sub.__dict__.get(cls._children) or {}).values())
        return found

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._runner(args, kwargs)

    @property
    def stats(self) -> dict[str, Any]:
        """This layer's counters (``autograph_cg.runtime.report()`` prints all layers')."""
        return self._runner.stats.as_dict()

    def __getattr__(self, name: str) -> Any:
        """Public attributes the wrapper lacks are the wrapped layer's (``block.fc1``, ``block.d``)."""
        try:
            return super().__getattr__(name)  # type: ignore[misc]
        except AttributeError:
            children = self.__dict__.get(self._children) or {}
            if name.startswith("_") or name == "layer" or "layer" not in children:
                raise
            return getattr(children["layer"], name)
