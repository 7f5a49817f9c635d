"""``CUDAGraphedLayer``: one name for both frameworks; the wrapped layer's type picks the adapter."""

from __future__ import annotations

import abc
import sys
from typing import Any


class CUDAGraphedLayer(abc.ABC):
    """Capture a layer's forward (and backward) into CUDA graphs and replay them; a drop-in for
    ``paddle.device.cuda.cuda_graphed_layer.CUDAGraphedLayer`` that also takes PyTorch modules.

    ``CUDAGraphedLayer(layer, num_warmup_steps=3, *, max_graphs=32, backend="auto", name=None)``
    returns a ``paddle.nn.Layer`` or ``torch.nn.Module`` (``isinstance(x, CUDAGraphedLayer)`` holds
    for both). ``backend``: ``"auto"`` graphs CUDA tensors and runs anything else eagerly,
    ``"cuda"`` insists on CUDA, ``"standin"`` uses the CPU stand-in with graph semantics (tests).
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
