"""Process-wide switches of the runtime: the eager switch is read on every call, debug logging once."""

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


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


# Read once (the replay path checks it on every call); set_debug() changes or re-reads it.
DEBUG = _flag(DEBUG_ENV)


# Every call reads the switch, so the lookup goes to the mapping behind os.environ (which its
# updates keep current) rather than through os.environ's per-key encoding and KeyError.
_ENCODE = getattr(os.environ, "encodekey", lambda name: name)
_SWITCHES = tuple((name, _ENCODE(name)) for name in (DISABLE_ENV, PADDLE_DISABLE_ENV))


def disabled_by_env() -> str | None:
    """The environment variable that forces eager execution everywhere, if one is set."""
    data = getattr(os.environ, "_data", None)
    for name, key in _SWITCHES:
        if (key in data if data is not None else name in os.environ) and _flag(name):
            return name
    return None


def set_debug(enabled: bool | None) -> None:
    """Log every capture, replay and fallback; ``None`` goes back to the environment's setting."""
    global DEBUG
    DEBUG = _flag(DEBUG_ENV) if enabled is None else bool(enabled)


def debug(message: str, *args: object) -> None:
    if DEBUG:
        logger.warning(message, *args)


def backend_from_env(default: str) -> str:
    return os.environ.get(BACKEND_ENV, "").strip().lower() or default
