"""Runtime of autograph-cg: ``CUDAGraphedLayer`` captures and replays layers as CUDA graphs.

Importing this package imports neither Paddle nor PyTorch; the framework of a layer is imported when
that layer is wrapped. ``AUTOGRAPH_CG_DISABLE=1`` runs every wrapped layer eagerly;
``AUTOGRAPH_CG_DEBUG=1`` (or ``set_debug(True)``) logs every capture, replay and fallback.
"""

from .layer import CUDAGraphedLayer, stats_of, unwrap
from .settings import set_debug
from .standin import is_capturing
from .stats import layer_stats, report

__all__ = ["CUDAGraphedLayer", "unwrap", "stats_of", "report", "layer_stats", "set_debug", "is_capturing"]
