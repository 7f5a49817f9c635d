"""The one check every PyTorch bench starts with: PyTorch importable (and a CUDA device, for the GPU benches)."""

from __future__ import annotations

import sys
from typing import Any


def torch_or_none(tool: str, cuda: bool = False) -> Any | None:
    """The torch module, or None after a one-line reason on stderr (the caller exits 2)."""
    try:
        import torch
    except ImportError:
        print(f"{tool}: PyTorch is not installed", file=sys.stderr)
        return None
    if cuda and not torch.cuda.is_available():
        print(f"{tool}: needs a CUDA device", file=sys.stderr)
        return None
    return torch
