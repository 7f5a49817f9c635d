"""Process-wide switches of the runtime, read from the environment on every call so tests and jobs can flip them."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger("autograph_cg.runtime")

DISABLE_ENV = "AUTOGRAPH_CG_DISABLE"
DEBUG_ENV = "AUTOGRAPH_CG_DEBUG"
BACKEND_ENV = "AUTOGRAPH_CG_BACKEND"
# Paddle's own switch for its CUDAGraphedLayer; honoured so the drop-in keeps that behaviour.
PADDLE_DISABLE_ENV = "PADDLE_DEBUG_CUDAGRAPHEDLAYER_FALLBACK_TO_DEFAULT"

_TRUE = {"1", "true", "yes", "on"}
_debug_override: bool | None = None


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def disabled_by_env() -> str | None:
    """The environment variable that forces eager execution everywhere, if one is set."""
    for name in (DISABLE_ENV, PADDLE_DISABLE_ENV):
        if _flag(name):
            return name
    return None


def set_debug(enabled: bool | None) -> None:
    """Log every capture, replay and fallback (``None`` goes back to the environment's setting)."""
    global _debug_override
    _debug_override = enabled


def debug_enabled() -> bool:
    return _flag(DEBUG_ENV) if _debug_override is None else _debug_override


def debug(message: str, *args: object) -> None:
    if debug_enabled():
        logger.warning(message, *args)


def backend_from_env(default: str) -> str:
    return os.environ.get(BACKEND_ENV, "").strip().lower() or default
